package dev.sema.spring;

import java.time.Duration;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * Reactive (WebFlux) web applications, the sibling of {@link SemaWebAutoConfiguration}: {@link PermitUnavailableException}
 * as 503 with {@code Retry-After}, and the {@code sema.web} {@code WebFilter} when {@code sema.web.semaphore} names a
 * semaphore or {@code sema.web.keyed} a keyed family. The filter needs sema-reactor: without it, a configured
 * {@code sema.web} stops the application at startup, saying so, rather than leaving requests unlimited.
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass(name = { "org.springframework.web.server.WebFilter", "reactor.core.publisher.Mono" })
@ConditionalOnBean(SemaphoreRegistry.class)
@EnableConfigurationProperties(SemaProperties.class)
public class SemaWebFluxAutoConfiguration {
    /**
     * The filter's place: after Spring Security's {@code WebFilterChainProxy} ({@code -100}), so that
     * {@code sema.web.key: principal} sees the authenticated user, and before the application's own filters (order
     * {@code 0} unless they say otherwise). Spring WebFlux observes requests outside the filter chain, so refused
     * requests show in {@code http.server.requests} wherever the filter is.
     */
    static final int FILTER_ORDER = -90;

    /** Created by Spring Boot. */
    public SemaWebFluxAutoConfiguration() {
    }

    @Bean
    @ConditionalOnMissingBean
    PermitUnavailableExceptionHandler permitUnavailableExceptionHandler(SemaProperties properties) {
        Duration retryAfter = properties.web().retryAfter();
        return new PermitUnavailableExceptionHandler(retryAfter.isNegative() ? Duration.ZERO : retryAfter);
    }

    /** The filter, with sema-reactor. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "dev.sema.reactor.SemaReactor")
    static class FilterConfiguration {
        @Bean
        @Conditional(WebLimitConfigured.class)
        @ConditionalOnMissingBean(name = "semaphoreWebFilter")
        SemaphoreWebFilter semaphoreWebFilter(SemaphoreRegistry registry, SemaProperties properties,
                Environment environment) {
            SemaProperties.Web web = properties.web();
            // The filter's path within the application leaves spring.webflux.base-path out, as the actuator's does.
            List<String> defaultExcluded = web.excludePaths() == null ? WebLimit.actuatorPaths(environment, "/")
                    : List.of();
            return new SemaphoreWebFilter(WebLimit.check(registry, web, defaultExcluded, new Settings(environment)));
        }
    }

    /** {@code sema.web} is configured, but sema-reactor, which the filter waits with, is missing. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass("dev.sema.reactor.SemaReactor")
    static class NoFilterConfiguration {
        @Bean
        @Conditional(WebLimitConfigured.class)
        Object semaphoreWebFilter(SemaProperties properties, Environment environment) {
            SemaProperties.Web web = properties.web();
            boolean semaphore = web.semaphore() != null && !web.semaphore().isBlank();
            throw new Settings(environment).invalid(semaphore ? "sema.web.semaphore" : "sema.web.keyed",
                    semaphore ? web.semaphore() : web.keyed(), "limits requests in a WebFlux application, which needs"
                            + " sema-reactor (dev.sema:sema-reactor) on the class path: it is missing",
                    "Add the dependency dev.sema:sema-reactor, or remove sema.web.");
        }
    }
}
