package dev.sema.bench;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
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
 * Benchmark 3, virtual threads: one operation is a whole batch of {@code threads} virtual threads (10,000)
 * that each acquire 1 permit of a semaphore of {@code limit} permits (64), work, release, and end; the
 * score is the time from starting the first thread to joining the last.
 *
 * <p>The work inside burns {@code tokens} CPU tokens and calls {@link Thread#yield()}, which on a virtual
 * thread gives up its carrier the way a blocking call would: without it a virtual thread is never
 * descheduled while it holds the permit, so with only a few carriers the limit would never be reached
 * and nothing would wait.
 *
 * <p>The semaphore is made anew each iteration; every batch is checked to have run every section and to
 * have given every permit back.
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar VirtualThreadBatchBenchmark}
 * (or {@code bin/benchmarks quick VirtualThreadBatchBenchmark}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@State(Scope.Thread)
@Threads(1)
public class VirtualThreadBatchBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "JDK_NONFAIR", "JDK_FAIR"})
    public Impl impl;

    /** Virtual threads per batch. */
    @Param("10000")
    public int threads;

    /** The semaphore's permits. */
    @Param("64")
    public int limit;

    /** CPU tokens burnt while holding the permit, before and after the yield. */
    @Param("50")
    public long tokens;

    private BlockingLimiter limiter;
    private Runnable task;
    private final LongAdder sections = new LongAdder();
    private Thread[] batch;

    /** A fresh semaphore of {@code limit} permits. */
    @Setup(Level.Iteration)
    public void setUp() {
        limiter = impl.blocking(limit);
        batch = new Thread[threads];
        long work = tokens;
        Section section = () -> {
            Blackhole.consumeCPU(work);
            Thread.yield();
            Blackhole.consumeCPU(work);
            sections.increment();
        };
        task = () -> {
            try {
                limiter.guarded(1, section);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    /** Fails the run if a permit went missing. */
    @TearDown(Level.Iteration)
    public void check() {
        Verify.allBack(impl, limiter.availablePermits(), limit);
    }

    /**
     * Starts the batch and joins every thread of it.
     *
     * @return the number of sections run in this batch
     * @throws InterruptedException if the benchmark thread is interrupted
     */
    @Benchmark
    public long batch() throws InterruptedException {
        long before = sections.sum();
        Thread[] ts = batch;
        for (int i = 0; i < ts.length; i++) {
            ts[i] = Thread.ofVirtual().start(task);
        }
        for (Thread t : ts) {
            t.join();
        }
        long ran = sections.sum() - before;
        Verify.state(ran == ts.length, impl.label() + ": " + ran + " of " + ts.length + " sections ran");
        return ran;
    }
}
