package dev.sema.bench.stacks;

import java.time.Duration;
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
import reactor.core.publisher.Mono;

/**
 * Benchmark 16a, a limit around a Mono whose permit is free: one thread subscribes to
 * {@code Mono.just(1).transformDeferred(limiter)} and takes its value, on a limit of 16 that is never reached:
 * <ul>
 *   <li>{@code none}: {@code transformDeferred} with an operator that adds nothing, the baseline;
 *   <li>{@code sema}: {@code SemaReactor.withPermits(semaphore, 1)} (sema-reactor), on a Sema {@code Semaphore};
 *   <li>{@code resilience4j}: Resilience4j's {@code BulkheadOperator.of(bulkhead)} on a semaphore bulkhead,
 *       {@code maxWaitDuration} zero (its default).
 * </ul>
 * The subscriber is the same small {@code CoreSubscriber} for all three. The target: {@code sema} no slower than
 * {@code resilience4j}. Each iteration checks that every permit came back.
 *
 * <p>Run: {@code bin/benchmarks stacks} (section 16), or
 * {@code java -jar sema-benchmarks/target/benchmarks.jar ReactorGrantedBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class ReactorGrantedBenchmark {
    static final int LIMIT = 16;

    @Param({"none", "sema", "resilience4j"})
    public String limiter;

    private ReactorLimiters.Limiter contender;
    private Mono<Integer> mono;

    /** The contender and the Mono, made once. */
    @Setup(Level.Trial)
    public void setUp() {
        contender = ReactorLimiters.of(limiter, LIMIT, Duration.ZERO);
        mono = Mono.just(1).transformDeferred(contender.operator());
    }

    /** Fails the run if a permit did not come back. */
    @TearDown(Level.Iteration)
    public void check() {
        if (contender.available(LIMIT) != LIMIT) {
            throw new IllegalStateException(limiter + ": permits missing, " + contender.available(LIMIT) + " of "
                    + LIMIT + " free");
        }
    }

    /**
     * One subscription, granted at once, to its end.
     *
     * @return the value
     */
    @Benchmark
    public int granted() {
        Sink sink = new Sink(null, null);
        mono.subscribe(sink);
        if (sink.error != null) {
            throw new IllegalStateException(limiter + " failed", sink.error);
        }
        return sink.value;
    }
}
