package dev.sema.spring;

import dev.sema.micrometer.SemaphoreMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer, when sema-micrometer is on the class path: every semaphore of the registry is bound with
 * {@link SemaphoreMetrics} to the application's meter registries (a {@code MeterBinder} bean, which Spring
 * Boot binds), so that for instance {@code /actuator/prometheus} shows {@code sema_permits_limit{name="db"}}.
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnClass({ SemaphoreMetrics.class, MeterRegistry.class })
@ConditionalOnBean(SemaphoreRegistry.class)
public class SemaMetricsAutoConfiguration {

    /** Created by Spring Boot. */
    public SemaMetricsAutoConfiguration() {
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    SemaphoreRegistryMetrics semaphoreRegistryMetrics(SemaphoreRegistry registry) {
        return new SemaphoreRegistryMetrics(registry);
    }
}
