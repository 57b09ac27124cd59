package dev.sema.spring;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Spring Boot's health support, when it is on the class path: the {@code semaphores} health contributor,
 * UP, or DOWN naming each Redis semaphore whose state cannot be read ({@code management.health.semaphores.enabled}
 * switches it off).
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(SemaphoreRegistry.class)
public class SemaHealthAutoConfiguration {

    /** Created by Spring Boot. */
    public SemaHealthAutoConfiguration() {
    }

    // On the method, not the class: the condition's class exists only with spring-boot-health, which the
    // class-level @ConditionalOnClass checks first.
    @Bean
    @ConditionalOnMissingBean(name = "semaphoresHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("semaphores")
    HealthIndicator semaphoresHealthIndicator(SemaphoreRegistry registry) {
        return new SemaphoresHealthIndicator(registry);
    }
}
