package dev.sema.spring;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The actuator, when it is on the class path: the {@code semaphores} endpoint ({@link SemaphoresEndpoint},
 * when it is available: enabled and exposed, e.g. {@code management.endpoints.web.exposure.include=semaphores}),
 * and its web extension for the HTTP status codes.
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(SemaphoreRegistry.class)
public class SemaActuatorAutoConfiguration {

    /** Created by Spring Boot. */
    public SemaActuatorAutoConfiguration() {
    }

    // On the methods, not the class: the condition's class exists only with the actuator, which the class-level
    // @ConditionalOnClass checks first.
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(SemaphoresEndpoint.class)
    SemaphoresEndpoint semaphoresEndpoint(SemaphoreRegistry registry) {
        return new SemaphoresEndpoint(registry);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(SemaphoresEndpoint.class)
    @ConditionalOnBean(SemaphoresEndpoint.class)
    SemaphoresEndpointWebExtension semaphoresEndpointWebExtension(SemaphoresEndpoint endpoint) {
        return new SemaphoresEndpointWebExtension(endpoint);
    }
}
