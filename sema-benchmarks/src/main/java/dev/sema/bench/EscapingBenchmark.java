package dev.sema.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * Benchmark 1b, uncontended with an escaping grant: one thread acquires 1 permit, keeps the grant the way
 * real code does (in a request object's field, or as a method's return value), then gives it back. Unlike
 * {@link UncontendedBenchmark}, the JIT cannot remove Sema's {@code Permit} here: this is the cost of a
 * permit that lives in a request, a future or a pool. The JDK semaphore releases by count and keeps
 * nothing (a shared token stands in).
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar EscapingBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class EscapingBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "JDK_NONFAIR", "JDK_FAIR"})
    public Impl impl;

    private BlockingLimiter limiter;
    /** Where a request object would keep its grant. */
    private Object stored;

    /** A fresh semaphore with 1 permit. */
    @Setup(Level.Iteration)
    public void setUp() {
        limiter = impl.blocking(1);
    }

    /** Fails the run if a permit went missing. */
    @TearDown(Level.Iteration)
    public void check() {
        Verify.allBack(impl, limiter.availablePermits(), 1);
    }

    /**
     * The grant is stored in a field, then given back from there.
     *
     * @throws InterruptedException never: the permit is always free
     */
    @Benchmark
    public void stored() throws InterruptedException {
        stored = limiter.take(1);
        limiter.give(stored, 1);
        stored = null;
    }

    /**
     * The grant is returned by a method the JIT may not inline, then given back by the caller.
     *
     * @throws InterruptedException never: the permit is always free
     */
    @Benchmark
    public void returned() throws InterruptedException {
        limiter.give(takeOne(), 1);
    }

    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    private Object takeOne() throws InterruptedException {
        return limiter.take(1);
    }
}
