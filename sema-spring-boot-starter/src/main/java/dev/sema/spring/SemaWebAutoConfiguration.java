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
        if (web.maxWait().isNegative()) {
            throw settings.invalid("sema.web.max-wait", web.maxWait(), "must not be negative", null);
        }
        if (web.retryAfter().isNegative()) {
            throw settings.invalid("sema.web.retry-after", web.retryAfter(), "must not be negative", null);
        }
        List<String> paths = web.paths().stream().map(String::trim).filter(p -> !p.isEmpty()).toList();
        for (String path : paths) {
            if (!path.startsWith("/")) {
                throw settings.invalid("sema.web.paths", String.join(",", web.paths()), "'" + path + "' must start"
                        + " with /", "Write the paths as Ant-style patterns such as /api/**.");
            }
        }
        if (paths.isEmpty()) {
            throw settings.invalid("sema.web.paths", String.join(",", web.paths()), "names no path",
                    "Leave sema.web.paths out for /**, or list Ant-style patterns such as /api/**.");
        }
        FilterRegistrationBean<SemaphoreFilter> registration = new FilterRegistrationBean<>(
                new SemaphoreFilter(semaphore, paths, web.maxWait(), web.retryAfter()));
        registration.setName("semaphoreFilter");
        registration.setOrder(FILTER_ORDER);
        registration.setAsyncSupported(true);
        return registration;
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
