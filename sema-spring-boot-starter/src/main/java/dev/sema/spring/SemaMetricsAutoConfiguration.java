package dev.sema.spring;

import dev.sema.micrometer.SemaphoreMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Micrometer, when sema-micrometer is on the class path: every semaphore of the registry is bound with
 * {@link SemaphoreMetrics} to the application's meter registries (a {@code MeterBinder} bean, which Spring
 * Boot binds), so that for instance {@code /actuator/prometheus} shows {@code sema_permits_limit{name="db"}}.
 *
 * <p>The timers are kept in {@code SemaphoreMetrics}' default mode (Sema's own histograms, with
 * {@code .percentile} gauges) unless the application asks for what only per-sample Micrometer timers give:
 * a {@code management.metrics.distribution} setting ({@code percentiles-histogram}, {@code percentiles} or
 * {@code slo}) for {@code sema}, {@code sema.acquire}, {@code sema.permit.hold} or {@code all}. The property
 * {@code sema.metrics.per-sample-timers} decides instead when set.
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnClass({ SemaphoreMetrics.class, MeterRegistry.class })
@ConditionalOnBean(SemaphoreRegistry.class)
public class SemaMetricsAutoConfiguration {
    /** The keys of a distribution setting that reach sema.acquire or sema.permit.hold, as Spring Boot matches them. */
    private static final List<String> KEYS = List.of("all", "sema", "sema.acquire", "sema.permit",
            "sema.permit.hold");

    /** Created by Spring Boot. */
    public SemaMetricsAutoConfiguration() {
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    SemaphoreRegistryMetrics semaphoreRegistryMetrics(SemaphoreRegistry registry, Environment environment) {
        return new SemaphoreRegistryMetrics(registry, perSampleTimers(Binder.get(environment)));
    }

    /** {@code sema.metrics.per-sample-timers} when set (a value that is not a boolean stops the start), else auto. */
    static boolean perSampleTimers(Binder binder) {
        return binder.bind("sema.metrics.per-sample-timers", Boolean.class)
                .orElseGet(() -> distributionSetFor(binder));
    }

    private static boolean distributionSetFor(Binder binder) {
        Map<String, String> histogram = binder.bind("management.metrics.distribution.percentiles-histogram",
                Bindable.mapOf(String.class, String.class)).orElse(Map.of());
        for (String key : KEYS) {
            if (Boolean.parseBoolean(histogram.get(key))) {
                return true;
            }
        }
        for (String setting : List.of("percentiles", "slo")) {
            Map<String, String> values = binder.bind("management.metrics.distribution." + setting,
                    Bindable.mapOf(String.class, String.class)).orElse(Map.of());
            for (String key : KEYS) {
                String v = values.get(key);
                if (v != null && !v.isBlank()) {
                    return true;
                }
            }
        }
        return false;
    }
}
