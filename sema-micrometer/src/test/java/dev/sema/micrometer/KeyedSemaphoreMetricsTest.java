package dev.sema.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.KeyedSemaphore;
import dev.sema.LeakDetection;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.TooManyKeysException;
import dev.sema.micrometer.SemaphoreMetricsTest.Times;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The meters of a keyed family (API.md §11b): every key's events under the family's name, never the key, and the
 * live keys; in the default mode here, with per-sample timers in {@link KeyedPerSampleTimersTest}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class KeyedSemaphoreMetricsTest {
    /** Keys no scrape may show: distinctive enough not to occur by chance. */
    private static final String[] KEYS = {"tenant-alpha", "tenant-bravo", "tenant-charlie"};

    final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    boolean perSampleTimers() {
        return false;
    }

    private SemaphoreMetrics metrics(KeyedSemaphore<?> family, Tags tags) {
        return SemaphoreMetrics.builder(family).tags(tags).perSampleTimers(perSampleTimers()).build();
    }

    private SemaphoreMetrics metrics(KeyedSemaphore<?> family) {
        return metrics(family, Tags.empty());
    }

    private static KeyedSemaphore<String> exports(int maxKeys) {
        return KeyedSemaphore.<String>builder().name("exports").permits(1).maxKeys(maxKeys).build();
    }

    private static Times acquire(MeterRegistry r, String outcome) {
        return SemaphoreMetricsTest.times(r.get("sema.acquire").tag("name", "exports").tag("partition", "")
                .tag("outcome", outcome));
    }

    @Test
    void everyKeysRequestsAreTimedUnderTheFamilysNameAndNoPartition() throws Exception {
        KeyedSemaphore<String> family = exports(10);
        metrics(family).bindTo(registry);
        for (String outcome : new String[] {"granted", "unavailable", "timeout", "cancelled", "interrupted", "closed"}) {
            assertThat(acquire(registry, outcome).count()).as(outcome + " registered at 0").isZero();
        }
        Permit a = family.get(KEYS[0]).acquire();
        Permit b = family.get(KEYS[1]).acquire();
        assertThat(family.get(KEYS[0]).tryAcquire()).isEmpty();
        assertThatThrownBy(() -> family.get(KEYS[1]).acquire(1, Duration.ofMillis(20)))
                .isInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> cancelled = family.get(KEYS[0]).acquireAsync(1);
        cancelled.cancel(false);
        Thread.sleep(5);
        a.close();
        b.close();
        family.close();
        assertThatThrownBy(() -> family.get(KEYS[2]).tryAcquire()).isInstanceOf(dev.sema.SemaphoreClosedException.class);

        assertThat(acquire(registry, "granted").count()).isEqualTo(2);
        assertThat(acquire(registry, "unavailable").count()).isEqualTo(1);
        assertThat(acquire(registry, "timeout").count()).isEqualTo(1);
        assertThat(acquire(registry, "timeout").totalMillis()).isGreaterThanOrEqualTo(20);
        assertThat(acquire(registry, "cancelled").count()).isEqualTo(1);
        assertThat(acquire(registry, "closed").count()).isEqualTo(1);
        Times hold = SemaphoreMetricsTest.times(registry.get("sema.permit.hold").tag("name", "exports")
                .tag("partition", ""));
        assertThat(hold.count()).isEqualTo(2);
        assertThat(hold.totalMillis()).isGreaterThanOrEqualTo(5);
        assertThat(registry.find("sema.acquire").meters()).as("one set of meters, not one per key").hasSize(6);
        assertNoKeyIn(registry.getMeters());
    }

    @Test
    void keysGaugesShowTheLiveKeysAndTheirBound() throws Exception {
        KeyedSemaphore<String> family = exports(2);
        metrics(family).bindTo(registry);
        assertThat(registry.get("sema.keys").tag("name", "exports").gauge().value()).isZero();
        assertThat(registry.get("sema.keys.max").tag("name", "exports").gauge().value()).isEqualTo(2);
        Permit a = family.get(KEYS[0]).acquire();
        CompletableFuture<Permit> queued = family.get(KEYS[0]).acquireAsync(1);
        Permit b = family.get(KEYS[1]).acquire();
        assertThat(registry.get("sema.keys").gauge().value()).isEqualTo(2);
        assertThatThrownBy(() -> family.get(KEYS[2]).acquire()).isInstanceOf(TooManyKeysException.class);
        assertThat(acquire(registry, "unavailable").count()).as("a key refused beyond maxKeys").isEqualTo(1);
        a.close();
        queued.get(20, TimeUnit.SECONDS).close();
        b.close();
        assertThat(registry.get("sema.keys").gauge().value()).as("idle keys are gone").isZero();
    }

    @Test
    void aFamilyHasNoPermitOrQueueGauges() {
        metrics(exports(10)).bindTo(registry);
        for (String name : new String[] {"sema.permits.limit", "sema.permits.max", "sema.permits.available",
                "sema.permits.used", "sema.queue.waiters", "sema.partition.used"}) {
            assertThat(registry.find(name).meters()).as(name).isEmpty();
        }
        for (Meter m : registry.getMeters()) {
            String name = m.getId().getName();
            boolean event = name.startsWith("sema.acquire") || name.startsWith("sema.permit.hold")
                    || name.equals("sema.leaks");
            assertThat(m.getId().getTag("partition")).as(m.getId().toString()).isEqualTo(event ? "" : null);
            assertThat(m.getId().getTag("name")).isEqualTo("exports");
        }
    }

    @Test
    void leaksOfAnyKeyAreCountedForTheFamily() throws Exception {
        KeyedSemaphore<String> family = KeyedSemaphore.<String>builder().name("exports").permits(3)
                .leakDetection(LeakDetection.SAMPLED).build();
        metrics(family).bindTo(registry);
        leak(family.get(KEYS[0]));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (registry.get("sema.leaks").tag("name", "exports").counter().count() < 2) {
            assertThat(System.nanoTime() - deadline).as("leak not found in time").isNegative();
            System.gc();
            Thread.sleep(10);
        }
        assertThat(registry.get("sema.leaks").tag("partition", "").counter().count()).isEqualTo(2);
        assertNoKeyIn(registry.getMeters());
    }

    private static void leak(Semaphore s) throws InterruptedException {
        s.acquire(2);
    }

    @Test
    void tagsBindingTwiceAndClose() throws Exception {
        KeyedSemaphore<String> family = exports(10);
        SimpleMeterRegistry second = new SimpleMeterRegistry();
        SemaphoreMetrics metrics = metrics(family, Tags.of("service", "orders"));
        metrics.bindTo(registry);
        metrics.bindTo(registry);
        metrics.bindTo(second);
        family.get(KEYS[0]).acquire().close();
        for (MeterRegistry r : new MeterRegistry[] {registry, second}) {
            assertThat(SemaphoreMetricsTest.times(r.get("sema.acquire").tag("service", "orders").tag("outcome",
                    "granted")).count()).as("counted once").isEqualTo(1);
            assertThat(r.get("sema.keys").tag("service", "orders").gauge().value()).isZero();
        }
        metrics.close();
        metrics.close();
        assertThat(registry.getMeters()).isEmpty();
        assertThat(second.getMeters()).isEmpty();
        family.get(KEYS[0]).acquire().close(); // no listener left: nothing recorded, nothing thrown
        assertThat(family.removeListener(new SemaphoreListener() {
        })).isFalse();
    }

    @Test
    void aBuilderRefusesANullFamily() {
        assertThatThrownBy(() -> SemaphoreMetrics.builder((KeyedSemaphore<?>) null))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("family");
        assertThatThrownBy(() -> new SemaphoreMetrics((KeyedSemaphore<?>) null))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("family");
    }

    /**
     * A family beside plain and partitioned semaphores in one Prometheus registry, bound in either order: the same
     * tag keys for every event meter, so none is dropped; and no key anywhere in the scrape.
     */
    @Test
    void aPrometheusScrapeShowsAFamilyBesideSemaphoresAndNoKey() throws Exception {
        for (boolean familyFirst : new boolean[] {true, false}) {
            PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            Semaphore db = Semaphore.builder().name("db").permits(2).build();
            Semaphore api = Semaphore.builder().name("api").permits(4).partition("batch", 0.5).build();
            KeyedSemaphore<String> family = KeyedSemaphore.<String>builder().name("exports").permits(1).maxKeys(2)
                    .parent(api.partition("batch")).build();
            List<SemaphoreMetrics> bound = new ArrayList<>();
            if (familyFirst) {
                bound.add(metrics(family));
            }
            for (Semaphore s : List.of(db, api)) {
                bound.add(SemaphoreMetrics.builder(s).perSampleTimers(perSampleTimers()).build());
            }
            if (!familyFirst) {
                bound.add(metrics(family));
            }
            bound.forEach(m -> m.bindTo(prometheus));
            db.acquire().close();
            family.get(KEYS[0]).acquire().close();
            Permit held = family.get(KEYS[1]).acquire();
            Permit other = family.get(KEYS[0]).acquire();
            assertThatThrownBy(() -> family.get(KEYS[2]).acquire()).isInstanceOf(TooManyKeysException.class);
            String scrape = prometheus.scrape();
            held.close();
            other.close();
            String as = familyFirst ? "family first" : "family last";
            assertThat(scrape).as(as)
                    .contains("sema_acquire_seconds_count{name=\"exports\",outcome=\"granted\",partition=\"\"} 3")
                    .contains("sema_acquire_seconds_count{name=\"exports\",outcome=\"unavailable\",partition=\"\"} 1")
                    .contains("sema_permit_hold_seconds_count{name=\"exports\",partition=\"\"} 1")
                    .contains("sema_leaks_total{name=\"exports\",partition=\"\"} 0")
                    .contains("sema_keys{name=\"exports\"} 2")
                    .contains("sema_keys_max{name=\"exports\"} 2")
                    .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"granted\",partition=\"\"} 1")
                    .contains("sema_acquire_seconds_count{name=\"api\",outcome=\"granted\",partition=\"batch\"} 3")
                    .contains("sema_permits_used{name=\"api\"} 2")
                    .doesNotContain("sema_permits_limit{name=\"exports\"");
            for (String key : KEYS) {
                assertThat(scrape).as(as).doesNotContain(key);
            }
            bound.forEach(SemaphoreMetrics::close);
        }
    }

    private static void assertNoKeyIn(List<Meter> meters) {
        for (Meter m : meters) {
            for (Tag t : m.getId().getTags()) {
                for (String key : KEYS) {
                    assertThat(t.getValue()).as(m.getId().toString()).doesNotContain(key);
                }
            }
        }
    }
}
