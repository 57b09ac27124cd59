package dev.sema.bench;

import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.micrometer.SemaphoreMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.CompletableFuture;
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

/**
 * Benchmark 9, what observing a semaphore costs: the same operations with no listener, with a listener that
 * does nothing (the engine's own price of being observed: the clock reads for the wait and hold times, and the
 * calls), with a listener that counts in {@link LongAdder}s (about the work a metrics binding does per event,
 * without a registry), with {@code SemaphoreMetrics} in its default mode (Sema's own histograms, percentiles
 * included), and with per-sample Micrometer timers, plain and with percentile histograms. Read each time
 * against {@code NONE} in the same run; {@link ObservingPartsBenchmark} prices the parts alone.
 *
 * <ul>
 * <li>{@code uncontended}: acquire 1 permit and release it, the permit kept in try-with-resources (one
 *     {@code acquired} and one {@code released} event per operation).</li>
 * <li>{@code queuedGrant}: one async request queues behind the permit this thread holds; releasing it
 *     grants the request, whose permit is kept for the next round (a queued grant: its wait is timed).</li>
 * <li>{@code shared}: two threads acquire and release on one semaphore with permits to spare, so the meters
 *     are updated from two threads at once.</li>
 * </ul>
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar ListenerCostBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class ListenerCostBenchmark {

    /** How the semaphore is observed. */
    @Param({"NONE", "EMPTY", "COUNTING", "METRICS", "TIMERS", "TIMER_HISTOGRAMS"})
    public Observer observer;

    private Semaphore semaphore;
    private AutoCloseable binding;
    private Permit held;

    /** A fresh semaphore with 1 permit, observed as asked. */
    @Setup(Level.Iteration)
    public void setUp() {
        semaphore = Semaphore.builder().permits(1).build();
        binding = observer.observe(semaphore);
    }

    /** Gives back what a queued-grant run still holds, unbinds, and checks that every permit is back. */
    @TearDown(Level.Iteration)
    public void tearDown() throws Exception {
        if (held != null) {
            held.close();
            held = null;
        }
        binding.close();
        if (semaphore.availablePermits() != 1) {
            throw new IllegalStateException("permits missing: " + semaphore);
        }
    }

    /**
     * An uncontended acquire and release.
     *
     * @throws InterruptedException never: the permit is always free
     */
    @Benchmark
    public void uncontended() throws InterruptedException {
        try (Permit p = semaphore.acquire()) {
            // nothing: the cost of the grant and the release themselves
        }
    }

    /**
     * A request that queues, then is granted by the release of the permit this thread holds.
     *
     * @return the grant, kept for the next round
     * @throws InterruptedException never: the first round's permit is free
     */
    @Benchmark
    public Permit queuedGrant() throws InterruptedException {
        Permit mine = held != null ? held : semaphore.acquire();
        CompletableFuture<Permit> next = semaphore.acquireAsync(1); // queues: the permit is held
        mine.close(); // grants it, completing the future on this thread
        held = next.getNow(null);
        return held;
    }

    /**
     * Two threads acquire and release on one semaphore of 64 permits, so neither ever waits: both threads' events
     * go to the same listener and meters (what sharing them costs, beside the shared state word).
     *
     * @param shared the semaphore both threads use
     * @throws InterruptedException never: a permit is always free
     */
    @Benchmark
    @Threads(2)
    public void shared(Shared shared) throws InterruptedException {
        try (Permit p = shared.semaphore.acquire()) {
            // nothing
        }
    }

    /** The semaphore of {@link #shared}, observed as asked (the same {@code observer} parameter). */
    @State(Scope.Benchmark)
    public static class Shared {
        /** How the semaphore is observed. */
        @Param({"NONE", "EMPTY", "COUNTING", "METRICS", "TIMERS", "TIMER_HISTOGRAMS"})
        public Observer observer;

        Semaphore semaphore;
        private AutoCloseable binding;

        /** A fresh semaphore with 64 permits, observed as asked. */
        @Setup(Level.Iteration)
        public void setUp() {
            semaphore = Semaphore.builder().permits(64).build();
            binding = observer.observe(semaphore);
        }

        /** Unbinds and checks that every permit is back. */
        @TearDown(Level.Iteration)
        public void tearDown() throws Exception {
            binding.close();
            if (semaphore.availablePermits() != 64) {
                throw new IllegalStateException("permits missing: " + semaphore);
            }
        }
    }

    /** The ways to observe the semaphore. */
    public enum Observer {
        /** No listener: the engine reads no clock and calls nothing. */
        NONE {
            @Override
            AutoCloseable observe(Semaphore s) {
                return () -> {
                };
            }
        },
        /** A listener that does nothing: what the engine itself pays while anybody listens. */
        EMPTY {
            @Override
            AutoCloseable observe(Semaphore s) {
                SemaphoreListener l = new SemaphoreListener() {
                };
                s.addListener(l);
                return () -> s.removeListener(l);
            }
        },
        /** A listener that adds to counters: the events' own cost plus a minimal amount of work. */
        COUNTING {
            @Override
            AutoCloseable observe(Semaphore s) {
                CountingListener l = new CountingListener();
                s.addListener(l);
                return () -> s.removeListener(l);
            }
        },
        /** {@code SemaphoreMetrics} in its default mode (Sema's histograms), bound to a {@code SimpleMeterRegistry}. */
        METRICS {
            @Override
            AutoCloseable observe(Semaphore s) {
                SemaphoreMetrics metrics = new SemaphoreMetrics(s);
                metrics.bindTo(new SimpleMeterRegistry());
                return metrics;
            }
        },
        /** {@code SemaphoreMetrics} with per-sample Micrometer timers, bound to a {@code SimpleMeterRegistry}. */
        TIMERS {
            @Override
            AutoCloseable observe(Semaphore s) {
                SemaphoreMetrics metrics = SemaphoreMetrics.builder(s).perSampleTimers(true).build();
                metrics.bindTo(new SimpleMeterRegistry());
                return metrics;
            }
        },
        /** Per-sample timers bound to a registry that keeps percentile histograms of every timer. */
        TIMER_HISTOGRAMS {
            @Override
            AutoCloseable observe(Semaphore s) {
                SemaphoreMetrics metrics = SemaphoreMetrics.builder(s).perSampleTimers(true).build();
                metrics.bindTo(ObservingPartsBenchmark.histogramRegistry());
                return metrics;
            }
        };

        abstract AutoCloseable observe(Semaphore s);
    }

    static final class CountingListener implements SemaphoreListener {
        final LongAdder acquired = new LongAdder();
        final LongAdder waited = new LongAdder();
        final LongAdder released = new LongAdder();
        final LongAdder held = new LongAdder();
        final LongAdder rejected = new LongAdder();

        @Override
        public void acquired(Semaphore semaphore, long permits, long waitNanos) {
            acquired.increment();
            waited.add(waitNanos);
        }

        @Override
        public void rejected(Semaphore semaphore, long permits, Rejection why, long waitNanos) {
            rejected.increment();
        }

        @Override
        public void released(Semaphore semaphore, long permits, long heldNanos) {
            released.increment();
            held.add(heldNanos);
        }
    }
}
