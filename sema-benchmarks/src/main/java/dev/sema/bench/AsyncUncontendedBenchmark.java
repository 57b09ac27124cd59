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
 * Benchmark 4b, an async acquire that is granted at once: one thread calls the async acquire of 1 permit
 * on a semaphore with a free permit, takes the grant from the (already completed) stage, and releases it.
 * The stage and the grant escape to the caller, as they do in async code. The JDK semaphore has no async
 * acquire and is not part of this benchmark.
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar AsyncUncontendedBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class AsyncUncontendedBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "ASYNCUTIL_FAIR", "HAND_WRITTEN"})
    public Impl impl;

    private AsyncLimiter limiter;
    /** Where async code would keep the stage it was given. */
    private Object stage;

    /** A fresh semaphore with 1 permit. */
    @Setup(Level.Iteration)
    public void setUp() {
        limiter = impl.async(1);
    }

    /** Fails the run if a permit went missing. */
    @TearDown(Level.Iteration)
    public void check() {
        Verify.allBack(impl, limiter.availablePermits(), 1);
    }

    /** Acquire (granted at once), read the grant from the stage, release it. */
    @Benchmark
    public void acquireAsyncRelease() {
        java.util.concurrent.CompletableFuture<?> f = limiter.acquire(1).toCompletableFuture();
        stage = f;
        limiter.release(f.getNow(null), 1);
        stage = null;
    }
}
