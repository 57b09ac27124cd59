package dev.sema.spring;

import dev.sema.Semaphore;
import jakarta.servlet.Filter;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * Servlet web applications: the {@code sema.web} filter, when {@code sema.web.semaphore} names a semaphore,
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
    @ConditionalOnProperty(prefix = "sema.web", name = "semaphore")
    @ConditionalOnMissingBean(name = "semaphoreFilter")
    FilterRegistrationBean<SemaphoreFilter> semaphoreFilter(SemaphoreRegistry registry, SemaProperties properties,
            Environment environment) {
        Settings settings = new Settings(environment);
        SemaProperties.Web web = properties.web();
        String name = web.semaphore().trim();
        Semaphore semaphore = registry.find(name).orElseThrow(() -> settings.invalid("sema.web.semaphore", name,
                "names no semaphore (" + (registry.all().isEmpty() ? "sema.semaphores configures none"
                        : "there are " + registry.all().keySet()) + ")",
                "Configure sema.semaphores." + name + ".permits, or set sema.web.semaphore to one of the"
                        + " semaphores."));
        if (semaphore.maxPermits() < 1) {
            // Every filtered request would fail at request time (a request above the ceiling is a programming error).
            throw settings.invalid("sema.web.semaphore", name, "each request takes 1 permit, but semaphore '" + name
                    + "' has max-permits " + semaphore.maxPermits() + ", so no request could ever get one",
                    "Set " + Settings.semaphore(name) + ".max-permits (or .permits) to 1 or more.");
        }
        if (web.maxWait().isNegative()) {
            throw settings.invalid("sema.web.max-wait", web.maxWait(), "must not be negative", null);
        }
        if (web.retryAfter().isNegative()) {
            throw settings.invalid("sema.web.retry-after", web.retryAfter(), "must not be negative", null);
        }
        List<String> paths = patterns(settings, "sema.web.paths", web.paths());
        if (paths.isEmpty()) {
            throw settings.invalid("sema.web.paths", String.join(",", web.paths()), "names no path",
                    "Leave sema.web.paths out for /**, or list Ant-style patterns such as /api/**.");
        }
        List<String> excluded = web.excludePaths() != null ? patterns(settings, "sema.web.exclude-paths",
                web.excludePaths()) : actuatorPaths(environment);
        FilterRegistrationBean<SemaphoreFilter> registration = new FilterRegistrationBean<>(
                new SemaphoreFilter(semaphore, paths, excluded, web.maxWait(), web.retryAfter()));
        registration.setName("semaphoreFilter");
        registration.setOrder(FILTER_ORDER);
        registration.setAsyncSupported(true);
        return registration;
    }

    private static List<String> patterns(Settings settings, String property, List<String> written) {
        List<String> patterns = written.stream().map(String::trim).filter(p -> !p.isEmpty()).toList();
        for (String pattern : patterns) {
            if (!pattern.startsWith("/")) {
                throw settings.invalid(property, String.join(",", written), "'" + pattern + "' must start with /",
                        "Write the paths as Ant-style patterns such as /api/**.");
            }
        }
        return patterns;
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
