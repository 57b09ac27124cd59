package dev.sema.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Partitioned;
import dev.sema.internal.StateSource;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The gauges of a semaphore whose counts are remote (a RedisSemaphore reads them with one round trip per
 * {@link StateSource#state()}, and its partitions' with one per {@link Partitioned#partitionStates()}): one
 * scrape of all of them reads each once, and a failed reading shows as NaN instead of failing the scrape.
 */
class RemoteGaugesTest {

    /** A semaphore whose state() stands for one round trip, counted. */
    static class Remote implements Semaphore, StateSource {
        final AtomicInteger reads = new AtomicInteger();
        final AtomicReference<RuntimeException> failure = new AtomicReference<>();
        final AtomicReference<SemaphoreListener> listener = new AtomicReference<>();
        private final String name;

        Remote() {
            this("remote");
        }

        Remote(String name) {
            this.name = name;
        }

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
            return name;
        }

        @Override
        public Fairness fairness() {
            return Fairness.FIFO;
        }

        @Override
        public void addListener(SemaphoreListener listener) {
            this.listener.set(listener);
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

    /** A remote semaphore with partitions a and b, whose partitions' counts stand for one more round trip. */
    static final class PartitionedRemote extends Remote implements Partitioned {
        final AtomicInteger partitionReads = new AtomicInteger();
        final AtomicReference<RuntimeException> partitionFailure = new AtomicReference<>();
        final Map<String, Semaphore> views = Map.of("a", new Remote("remote/a"), "b", new Remote("remote/b"));

        @Override
        public List<String> partitionNames() {
            return List.of("a", "b");
        }

        @Override
        public Semaphore partition(String name) {
            return views.get(name);
        }

        @Override
        public List<PartitionState> partitionStates() {
            partitionReads.incrementAndGet();
            RuntimeException e = partitionFailure.get();
            if (e != null) {
                throw e;
            }
            return List.of(new PartitionState("a", 0.5, 1, 2, 3), new PartitionState("b", 0.25, 0, 1, 1));
        }
    }

    @Test
    void oneScrapeReadsThePartitionsCountsOnce() {
        PartitionedRemote s = new PartitionedRemote();
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new SemaphoreMetrics(s).bindTo(prometheus);
        String scrape = prometheus.scrape();
        assertThat(s.reads.get()).isEqualTo(1);
        assertThat(s.partitionReads.get()).isEqualTo(1);
        assertThat(scrape).contains("sema_partition_used{name=\"remote\",partition=\"a\"} 1")
                .contains("sema_partition_guarantee{name=\"remote\",partition=\"a\"} 2")
                .contains("sema_partition_waiters{name=\"remote\",partition=\"a\"} 3")
                .contains("sema_partition_used{name=\"remote\",partition=\"b\"} 0")
                .contains("sema_partition_guarantee{name=\"remote\",partition=\"b\"} 1")
                .contains("sema_partition_waiters{name=\"remote\",partition=\"b\"} 1");
        prometheus.scrape(); // within REMOTE_REFRESH: the same readings
        assertThat(s.reads.get()).isEqualTo(1);
        assertThat(s.partitionReads.get()).isEqualTo(1);
    }

    @Test
    void aFailedPartitionReadingShowsAsNaN() {
        PartitionedRemote s = new PartitionedRemote();
        s.partitionFailure.set(new IllegalStateException("Redis is down"));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SemaphoreMetrics(s).bindTo(registry);
        assertThat(registry.get("sema.partition.used").tag("partition", "a").gauge().value()).isNaN();
        assertThat(registry.get("sema.partition.waiters").tag("partition", "b").gauge().value()).isNaN();
        assertThat(registry.get("sema.permits.limit").gauge().value()).as("the counts' own reading").isEqualTo(4);
        assertThat(s.partitionReads.get()).isEqualTo(1);
    }

    @Test
    void eventsGoToThePartitionOfTheViewTheyCarryFoundByNameWhenNotTheSameObject() {
        PartitionedRemote s = new PartitionedRemote();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SemaphoreMetrics(s).bindTo(registry);
        SemaphoreListener l = s.listener.get();
        l.acquired(s.partition("a"), 1, 1_000_000);
        l.acquired(new Remote("remote/b"), 1, 2_000_000); // a handle of its own for the same partition
        l.acquired(new Remote("remote/b"), 1, 2_000_000);
        l.acquired(s, 1, 3_000_000);
        l.released(s.partition("a"), 1, 4_000_000);
        l.leaked(new Remote("remote/a"), 2);
        assertThat(granted(registry, "a")).isEqualTo(1);
        assertThat(granted(registry, "b")).isEqualTo(2);
        assertThat(granted(registry, "")).isEqualTo(1);
        assertThat(registry.get("sema.permit.hold").tag("partition", "a").functionTimer().totalTime(
                TimeUnit.MILLISECONDS)).isEqualTo(4);
        assertThat(registry.get("sema.leaks").tag("partition", "a").counter().count()).isEqualTo(2);
    }

    private static double granted(SimpleMeterRegistry registry, String partition) {
        FunctionTimer t = registry.get("sema.acquire").tag("partition", partition).tag("outcome", "granted")
                .functionTimer();
        return t.count();
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
