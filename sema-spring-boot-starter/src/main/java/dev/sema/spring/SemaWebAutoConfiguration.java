package dev.sema.spring;

import jakarta.servlet.Filter;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
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
    private static final System.Logger LOG = System.getLogger(SemaWebAutoConfiguration.class.getName());
    /** A class of the actuator's web endpoints: present when the application has the actuator. */
    private static final String ACTUATOR = "org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint";

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
     * The default of {@code sema.web.exclude-paths}: the actuator's base path and everything under it, so that
     * health and readiness probes are never refused; nothing without the actuator, or when it is served on a port
     * of its own (its requests never reach this filter), or when its base path is the root (then the endpoints
     * cannot be told from the application's own paths by a prefix, and the application must list them).
     */
    static List<String> actuatorPaths(Environment environment) {
        if (!ClassUtils.isPresent(ACTUATOR, SemaWebAutoConfiguration.class.getClassLoader())) {
            return List.of();
        }
        Integer managementPort = environment.getProperty("management.server.port", Integer.class);
        Integer serverPort = environment.getProperty("server.port", Integer.class, 8080);
        if (managementPort != null && !managementPort.equals(serverPort)) {
            return List.of();
        }
        String base = environment.getProperty("management.endpoints.web.base-path", "/actuator").trim();
        while (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        if (base.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "management.endpoints.web.base-path is /: sema.web cannot tell the"
                    + " actuator's endpoints from the application's paths, so it limits them too unless"
                    + " sema.web.exclude-paths lists them (e.g. /health/**)");
            return List.of();
        }
        if (!base.startsWith("/")) {
            base = "/" + base;
        }
        // The filter matches the path within the application, which includes Spring MVC's servlet path.
        String servlet = environment.getProperty("spring.mvc.servlet.path", "/").trim();
        while (servlet.endsWith("/")) {
            servlet = servlet.substring(0, servlet.length() - 1);
        }
        if (!servlet.isEmpty() && !servlet.startsWith("/")) {
            servlet = "/" + servlet;
        }
        base = servlet + base;
        return List.of(base, base + "/**");
    }

    /** {@code sema.web.semaphore} or {@code sema.web.keyed} is set: either alone makes a filter. */
    static class WebLimitConfigured extends AnyNestedCondition {
        WebLimitConfigured() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnProperty(prefix = "sema.web", name = "semaphore")
        static class Semaphore {
        }

        @ConditionalOnProperty(prefix = "sema.web", name = "keyed")
        static class Keyed {
        }
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
