package dev.sema.spring;

import jakarta.servlet.Filter;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * Servlet web applications: the {@code sema.web} filter, when {@code sema.web.semaphore} names a semaphore or
 * {@code sema.web.keyed} a keyed family,
 * and, with Spring MVC, {@link PermitUnavailableException} as 503 with {@code Retry-After}.
 */
@AutoConfiguration(after = SemaAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({ Filter.class, OncePerRequestFilter.class })
@ConditionalOnBean(SemaphoreRegistry.class)
@EnableConfigurationProperties(SemaProperties.class)
public class SemaWebAutoConfiguration {
    /**
     * The filter's place: early, so that a refused request costs little, yet after Spring Boot's observation
     * filter ({@code HIGHEST_PRECEDENCE + 1}), so that refused requests show in {@code http.server.requests}.
     */
    static final int FILTER_ORDER = Ordered.HIGHEST_PRECEDENCE + 10;

    /** Created by Spring Boot. */
    public SemaWebAutoConfiguration() {
    }

    @Bean
    @Conditional(WebLimitConfigured.class)
    @ConditionalOnMissingBean(name = "semaphoreFilter")
    FilterRegistrationBean<SemaphoreFilter> semaphoreFilter(SemaphoreRegistry registry, SemaProperties properties,
            Environment environment) {
        SemaProperties.Web web = properties.web();
        List<String> defaultExcluded = web.excludePaths() == null ? actuatorPaths(environment) : List.of();
        WebLimit limit = WebLimit.check(registry, web, defaultExcluded, new Settings(environment));
        FilterRegistrationBean<SemaphoreFilter> registration = new FilterRegistrationBean<>(new SemaphoreFilter(limit));
        registration.setName("semaphoreFilter");
        registration.setOrder(FILTER_ORDER);
        registration.setAsyncSupported(true);
        return registration;
    }

    /**
     * The default of {@code sema.web.exclude-paths} ({@link WebLimit#actuatorPaths}), under Spring MVC's servlet path
     * ({@code spring.mvc.servlet.path}), which the filter's path within the application includes.
     */
    static List<String> actuatorPaths(Environment environment) {
        return WebLimit.actuatorPaths(environment, environment.getProperty("spring.mvc.servlet.path", "/"));
    }

    /** Spring MVC: {@link PermitUnavailableException} as 503 with {@code Retry-After}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(DispatcherServlet.class)
    static class MvcConfiguration {
        @Bean
        @ConditionalOnMissingBean
        PermitUnavailableExceptionResolver permitUnavailableExceptionResolver(SemaProperties properties) {
            Duration retryAfter = properties.web().retryAfter();
            return new PermitUnavailableExceptionResolver(retryAfter.isNegative() ? Duration.ZERO : retryAfter);
        }
    }
}
