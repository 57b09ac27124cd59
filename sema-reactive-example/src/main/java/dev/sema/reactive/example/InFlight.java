package dev.sema.reactive.example;

import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Mono;

/**
 * Requests of one endpoint running now, the most at once, and how many ran: counted where the permit is held (inside
 * the filter, inside the {@code @WithPermits} method, inside the intercepted gRPC handler), so that the demo can check
 * that no endpoint ever ran more requests at once than its semaphore's limit.
 */
final class InFlight {
    private final AtomicLong now = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();

    void enter() {
        requests.incrementAndGet();
        peak.accumulateAndGet(now.incrementAndGet(), Math::max);
    }

    void exit() {
        now.decrementAndGet();
    }

    /**
     * {@code work}, counted from its subscription to its end, whatever ends it. The count drops before the end
     * reaches the subscriber (not in {@code doFinally}, which runs after): the permit is given back only once it has
     * reached the one holding it, so the next request never overlaps this one in the count.
     */
    <T> Mono<T> around(Mono<T> work) {
        return Mono.defer(() -> {
            enter();
            AtomicBoolean ended = new AtomicBoolean();
            Runnable end = () -> {
                if (ended.compareAndSet(false, true)) {
                    exit();
                }
            };
            return work.doOnTerminate(end).doOnCancel(end);
        });
    }

    /** The counts, and the peak set back to what runs now: each phase of the demo reads its own. */
    Map<String, Long> readAndReset() {
        long runningNow = now.get();
        return Map.of("peak", peak.getAndSet(runningNow), "now", runningNow, "requests", requests.getAndSet(0));
    }
}
