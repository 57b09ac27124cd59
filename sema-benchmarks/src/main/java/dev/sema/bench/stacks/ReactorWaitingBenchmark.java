package dev.sema.bench.stacks;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Benchmark 16b, waiting for a permit: 1,000 subscriptions at once on a limit of 16, each request's work done on a
 * "downstream" of 2 threads (a {@code publishOn} hop, as the reply of a non-blocking client arrives on its I/O
 * threads) and its permit held until it completes; the score is the time per request until all 1,000 ended:
 * <ul>
 *   <li>{@code none}: no limit (all 1,000 at once), the baseline;
 *   <li>{@code sema}: {@code SemaReactor.withPermits(semaphore, 1)}: a request that finds no permit queues on the
 *       semaphore without a thread, and the release that frees a permit subscribes it, on the releasing thread;
 *   <li>{@code resilience4j}: Resilience4j's {@code BulkheadOperator} on a semaphore bulkhead configured to wait
 *       ({@code maxWaitDuration} 10 s): its bulkhead waits for the permit in {@code Semaphore.tryAcquire(timeout)}
 *       on the thread that subscribes.
 * </ul>
 * and subscribed from
 * <ul>
 *   <li>{@code caller}: the benchmark's own thread, one subscription after the other;
 *   <li>{@code loop}: 2 non-blocking threads ({@code Schedulers.newParallel}, Reactor's equivalent of an event
 *       loop), the 1,000 subscriptions handed to them as tasks.
 * </ul>
 * Two counters show whether waiting holds a thread: {@code subscribeNanos}, the time spent inside
 * {@code subscribe()} on the subscribing threads, summed over the requests (divide by {@code requests}), and
 * {@code failed}, the requests that ended in an error. Each iteration checks that every permit came back.
 *
 * <p>Run: {@code bin/benchmarks stacks} (section 16), or
 * {@code java -jar sema-benchmarks/target/benchmarks.jar ReactorWaitingBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class ReactorWaitingBenchmark {
    static final int LIMIT = 16;
    static final int SUBSCRIBERS = 1_000;

    @Param({"none", "sema", "resilience4j"})
    public String limiter;

    @Param({"caller", "loop"})
    public String subscribeFrom;

    private ReactorLimiters.Limiter contender;
    private Scheduler downstream;
    private Scheduler loop;
    private Mono<Integer> request;

    /** The counters JMH reports beside the score (summed over an iteration's invocations). */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counters {
        /** Time spent inside {@code subscribe()} by the subscribing threads, all requests together. */
        public long subscribeNanos;
        /** Requests made. */
        public long requests;
        /** Requests that ended in an error (none is expected). */
        public long failed;

        /** Zeroed for each iteration. */
        @Setup(Level.Iteration)
        public void reset() {
            subscribeNanos = 0;
            requests = 0;
            failed = 0;
        }
    }

    /** The contender, the two schedulers and the request Mono. */
    @Setup(Level.Trial)
    public void setUp() {
        contender = ReactorLimiters.of(limiter, LIMIT, Duration.ofSeconds(10));
        downstream = Schedulers.newParallel("downstream", 2);
        loop = Schedulers.newParallel("loop", 2);
        request = Mono.just(1).publishOn(downstream).map(x -> x + 1).transformDeferred(contender.operator());
    }

    /** Fails the run if a permit did not come back. */
    @TearDown(Level.Iteration)
    public void check() {
        if (contender.available(LIMIT) != LIMIT) {
            throw new IllegalStateException(limiter + ": permits missing, " + contender.available(LIMIT) + " of "
                    + LIMIT + " free");
        }
    }

    /** Stops the schedulers. */
    @TearDown(Level.Trial)
    public void tearDown() {
        downstream.dispose();
        loop.dispose();
    }

    /**
     * 1,000 subscriptions, then waits until every one ended.
     *
     * @param counters the counters
     * @throws InterruptedException if interrupted while waiting
     */
    @Benchmark
    @OperationsPerInvocation(SUBSCRIBERS)
    public void waiting(Counters counters) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(SUBSCRIBERS);
        AtomicInteger failed = new AtomicInteger();
        LongAdder inSubscribe = new LongAdder();
        Runnable subscribe = () -> {
            long t0 = System.nanoTime();
            request.subscribe(new Sink(done, failed));
            inSubscribe.add(System.nanoTime() - t0);
        };
        boolean caller = subscribeFrom.equals("caller");
        for (int i = 0; i < SUBSCRIBERS; i++) {
            if (caller) {
                subscribe.run();
            } else {
                loop.schedule(subscribe);
            }
        }
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException(limiter + ": " + done.getCount() + " requests did not end in 60 s");
        }
        counters.subscribeNanos += inSubscribe.sum();
        counters.requests += SUBSCRIBERS;
        counters.failed += failed.get();
    }
}
