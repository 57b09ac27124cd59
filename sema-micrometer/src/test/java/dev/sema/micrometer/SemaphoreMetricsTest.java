package dev.sema.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.LeakDetection;
import dev.sema.Permit;
import dev.sema.Semaphore;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.search.RequiredSearch;
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
 * Every meter of API.md §7, with real semaphore traffic, in the default mode (Sema's histograms);
 * {@link PerSampleTimersTest} runs the same tests with per-sample Micrometer timers.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SemaphoreMetricsTest {
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    /** The binding under test, with the given tags. */
    SemaphoreMetrics metrics(Semaphore s, Tags tags) {
        return SemaphoreMetrics.builder(s).tags(tags).build();
    }

    private SemaphoreMetrics metrics(Semaphore s) {
        return metrics(s, Tags.empty());
    }

    /** The count and total time of a timer, of either kind. */
    record Times(long count, double totalMillis) {
        static Times of(Meter meter) {
            if (meter instanceof Timer t) {
                return new Times(t.count(), t.totalTime(TimeUnit.MILLISECONDS));
            }
            FunctionTimer f = (FunctionTimer) meter;
            return new Times((long) f.count(), f.totalTime(TimeUnit.MILLISECONDS));
        }
    }

    static Times times(RequiredSearch search) {
        return Times.of(search.meter());
    }

    private static double gauge(MeterRegistry r, String name) {
        return r.get(name).tag("name", "db").gauge().value();
    }

    private static Times acquire(MeterRegistry r, String outcome) {
        return times(r.get("sema.acquire").tag("name", "db").tag("outcome", outcome));
    }

    @Test
    void gaugesShowTheCountsNow() throws Exception {
        Semaphore s = Semaphore.builder().name("db").permits(3).maxPermits(5).build();
        metrics(s).bindTo(registry);
        Permit two = s.acquire(2);
        CompletableFuture<Permit> queued = s.acquireAsync(3);
        assertThat(gauge(registry, "sema.permits.limit")).isEqualTo(3);
        assertThat(gauge(registry, "sema.permits.max")).isEqualTo(5);
        assertThat(gauge(registry, "sema.permits.available")).isEqualTo(1);
        assertThat(gauge(registry, "sema.permits.used")).isEqualTo(2);
        assertThat(gauge(registry, "sema.queue.waiters")).isEqualTo(1);
        s.reducePermits(2);
        assertThat(gauge(registry, "sema.permits.available")).isEqualTo(-1);
        s.setPermits(5);
        Permit three = queued.get(20, TimeUnit.SECONDS);
        assertThat(gauge(registry, "sema.permits.used")).isEqualTo(5);
        assertThat(gauge(registry, "sema.queue.waiters")).isZero();
        two.close();
        three.close();
        assertThat(gauge(registry, "sema.permits.used")).isZero();
    }

    @Test
    void theAcquireTimerCountsEveryOutcomeWithItsWait() throws Exception {
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        metrics(s).bindTo(registry);
        for (String outcome : new String[] {"granted", "unavailable", "timeout", "cancelled", "interrupted", "closed"}) {
            assertThat(acquire(registry, outcome).count()).as(outcome + " registered at 0").isZero();
        }
        Permit p = s.acquire();
        assertThat(s.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> s.acquire(1, Duration.ofMillis(20))).isInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> cancelled = s.acquireAsync(1);
        cancelled.cancel(false);
        Thread.currentThread().interrupt();
        assertThatThrownBy(s::acquire).isInstanceOf(InterruptedException.class);
        CompletableFuture<Permit> queued = s.acquireAsync(1);
        Thread.sleep(5); // a measurable wait; the assertion does not depend on how long
        p.close();
        queued.get(20, TimeUnit.SECONDS).close();
        s.close();
        assertThatThrownBy(s::tryAcquire).isInstanceOf(dev.sema.SemaphoreClosedException.class);
        assertThat(acquire(registry, "granted").count()).isEqualTo(2);
        assertThat(acquire(registry, "granted").totalMillis()).isGreaterThanOrEqualTo(5);
        assertThat(acquire(registry, "unavailable").count()).isEqualTo(1);
        assertThat(acquire(registry, "timeout").count()).isEqualTo(1);
        assertThat(acquire(registry, "timeout").totalMillis()).isGreaterThanOrEqualTo(20);
        assertThat(acquire(registry, "cancelled").count()).isEqualTo(1);
        assertThat(acquire(registry, "interrupted").count()).isEqualTo(1);
        assertThat(acquire(registry, "closed").count()).isEqualTo(1);
    }

    @Test
    void bindingTwiceToOneRegistryCountsEveryEventOnce() throws Exception {
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        SemaphoreMetrics metrics = metrics(s);
        metrics.bindTo(registry);
        metrics.bindTo(registry);
        s.acquire().close();
        assertThat(times(registry.get("sema.acquire").tag("outcome", "granted")).count()).isEqualTo(1);
        assertThat(times(registry.get("sema.permit.hold")).count()).isEqualTo(1);
        metrics.close();
    }

    @Test
    void theHoldTimerSamplesEveryGiveBack() throws Exception {
        Semaphore s = Semaphore.builder().name("db").permits(3).build();
        Permit before = s.acquire(); // granted before the binding: its hold is unknown, not sampled
        metrics(s).bindTo(registry);
        Permit p = s.acquire(2);
        Thread.sleep(5);
        p.release(1);
        p.close();
        p.close(); // nothing more to give back
        before.close();
        Times hold = times(registry.get("sema.permit.hold").tag("name", "db"));
        assertThat(hold.count()).isEqualTo(2);
        assertThat(hold.totalMillis()).isGreaterThanOrEqualTo(5);
    }

    @Test
    void theLeakCounterCountsPermitsReturnedByLeakDetection() throws Exception {
        Semaphore s = Semaphore.builder().name("db").permits(3).leakDetection(LeakDetection.SAMPLED).build();
        metrics(s).bindTo(registry);
        leak(s);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (registry.get("sema.leaks").tag("name", "db").counter().count() < 2) {
            assertThat(System.nanoTime() - deadline).as("leak not found in time").isNegative();
            System.gc();
            Thread.sleep(10);
        }
        assertThat(registry.get("sema.leaks").counter().count()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(3);
    }

    private static void leak(Semaphore s) throws InterruptedException {
        s.acquire(2);
    }

    @Test
    void tagsCloseAndSeveralRegistries() throws Exception {
        Semaphore s = Semaphore.builder().name("db").permits(2).build();
        SimpleMeterRegistry second = new SimpleMeterRegistry();
        SemaphoreMetrics metrics = metrics(s, Tags.of("service", "orders"));
        metrics.bindTo(registry);
        metrics.bindTo(second);
        s.acquire().close();
        for (MeterRegistry r : new MeterRegistry[] {registry, second}) {
            assertThat(times(r.get("sema.acquire").tag("name", "db").tag("service", "orders").tag("outcome", "granted"))
                    .count()).isEqualTo(1);
            assertThat(r.get("sema.permits.limit").tag("service", "orders").gauge().value()).isEqualTo(2);
        }
        metrics.close();
        metrics.close(); // idempotent
        assertThat(registry.find("sema.acquire").meters()).isEmpty();
        assertThat(registry.find("sema.permits.limit").meters()).isEmpty();
        assertThat(second.getMeters()).isEmpty();
        s.acquire().close(); // no listener left: nothing recorded, nothing thrown
        assertThat(s.removeListener(new dev.sema.SemaphoreListener() {
        })).isFalse();
    }

    @Test
    void aPrometheusScrapeShowsEveryMeter() throws Exception {
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Semaphore s = Semaphore.builder().name("db").permits(2).build();
        metrics(s).bindTo(prometheus);
        s.acquire().close();
        assertThat(s.tryAcquire(3 - 1)).isPresent().get().satisfies(Permit::close);
        String scrape = prometheus.scrape();
        assertThat(scrape)
                .contains("sema_permits_limit{name=\"db\"} 2")
                .contains("sema_permits_max{name=\"db\"} 2")
                .contains("sema_permits_available{name=\"db\"} 2")
                .contains("sema_permits_used{name=\"db\"} 0")
                .contains("sema_queue_waiters{name=\"db\"} 0")
                .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"granted\",partition=\"\"} 2")
                .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"timeout\",partition=\"\"} 0")
                .contains("sema_permit_hold_seconds_count{name=\"db\",partition=\"\"} 2")
                .contains("sema_leaks_total{name=\"db\",partition=\"\"} 0")
                .doesNotContain("sema_partition_");
    }

    @Test
    void theDefaultModePublishesTheMedianAnd99thPercentile() throws Exception {
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        metrics(s).bindTo(prometheus);
        for (int i = 0; i < 98; i++) {
            s.acquire().close(); // held for well under 20 ms
        }
        Permit slow = s.acquire();
        Thread.sleep(30);
        slow.close();
        Permit slower = s.acquire();
        Thread.sleep(60);
        slower.close();
        double p50 = prometheus.get("sema.permit.hold.percentile").tag("name", "db").tag("phi", "0.5").gauge().value();
        double p99 = prometheus.get("sema.permit.hold.percentile").tag("name", "db").tag("phi", "0.99").gauge().value();
        assertThat(p50).as("p50 of 100 holds, 98 of them short").isLessThan(0.020);
        assertThat(p99).as("p99: the 99th of 100 holds is the 30 ms one").isBetween(0.030 * 0.9, 0.060);
        assertThat(prometheus.get("sema.acquire.percentile").tag("outcome", "granted").tag("phi", "0.99").gauge()
                .value()).as("no grant waited").isZero();
        String scrape = prometheus.scrape();
        assertThat(scrape).contains("sema_permit_hold_seconds_count{name=\"db\",partition=\"\"} 100");
        assertThat(sample(scrape, "sema_permit_hold_percentile_seconds{name=\"db\",partition=\"\",phi=\"0.99\"}"))
                .as("in seconds").isEqualTo(p99);
        assertThat(sample(scrape, "sema_acquire_percentile_seconds{name=\"db\",outcome=\"timeout\",partition=\"\",phi=\"0.5\"}"))
                .as("no timeout yet").isZero();
        SimpleMeterRegistry millis = new SimpleMeterRegistry(io.micrometer.core.instrument.simple.SimpleConfig.DEFAULT,
                io.micrometer.core.instrument.Clock.SYSTEM) {
            @Override
            protected TimeUnit getBaseTimeUnit() {
                return TimeUnit.MILLISECONDS;
            }
        };
        metrics(s).bindTo(millis);
        Permit held = s.acquire();
        Thread.sleep(30);
        held.close();
        assertThat(millis.get("sema.permit.hold.percentile").tag("phi", "0.99").gauge().value())
                .as("in the registry's time unit, as its timers").isBetween(30 * 0.9, 1000.0);
    }

    private static double sample(String scrape, String series) {
        return scrape.lines().filter(l -> l.startsWith(series + " "))
                .mapToDouble(l -> Double.parseDouble(l.substring(series.length() + 1).trim())).findFirst()
                .orElseThrow(() -> new AssertionError("no " + series + " in the scrape"));
    }

    // ---------------------------------------------------------------- partitions

    /** Limit 10: checkout 0.5 (guarantee 5), batch 0.2 (2). */
    private static Semaphore api() {
        return Semaphore.builder().name("api").permits(10).maxPermits(20).leakDetection(LeakDetection.SAMPLED)
                .partition("checkout", 0.5).partition("batch", 0.2).build();
    }

    private static Times acquire(MeterRegistry r, String partition, String outcome) {
        return times(r.get("sema.acquire").tag("name", "api").tag("partition", partition).tag("outcome", outcome));
    }

    private static Times hold(MeterRegistry r, String partition) {
        return times(r.get("sema.permit.hold").tag("name", "api").tag("partition", partition));
    }

    private static double partitionGauge(MeterRegistry r, String name, String partition) {
        return r.get(name).tag("name", "api").tag("partition", partition).gauge().value();
    }

    @Test
    void anUnpartitionedSemaphoresEventMetersAreOfNoPartitionAndItHasNoPartitionGauges() {
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        metrics(s).bindTo(registry);
        for (Meter m : registry.getMeters()) {
            String name = m.getId().getName();
            boolean event = name.startsWith("sema.acquire") || name.startsWith("sema.permit.hold")
                    || name.equals("sema.leaks");
            assertThat(m.getId().getTag("partition")).as(m.getId().toString()).isEqualTo(event ? "" : null);
        }
        assertThat(registry.find("sema.partition.used").meters()).isEmpty();
        assertThat(registry.find("sema.partition.guarantee").meters()).isEmpty();
        assertThat(registry.find("sema.partition.waiters").meters()).isEmpty();
    }

    /**
     * A Prometheus registry keeps one set of tag keys per meter name and drops a meter registered with another:
     * partitioned and unpartitioned semaphores in one registry, bound in either order, keep every timer.
     */
    @Test
    void partitionedAndUnpartitionedSemaphoresShareOnePrometheusRegistryInEitherOrder() throws Exception {
        for (boolean partitionedFirst : new boolean[] {true, false}) {
            for (boolean perSample : new boolean[] {false, true}) {
                PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
                Semaphore db = Semaphore.builder().name("db").permits(2).build();
                Semaphore api = Semaphore.builder().name("api").permits(4).partition("checkout", 0.5).build();
                List<SemaphoreMetrics> bound = new ArrayList<>();
                for (Semaphore s : partitionedFirst ? List.of(api, db) : List.of(db, api)) {
                    SemaphoreMetrics m = SemaphoreMetrics.builder(s).perSampleTimers(perSample).build();
                    m.bindTo(prometheus);
                    bound.add(m);
                }
                db.acquire(1).close();
                api.partition("checkout").acquire(2).close();
                api.acquire(1).close();
                String scrape = prometheus.scrape();
                String as = (partitionedFirst ? "partitioned first" : "unpartitioned first")
                        + (perSample ? ", per-sample timers" : "");
                assertThat(scrape).as(as)
                        .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"granted\",partition=\"\"} 1")
                        .contains("sema_acquire_seconds_count{name=\"api\",outcome=\"granted\",partition=\"\"} 1")
                        .contains("sema_acquire_seconds_count{name=\"api\",outcome=\"granted\",partition=\"checkout\"} 1")
                        .contains("sema_permit_hold_seconds_count{name=\"db\",partition=\"\"} 1")
                        .contains("sema_permit_hold_seconds_count{name=\"api\",partition=\"checkout\"} 1");
                bound.forEach(SemaphoreMetrics::close);
            }
        }
    }

    @Test
    void eachPartitionsRequestsAreTimedUnderItsNameAndTheParentsOwnUnderEmpty() throws Exception {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore batch = api.partition("batch");
        metrics(api).bindTo(registry);
        for (String partition : new String[] {"checkout", "batch", ""}) {
            for (String outcome : new String[] {"granted", "unavailable", "timeout", "cancelled", "interrupted",
                    "closed"}) {
                assertThat(acquire(registry, partition, outcome).count()).as(partition + " " + outcome).isZero();
            }
            assertThat(hold(registry, partition).count()).isZero();
        }
        Permit b = batch.acquire(2);
        Thread.sleep(5);
        b.close();
        checkout.acquire(3).close();
        checkout.tryAcquire().orElseThrow().close();
        api.tryAcquire(1).orElseThrow().close();
        Permit all = api.acquire(10);
        assertThat(batch.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> checkout.acquire(1, Duration.ofMillis(20))).isInstanceOf(TimeoutException.class);
        all.close();

        assertThat(acquire(registry, "checkout", "granted").count()).isEqualTo(2);
        assertThat(acquire(registry, "checkout", "timeout").count()).isEqualTo(1);
        assertThat(acquire(registry, "checkout", "timeout").totalMillis()).isGreaterThanOrEqualTo(20);
        assertThat(acquire(registry, "batch", "granted").count()).isEqualTo(1);
        assertThat(acquire(registry, "batch", "unavailable").count()).isEqualTo(1);
        assertThat(acquire(registry, "", "granted").count()).isEqualTo(2);
        assertThat(acquire(registry, "", "unavailable").count()).isZero();
        assertThat(hold(registry, "checkout").count()).isEqualTo(2);
        assertThat(hold(registry, "batch").count()).isEqualTo(1);
        assertThat(hold(registry, "batch").totalMillis()).isGreaterThanOrEqualTo(5);
        assertThat(hold(registry, "").count()).isEqualTo(2);
        assertThat(registry.find("sema.acquire").tag("name", "api").meters()).as("every sema.acquire has a partition")
                .hasSize(3 * 6).allSatisfy(m -> assertThat(m.getId().getTag("partition")).isNotNull());
    }

    @Test
    void partitionGaugesShowWhatEachPartitionHoldsIsGuaranteedAndQueues() throws Exception {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore batch = api.partition("batch");
        metrics(api).bindTo(registry);
        Permit c = checkout.acquire(3);
        Permit b = batch.acquire(6);
        Permit own = api.acquire(1);
        CompletableFuture<Permit> queued = batch.acquireAsync(1);
        CompletableFuture<Permit> second = batch.acquireAsync(1);
        assertThat(partitionGauge(registry, "sema.partition.used", "checkout")).isEqualTo(3);
        assertThat(partitionGauge(registry, "sema.partition.used", "batch")).isEqualTo(6);
        assertThat(partitionGauge(registry, "sema.partition.guarantee", "checkout")).isEqualTo(5);
        assertThat(partitionGauge(registry, "sema.partition.guarantee", "batch")).isEqualTo(2);
        assertThat(partitionGauge(registry, "sema.partition.waiters", "checkout")).isZero();
        assertThat(partitionGauge(registry, "sema.partition.waiters", "batch")).isEqualTo(2);
        assertThat(gauge(registry, "sema.permits.used", "api")).as("the totals stay the semaphore's").isEqualTo(10);
        assertThat(gauge(registry, "sema.queue.waiters", "api")).isEqualTo(2);
        assertThat(registry.find("sema.partition.used").meters()).as("no gauge for the parent's own").hasSize(2);

        api.setPermits(20);
        Permit q = queued.get(20, TimeUnit.SECONDS);
        Permit r = second.get(20, TimeUnit.SECONDS);
        assertThat(partitionGauge(registry, "sema.partition.guarantee", "checkout")).isEqualTo(10);
        assertThat(partitionGauge(registry, "sema.partition.guarantee", "batch")).isEqualTo(4);
        assertThat(partitionGauge(registry, "sema.partition.used", "batch")).isEqualTo(8);
        assertThat(partitionGauge(registry, "sema.partition.waiters", "batch")).isZero();
        for (Permit p : new Permit[] {c, b, own, q, r}) {
            p.close();
        }
        assertThat(partitionGauge(registry, "sema.partition.used", "checkout")).isZero();
        assertThat(partitionGauge(registry, "sema.partition.used", "batch")).isZero();
    }

    private static double gauge(MeterRegistry r, String name, String semaphore) {
        return r.get(name).tag("name", semaphore).gauge().value();
    }

    @Test
    void aPartitionsLeaksAreCountedUnderItsName() throws Exception {
        Semaphore api = api();
        metrics(api).bindTo(registry);
        leak(api.partition("batch"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (registry.get("sema.leaks").tag("partition", "batch").counter().count() < 2) {
            assertThat(System.nanoTime() - deadline).as("leak not found in time").isNegative();
            System.gc();
            Thread.sleep(10);
        }
        assertThat(registry.get("sema.leaks").tag("partition", "").counter().count()).isZero();
        assertThat(registry.get("sema.leaks").tag("partition", "checkout").counter().count()).isZero();
    }

    @Test
    void bindingAPartitionsViewIsRefusedAndRegistersNothing() {
        Semaphore batch = api().partition("batch");
        SemaphoreMetrics metrics = metrics(batch);
        assertThatThrownBy(() -> metrics.bindTo(registry)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("'api'");
        assertThat(registry.getMeters()).isEmpty();
    }

    @Test
    void aPrometheusScrapeShowsPartitionedAndUnpartitionedSemaphoresSideBySide() throws Exception {
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Semaphore db = Semaphore.builder().name("db").permits(2).build();
        Semaphore api = api();
        metrics(db).bindTo(prometheus);
        metrics(api).bindTo(prometheus);
        db.acquire().close();
        api.partition("batch").acquire(2).close();
        api.acquire().close();
        Permit held = api.partition("checkout").acquire(4);
        String scrape = prometheus.scrape();
        held.close();
        assertThat(scrape)
                .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"granted\",partition=\"\"} 1")
                .contains("sema_acquire_seconds_count{name=\"api\",outcome=\"granted\",partition=\"batch\"} 1")
                .contains("sema_acquire_seconds_count{name=\"api\",outcome=\"granted\",partition=\"\"} 1")
                .contains("sema_permit_hold_seconds_count{name=\"db\",partition=\"\"} 1")
                .contains("sema_permit_hold_seconds_count{name=\"api\",partition=\"batch\"} 1")
                .contains("sema_leaks_total{name=\"api\",partition=\"checkout\"} 0")
                .contains("sema_permits_used{name=\"api\"} 4")
                .contains("sema_partition_used{name=\"api\",partition=\"checkout\"} 4")
                .contains("sema_partition_guarantee{name=\"api\",partition=\"batch\"} 2")
                .contains("sema_partition_waiters{name=\"api\",partition=\"batch\"} 0");
    }

    @Test
    void aBuilderRefusesNullsAndEachBuildIsANewBinding() {
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        assertThatThrownBy(() -> SemaphoreMetrics.builder((Semaphore) null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("semaphore");
        assertThatThrownBy(() -> SemaphoreMetrics.builder(s).tags(null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("tags");
        SemaphoreMetrics.Builder b = SemaphoreMetrics.builder(s).tags(Tags.of("a", "1")).tags(Tags.of("b", "2"));
        assertThat(b.build()).isNotSameAs(b.build());
        b.build().bindTo(registry);
        assertThat(registry.get("sema.permits.limit").tag("a", "1").tag("b", "2").tag("name", "db").gauge().value())
                .isEqualTo(1);
    }
}
