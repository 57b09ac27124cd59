package dev.sema.spring.example;

import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.spring.SemaphoreRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.stereotype.Component;

/**
 * How many requests each endpoint runs at once, counted where its permit is surely held (inside the controller
 * behind {@code sema.web}, inside the {@code @WithPermits} method), beside the highest limit its semaphore had
 * meanwhile. Served by {@link InFlightEndpoint} at {@code /actuator/inflight}; the demo's spring part checks that
 * the peak never exceeded that limit.
 *
 * <p>Why the highest limit and not the limit now: an adaptive limit moves while requests run, and lowering a limit
 * revokes no permit already held, so only the highest limit in force since the counters were reset bounds the
 * peak. Reset them while nothing runs: a limit change that races with the reset may be missed.
 */
@Component
public class InFlight {
    private final SemaphoreRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();

    InFlight(SemaphoreRegistry registry) {
        this.registry = registry;
    }

    /**
     * The counter of an endpoint whose requests hold a permit of a semaphore while they run.
     *
     * @param endpoint the endpoint's name in {@code /actuator/inflight}
     * @param semaphore the semaphore's name in the registry
     * @return the counter, made once per endpoint
     */
    Counter counter(String endpoint, String semaphore) {
        return counters.computeIfAbsent(endpoint, e -> new Counter(registry.get(semaphore)));
    }

    /** @return every endpoint's counts, by endpoint name */
    Map<String, Snapshot> snapshot() {
        Map<String, Snapshot> all = new TreeMap<>();
        counters.forEach((name, counter) -> all.put(name, counter.snapshot()));
        return all;
    }

    /** Forgets the peaks and the request counts, and takes each semaphore's limit now as the highest. */
    void reset() {
        counters.values().forEach(Counter::reset);
    }

    /**
     * One endpoint's counts.
     *
     * @param semaphore the semaphore whose permits its requests hold
     * @param now requests running now
     * @param peak the most that ran at once since the reset
     * @param highestLimit the semaphore's highest limit since the reset
     * @param requests requests that ran since the reset
     */
    public record Snapshot(String semaphore, int now, int peak, long highestLimit, long requests) {
    }

    /** The running requests of one endpoint. */
    static final class Counter implements SemaphoreListener {
        private final Semaphore semaphore;
        private final AtomicInteger now = new AtomicInteger();
        private final AtomicInteger peak = new AtomicInteger();
        private final AtomicLong highestLimit = new AtomicLong();
        private final AtomicLong requests = new AtomicLong();
        private final Entry leave = now::decrementAndGet;

        Counter(Semaphore semaphore) {
            this.semaphore = semaphore;
            semaphore.addListener(this);
            highestLimit.set(semaphore.permits());
        }

        /** Counts a request in; closing the entry counts it out. */
        Entry enter() {
            int running = now.incrementAndGet();
            peak.accumulateAndGet(running, Math::max);
            requests.incrementAndGet();
            return leave;
        }

        @Override
        public void limitChanged(Semaphore s, long oldLimit, long newLimit) {
            highestLimit.accumulateAndGet(newLimit, Math::max);
        }

        Snapshot snapshot() {
            return new Snapshot(semaphore.name(), now.get(), peak.get(), highestLimit.get(), requests.get());
        }

        void reset() {
            peak.set(now.get());
            requests.set(0);
            highestLimit.set(semaphore.permits());
        }
    }

    /** A request counted in; {@link #close()} counts it out. */
    @FunctionalInterface
    interface Entry extends AutoCloseable {
        @Override
        void close();
    }
}
