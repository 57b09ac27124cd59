package dev.sema.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Semaphore;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

/** The tests of {@link SemaphoreMetricsTest} with per-sample Micrometer timers, and what only they do. */
class PerSampleTimersTest extends SemaphoreMetricsTest {

    @Override
    SemaphoreMetrics metrics(Semaphore s, Tags tags) {
        return SemaphoreMetrics.builder(s).tags(tags).perSampleTimers(true).build();
    }

    @Override
    @Test
    void theDefaultModePublishesTheMedianAnd99thPercentile() {
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        metrics(s, Tags.empty()).bindTo(registry);
        assertThat(registry.find("sema.permit.hold.percentile").meters()).as("no gauges of its own").isEmpty();
    }

    @Test
    void theTimersFollowTheRegistrysDistributionSettings() throws Exception {
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        prometheus.config().meterFilter(new io.micrometer.core.instrument.config.MeterFilter() {
            @Override
            public io.micrometer.core.instrument.distribution.DistributionStatisticConfig configure(
                    io.micrometer.core.instrument.Meter.Id id,
                    io.micrometer.core.instrument.distribution.DistributionStatisticConfig config) {
                return id.getName().startsWith("sema.")
                        ? io.micrometer.core.instrument.distribution.DistributionStatisticConfig.builder()
                                .percentilesHistogram(true).build().merge(config)
                        : config;
            }
        });
        Semaphore s = Semaphore.builder().name("db").permits(1).build();
        metrics(s, Tags.empty()).bindTo(prometheus);
        s.acquire().close();
        assertThat(prometheus.get("sema.permit.hold").timer()).isInstanceOf(Timer.class);
        assertThat(prometheus.scrape()).contains("sema_permit_hold_seconds_bucket{name=\"db\",partition=\"\",le=")
                .contains("sema_acquire_seconds_bucket{name=\"db\",outcome=\"granted\",partition=\"\",le=");
    }
}
