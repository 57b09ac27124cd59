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
import org.openjdk.jmh.infra.Blackhole;

/**
 * Benchmark 2, contended: 2 or 4 platform threads share one semaphore of {@code limit} permits; each
 * operation acquires 1 permit, burns {@code inside} CPU tokens ({@link Blackhole#consumeCPU}) while
 * holding it, releases it, and burns {@code outside} tokens. The score is the throughput of all threads
 * together (operations per microsecond).
 *
 * <p>The semaphore is made anew each iteration and checked to have all its permits back.
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar ContendedBenchmark}
 * (or {@code bin/benchmarks quick ContendedBenchmark}).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class ContendedBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "JDK_NONFAIR", "JDK_FAIR"})
    public Impl impl;

    /** The semaphore's permits. */
    @Param({"1", "2"})
    public int limit;

    /** CPU tokens burnt while holding the permit: a tiny critical section. */
    @Param("20")
    public long inside;

    /** CPU tokens burnt between release and the next acquire. */
    @Param("20")
    public long outside;

    private BlockingLimiter limiter;
    private Section section;

    /** A fresh semaphore of {@code limit} permits. */
    @Setup(Level.Iteration)
    public void setUp() {
        limiter = impl.blocking(limit);
        long tokens = inside;
        section = () -> Blackhole.consumeCPU(tokens);
    }

    /** Fails the run if a permit went missing. */
    @TearDown(Level.Iteration)
    public void check() {
        Verify.allBack(impl, limiter.availablePermits(), limit);
    }

    /**
     * Two threads compete.
     *
     * @throws InterruptedException never
     */
    @Benchmark
    @Threads(2)
    public void threads2() throws InterruptedException {
        operation();
    }

    /**
     * Four threads compete.
     *
     * @throws InterruptedException never
     */
    @Benchmark
    @Threads(4)
    public void threads4() throws InterruptedException {
        operation();
    }

    private void operation() throws InterruptedException {
        limiter.guarded(1, section);
        Blackhole.consumeCPU(outside);
    }
}
