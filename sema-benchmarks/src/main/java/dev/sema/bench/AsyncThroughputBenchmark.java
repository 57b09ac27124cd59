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
 * Benchmark 4, async throughput: {@code inFlight} (1,000) async requests of 1 permit are outstanding on
 * a semaphore of {@code limit} (16) permits at all times. One operation is one grant: take a granted
 * request, release it (which grants the head of the queue) and issue the next request, which queues at
 * the tail. The score is grants per microsecond.
 *
 * <p>The driver is a single-threaded event loop: each request's continuation ({@code thenAccept}) only
 * appends its grant to a {@link GrantQueue}, and the benchmark method takes one out. So the continuation
 * never releases inline (which would recurse once per queued waiter in an implementation that completes
 * futures on the releasing thread), and every implementation runs the same continuation. The JDK
 * semaphore has no async acquire and is not part of this benchmark.
 *
 * <p>Each iteration starts with a fresh semaphore and {@code inFlight} new requests; at its end the
 * teardown stops issuing, drains every request and checks that each was granted once and every permit
 * is back.
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar AsyncThroughputBenchmark}
 * (or {@code bin/benchmarks quick AsyncThroughputBenchmark}).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
@Threads(1)
public class AsyncThroughputBenchmark {

    /** The implementation under test. */
    @Param({"SEMA_FIFO", "SEMA_BARGING", "ASYNCUTIL_FAIR", "HAND_WRITTEN"})
    public Impl impl;

    /** Requests outstanding (granted or queued) at any time. */
    @Param("1000")
    public int inFlight;

    /** The semaphore's permits. */
    @Param("16")
    public int limit;

    private AsyncLimiter limiter;
    private GrantQueue ready;
    private long issued;

    /** A fresh semaphore with {@code inFlight} requests outstanding. */
    @Setup(Level.Iteration)
    public void setUp() {
        limiter = impl.async(limit);
        ready = new GrantQueue();
        issued = 0;
        for (int i = 0; i < inFlight; i++) {
            issue();
        }
        Verify.state(ready.size() == limit, impl.label() + ": " + ready.size() + " of " + inFlight
                + " first requests granted at once, expected " + limit);
    }

    /** Drains every outstanding request and fails the run if any grant or permit went missing. */
    @TearDown(Level.Iteration)
    public void drain() {
        while (!ready.isEmpty()) {
            limiter.release(ready.poll(), 1);
        }
        Verify.state(ready.accepted() == issued, impl.label() + ": " + ready.accepted() + " of " + issued
                + " requests granted");
        Verify.state(limiter.queueLength() == 0, impl.label() + ": requests still queued");
        Verify.allBack(impl, limiter.availablePermits(), limit);
    }

    /**
     * One grant: releases the oldest granted request and issues the next request.
     *
     * @return the number of requests issued so far
     */
    @Benchmark
    public long grant() {
        limiter.release(ready.poll(), 1);
        issue();
        return issued;
    }

    private void issue() {
        issued++;
        limiter.acquire(1).thenAccept(ready);
    }
}
