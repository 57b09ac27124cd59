package dev.sema.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.internal.StateSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The gauges of a semaphore whose counts are remote (a RedisSemaphore reads them with one round trip per
 * {@link StateSource#state()}): one scrape of all of them reads the counts once, and a failed reading
 * shows as NaN instead of failing the scrape.
 */
class RemoteGaugesTest {

    /** A semaphore whose state() stands for one round trip, counted. */
    static final class Remote implements Semaphore, StateSource {
        final AtomicInteger reads = new AtomicInteger();
        final AtomicReference<RuntimeException> failure = new AtomicReference<>();

        @Override
        public State state() {
            reads.incrementAndGet();
            RuntimeException e = failure.get();
            if (e != null) {
                throw e;
            }
            return new State(4, 8, 1, 2, false, true);
        }

        // Every count of the Semaphore interface would be a round trip of its own: never called here.
        @Override
        public long permits() {
            throw new AssertionError("a round trip per gauge");
        }

        @Override
        public long maxPermits() {
            throw new AssertionError("a round trip per gauge");
        }

        @Override
        public long availablePermits() {
            throw new AssertionError("a round trip per gauge");
        }

        @Override
        public int queueLength() {
            throw new AssertionError("a round trip per gauge");
        }

        @Override
        public boolean isClosed() {
            return false;
        }

        @Override
        public String name() {
            return "remote";
        }

        @Override
        public Fairness fairness() {
            return Fairness.FIFO;
        }

        @Override
        public void addListener(SemaphoreListener listener) {
        }

        @Override
        public boolean removeListener(SemaphoreListener listener) {
            return true;
        }

        @Override
        public Permit acquire(long permits) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Permit acquire(long permits, Duration timeout) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Optional<Permit> tryAcquire(long permits) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long permits) {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void awaitIdle() {
            throw new UnsupportedOperationException();
        }

        @Override
        public CompletableFuture<Void> awaitIdleAsync() {
            throw new UnsupportedOperationException();
        }

        @Override
        public void setPermits(long limit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long addPermits(long n) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long reducePermits(long n) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
        }

        @Override
        public void close(Throwable cause) {
        }

        @Override
        public Permit acquireUninterruptibly(long permits) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Permit drainPermits() {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void oneScrapeReadsTheRemoteCountsOnce() {
        Remote s = new Remote();
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new SemaphoreMetrics(s).bindTo(prometheus);
        String scrape = prometheus.scrape();
        assertThat(s.reads.get()).isEqualTo(1);
        assertThat(scrape).contains("sema_permits_limit{name=\"remote\"} 4").contains("sema_permits_used{name=\"remote\"} 3")
                .contains("sema_queue_waiters{name=\"remote\"} 2");
        prometheus.scrape(); // within REMOTE_REFRESH: the same reading
        assertThat(s.reads.get()).isEqualTo(1);
    }

    @Test
    void aFailedReadingShowsAsNaN() {
        Remote s = new Remote();
        s.failure.set(new IllegalStateException("Redis is down"));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SemaphoreMetrics(s).bindTo(registry);
        assertThat(registry.get("sema.permits.limit").gauge().value()).isNaN();
        assertThat(registry.get("sema.queue.waiters").gauge().value()).isNaN();
        assertThat(s.reads.get()).isEqualTo(1);
    }
}
