package dev.sema.bench;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * Benchmark 6, weighted: 4 platform threads share a semaphore of {@code limit} (16) permits; each
 * operation acquires 1 to 8 permits (a fixed pseudo-random sequence per thread, the same for every
 * implementation), burns {@code inside} CPU tokens, releases them and burns {@code outside} tokens. The
 * score is the throughput of all threads together.
 *
 * <p>The weighted FIFO implementations are compared: Sema FIFO (blocking acquire), asyncutil's
 * FairAsyncSemaphore and the hand-written lock + deque semaphore (both async only, so their threads block
 * by joining the future, as their users do), and the JDK semaphore (fair: FIFO too; non-fair: for
 * reference).
 *
 * <p>The semaphore is made anew each iteration and checked to have all its permits back.
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar WeightedBenchmark}
 * (or {@code bin/benchmarks quick WeightedBenchmark}).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
@Threads(4)
public class WeightedBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "ASYNCUTIL_FAIR", "HAND_WRITTEN", "JDK_NONFAIR", "JDK_FAIR"})
    public Impl impl;

    /** The semaphore's permits. */
    @Param("16")
    public int limit;

    /** CPU tokens burnt while holding the permits. */
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

    /** Each thread's sequence of weights, 1 to 8, seeded by the thread's index. */
    @State(Scope.Thread)
    public static class Weights {
        private static final AtomicInteger NEXT_SEED = new AtomicInteger();
        private final int[] weights = new int[4096];
        private int index;

        /** Fills the sequence; thread i always gets the same one. */
        @Setup(Level.Trial)
        public void setUp() {
            SplittableRandom random = new SplittableRandom(0x5e3a_0000L + NEXT_SEED.getAndIncrement());
            for (int i = 0; i < weights.length; i++) {
                weights[i] = 1 + random.nextInt(8);
            }
        }

        int next() {
            int w = weights[index];
            index = (index + 1) & (weights.length - 1);
            return w;
        }
    }

    /**
     * One weighted acquire, section and release.
     *
     * @param weights this thread's weight sequence
     * @throws InterruptedException never
     */
    @Benchmark
    public void weighted(Weights weights) throws InterruptedException {
        limiter.guarded(weights.next(), section);
        Blackhole.consumeCPU(outside);
    }
}
