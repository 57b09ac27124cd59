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
 * Benchmark 5, release cost against queue length: a semaphore of 1 permit, that permit held, and
 * {@code queued} (10, 10,000 or 1,000,000) async requests of 1 permit waiting behind it. One operation is
 * one hand-off: release the held permit, which grants the head waiter (its continuation records the
 * grant), then queue one new request at the tail so that the queue stays exactly {@code queued} long.
 * The score is the time per hand-off; a cost that does not grow with the queue is the goal.
 *
 * <p>Continuations only record their grant (see {@link GrantQueue}), for every implementation alike. The
 * queue is built in the iteration's setup (outside the measurement); the teardown releases every waiter
 * and checks that each was granted and the permit is back. Give the JVM enough heap for a million
 * waiters (the default on a machine with a few GiB is plenty).
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar ReleaseCostBenchmark}
 * (or {@code bin/benchmarks quick ReleaseCostBenchmark}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class ReleaseCostBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "ASYNCUTIL_FAIR", "HAND_WRITTEN"})
    public Impl impl;

    /** Waiters queued behind the held permit. */
    @Param({"10", "10000", "1000000"})
    public int queued;

    private AsyncLimiter limiter;
    private GrantQueue granted;
    private Object held;
    private long issued;

    /** A fresh semaphore: its one permit held, {@code queued} requests waiting. */
    @Setup(Level.Iteration)
    public void setUp() {
        limiter = impl.async(1);
        granted = new GrantQueue();
        issued = 0;
        issue();
        held = granted.poll();
        for (int i = 0; i < queued; i++) {
            issue();
        }
        Verify.state(granted.isEmpty() && limiter.queueLength() == queued,
                impl.label() + ": expected " + queued + " queued waiters, found " + limiter.queueLength());
    }

    /** Releases every waiter and fails the run if any grant or permit went missing. */
    @TearDown(Level.Iteration)
    public void drain() {
        for (long i = granted.accepted(); i < issued; i++) {
            limiter.release(held, 1);
            held = granted.poll();
        }
        limiter.release(held, 1);
        held = null;
        Verify.state(granted.accepted() == issued, impl.label() + ": " + granted.accepted() + " of " + issued
                + " requests granted");
        Verify.state(limiter.queueLength() == 0, impl.label() + ": requests still queued");
        Verify.allBack(impl, limiter.availablePermits(), 1);
    }

    /**
     * One hand-off: release the held permit to the head waiter, and queue a new waiter at the tail.
     *
     * @return the number of requests issued so far
     */
    @Benchmark
    public long handOff() {
        limiter.release(held, 1);
        held = granted.poll();
        issue();
        return issued;
    }

    private void issue() {
        issued++;
        limiter.acquire(1).thenAccept(granted);
    }
}
