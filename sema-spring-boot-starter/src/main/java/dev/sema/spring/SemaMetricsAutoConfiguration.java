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
 * {@code .percentile} gauges) unless the application asks for what only per-sample Micrometer timers give: a
 * {@code management.metrics.distribution} setting that Spring Boot applies to {@code sema.acquire} or
 * {@code sema.permit.hold}. It is looked up as Spring Boot looks it up: the most specific of the meter name and
 * its prefixes ({@code sema.permit.hold}, {@code sema.permit}, {@code sema}), then {@code all} for
 * {@code percentiles-histogram} and {@code percentiles} ({@code slo} has no {@code all}). The property
 * {@code sema.metrics.per-sample-timers} decides instead when set.
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnClass({ SemaphoreMetrics.class, MeterRegistry.class })
@ConditionalOnBean(SemaphoreRegistry.class)
public class SemaMetricsAutoConfiguration {
    private static final String DISTRIBUTION = "management.metrics.distribution.";
    /** The timers SemaphoreMetrics registers. */
    private static final List<String> TIMERS = List.of("sema.acquire", "sema.permit.hold");

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
        Map<String, Boolean> histogram = binder.bind(DISTRIBUTION + "percentiles-histogram",
                Bindable.mapOf(String.class, Boolean.class)).orElse(Map.of());
        Map<String, String[]> percentiles = binder.bind(DISTRIBUTION + "percentiles",
                Bindable.mapOf(String.class, String[].class)).orElse(Map.of());
        Map<String, String[]> slo = binder.bind(DISTRIBUTION + "slo", Bindable.mapOf(String.class, String[].class))
                .orElse(Map.of());
        for (String timer : TIMERS) {
            if (Boolean.TRUE.equals(lookup(histogram, timer, true)) || nonEmpty(lookup(percentiles, timer, true))
                    || nonEmpty(lookup(slo, timer, false))) {
                return true;
            }
        }
        return false;
    }

    /** The value of the most specific key among {@code name} and its prefixes, then {@code all} if allowed. */
    private static <V> V lookup(Map<String, V> values, String name, boolean all) {
        for (String key = name; ; key = key.substring(0, key.lastIndexOf('.'))) {
            V v = values.get(key);
            if (v != null) {
                return v;
            }
            if (key.indexOf('.') < 0) {
                break;
            }
        }
        return all ? values.get("all") : null;
    }

    private static boolean nonEmpty(String[] values) {
        return values != null && values.length > 0 && !(values.length == 1 && values[0].isBlank());
    }
}
