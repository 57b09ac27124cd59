package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Which way SemaphoreMetrics times: its own histograms unless a Spring Boot distribution setting reaches the sema
 * timers (which only per-sample Micrometer timers honour), and sema.metrics.per-sample-timers decides when set.
 */
@Timeout(30)
class MetricsModeTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaMetricsAutoConfiguration.class))
            .withBean(SimpleMeterRegistry.class)
            .withPropertyValues("sema.semaphores.db.permits=2");

    @Test
    void semasOwnHistogramsByDefault() {
        runner.run(context -> assertThat(bound(context.getBean(SemaphoreRegistryMetrics.class),
                context.getBean(MeterRegistry.class))).isInstanceOf(FunctionTimer.class));
    }

    @Test
    void perSampleTimersWhenADistributionSettingReachesTheSemaTimers() {
        for (String setting : new String[] {"management.metrics.distribution.percentiles-histogram.sema=true",
                "management.metrics.distribution.percentiles-histogram.all=true",
                "management.metrics.distribution.percentiles-histogram.sema.permit.hold=true",
                "management.metrics.distribution.percentiles-histogram.sema.permit=true",
                "management.metrics.distribution.percentiles-histogram.sema=on",
                "management.metrics.distribution.percentiles.sema.acquire=0.5,0.99",
                "management.metrics.distribution.percentiles.sema[0]=0.99", // a YAML list
                "management.metrics.distribution.percentiles.all=0.99",
                "management.metrics.distribution.slo.sema=10ms,100ms",
                "management.metrics.distribution.slo.sema.permit.hold[0]=10ms"}) {
            runner.withPropertyValues(setting).run(context -> assertThat(bound(
                    context.getBean(SemaphoreRegistryMetrics.class), context.getBean(MeterRegistry.class)))
                    .as(setting).isInstanceOf(Timer.class));
        }
    }

    @Test
    void settingsForOtherMetersOrSwitchedOffChangeNothing() {
        for (String setting : new String[] {"management.metrics.distribution.percentiles-histogram.http=true",
                "management.metrics.distribution.percentiles-histogram.sema=false",
                "management.metrics.distribution.percentiles-histogram.semaphore=true",
                "management.metrics.distribution.slo.all=10ms", // Spring Boot has no 'all' for slo
                "management.metrics.distribution.percentiles-histogram.sema.acquire.extra=true"}) {
            runner.withPropertyValues(setting).run(context -> assertThat(bound(
                    context.getBean(SemaphoreRegistryMetrics.class), context.getBean(MeterRegistry.class)))
                    .as(setting).isInstanceOf(FunctionTimer.class));
        }
    }

    @Test
    void theMostSpecificKeyWinsAsInSpringBoot() {
        runner.withPropertyValues("management.metrics.distribution.percentiles-histogram.all=true",
                "management.metrics.distribution.percentiles-histogram.sema=false").run(context -> assertThat(bound(
                        context.getBean(SemaphoreRegistryMetrics.class), context.getBean(MeterRegistry.class)))
                        .as("sema=false over all=true").isInstanceOf(FunctionTimer.class));
        runner.withPropertyValues("management.metrics.distribution.percentiles-histogram.sema=false",
                "management.metrics.distribution.percentiles-histogram.sema.permit.hold=true").run(context -> assertThat(
                        bound(context.getBean(SemaphoreRegistryMetrics.class), context.getBean(MeterRegistry.class)))
                        .as("sema.permit.hold=true over sema=false").isInstanceOf(Timer.class));
    }

    @Test
    void thePropertyDecidesWhenSet() {
        runner.withPropertyValues("sema.metrics.per-sample-timers=true").run(context -> assertThat(bound(
                context.getBean(SemaphoreRegistryMetrics.class), context.getBean(MeterRegistry.class)))
                .isInstanceOf(Timer.class));
        runner.withPropertyValues("sema.metrics.per-sample-timers=false",
                "management.metrics.distribution.percentiles-histogram.sema=true").run(context -> assertThat(bound(
                        context.getBean(SemaphoreRegistryMetrics.class), context.getBean(MeterRegistry.class)))
                        .isInstanceOf(FunctionTimer.class));
    }

    @Test
    void aValueThatIsNotABooleanStopsTheStartNamingTheProperty() {
        runner.withPropertyValues("sema.metrics.per-sample-timers=maybe").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("maybe");
            Throwable t = context.getStartupFailure();
            StringBuilder all = new StringBuilder();
            for (; t != null; t = t.getCause()) {
                all.append(t.getMessage()).append('\n');
            }
            assertThat(all).contains("sema.metrics.per-sample-timers");
        });
    }

    /** Binds the starter's meters to {@code meters} and returns the granted-wait timer it registered. */
    private static Object bound(SemaphoreRegistryMetrics metrics, MeterRegistry meters) {
        metrics.bindTo(meters);
        return meters.get("sema.acquire").tag("name", "db").tag("outcome", "granted").meter();
    }
}
