package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import org.springframework.test.context.TestPropertySource;

/**
 * The dashboard against SemaphoreMetrics' default mode (Sema's own histograms, published as percentile gauges):
 * every query still has an alternative whose metrics are all in the scrape, and its percentile panels have values,
 * the partitions row's too.
 */
@TestPropertySource(properties = "sema.metrics.per-sample-timers=false")
class DashboardDefaultModeTest extends DashboardTest {

    @Override
    void percentilePanelsHaveSamples(String scrape) {
        assertThat(scrape).doesNotContain("_bucket{");
        for (String name : new String[] {"inbound", "reports"}) {
            assertThat(value(scrape, "sema_permit_hold_percentile_seconds{name=\"" + name
                    + "\",partition=\"\",phi=\"0.99\"}"))
                    .as("p99 of the holds of " + name).isPositive();
            assertThat(value(scrape, "sema_acquire_seconds_count{name=\"" + name
                    + "\",outcome=\"granted\",partition=\"\"}"))
                    .isPositive();
        }
        assertThat(value(scrape,
                "sema_acquire_percentile_seconds{name=\"reports\",outcome=\"timeout\",partition=\"\",phi=\"0.5\"}"))
                .as("the refused /reports/x waited for its @WithPermits timeout").isPositive();
    }

    @Override
    void partitionPercentilesHaveSamples(String scrape) {
        assertThat(scrape).doesNotContain("_bucket{");
        for (String partition : new String[] {"checkout", "batch", ""}) {
            assertThat(value(scrape, "sema_acquire_percentile_seconds{name=\"api\",outcome=\"granted\",partition=\""
                    + partition + "\",phi=\"0.99\"}")).as("no grant waited").isZero();
        }
        assertThat(value(scrape, "sema_acquire_percentile_seconds{name=\"api\",outcome=\"timeout\","
                + "partition=\"checkout\",phi=\"0.99\"}")).as("the timed-out checkout request waited").isPositive();
    }
}
