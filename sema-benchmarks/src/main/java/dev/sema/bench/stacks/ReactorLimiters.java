package dev.sema.bench.stacks;

import dev.sema.Semaphore;
import dev.sema.reactor.SemaReactor;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.reactor.bulkhead.operator.BulkheadOperator;
import java.time.Duration;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/** The contenders of benchmarks 16a and 16b, each a {@code transformDeferred} operator on a limit. */
final class ReactorLimiters {
    private ReactorLimiters() {
    }

    /** What {@code transformDeferred} is given, and what the iteration's check reads. */
    record Limiter(Function<? super Mono<Integer>, ? extends Publisher<Integer>> operator, Semaphore sema, Bulkhead bulkhead) {

        /**
         * The permits free now.
         *
         * @param limit what the baseline reports
         * @return the free permits
         */
        long available(int limit) {
            if (sema != null) {
                return sema.availablePermits();
            }
            if (bulkhead != null) {
                return bulkhead.getMetrics().getAvailableConcurrentCalls();
            }
            return limit;
        }
    }

    /**
     * One contender.
     *
     * @param name {@code none} (an operator that adds nothing: the same {@code transformDeferred}, no limit),
     *        {@code sema} ({@code SemaReactor.withPermits(semaphore, 1)}) or {@code resilience4j}
     *        ({@code BulkheadOperator.of(bulkhead)} on a semaphore bulkhead)
     * @param limit the limit
     * @param maxWait Resilience4j's {@code maxWaitDuration}: zero refuses at once, more waits (on the subscribing
     *        thread) that long for a permit
     * @return the contender
     */
    static Limiter of(String name, int limit, Duration maxWait) {
        return switch (name) {
            case "none" -> new Limiter(Function.<Mono<Integer>>identity(), null, null);
            case "sema" -> {
                Semaphore s = Semaphore.create(limit);
                yield new Limiter(SemaReactor.<Integer>withPermits(s, 1), s, null);
            }
            case "resilience4j" -> {
                Bulkhead b = Bulkhead.of("bench", BulkheadConfig.custom().maxConcurrentCalls(limit)
                        .maxWaitDuration(maxWait).build());
                yield new Limiter(BulkheadOperator.<Integer>of(b), null, b);
            }
            default -> throw new IllegalArgumentException("limiter " + name);
        };
    }
}
