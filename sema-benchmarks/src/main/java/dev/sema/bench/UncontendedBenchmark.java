package dev.sema.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
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
 * Benchmark 1, uncontended: one thread acquires 1 permit and releases it, with nothing in between; Sema
 * through try-with-resources, the JDK through try/finally. Read the time per operation and, with
 * {@code -prof gc}, {@code gc.alloc.rate.norm} (bytes allocated per operation: the {@code Permit} object
 * should be scalar-replaced, so Sema's target is 0 B/op).
 *
 * <p>Nothing is dead code: each acquire and release is a CAS on the semaphore's state, which the JIT
 * must keep. The semaphore is made anew each iteration and checked to have all its permits back.
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar UncontendedBenchmark -prof gc}
 * (or {@code bin/benchmarks quick UncontendedBenchmark}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class UncontendedBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "JDK_NONFAIR", "JDK_FAIR"})
    public Impl impl;

    private BlockingLimiter limiter;

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
     * One acquire of 1 permit and its release.
     *
     * @throws InterruptedException never: the permit is always free
     */
    @Benchmark
    public void acquireRelease() throws InterruptedException {
        limiter.guarded(1, Section.EMPTY);
    }
}
