package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Semaphore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Each part switches on only when its classes are there (and, for Redis, a URI or a bean), starts nothing the
 * configuration does not ask for, and every part uses the application's own SemaphoreRegistry when it has one.
 */
@Timeout(30)
class OptionalPartsTest {
    private static final AutoConfigurations ALL = AutoConfigurations.of(SemaRedisAutoConfiguration.class,
            SemaAutoConfiguration.class, SemaWebAutoConfiguration.class, SemaMetricsAutoConfiguration.class,
            SemaActuatorAutoConfiguration.class, SemaHealthAutoConfiguration.class);

    private final WebApplicationContextRunner web = new WebApplicationContextRunner().withConfiguration(ALL)
            .withPropertyValues("sema.semaphores.db.permits=2", "management.endpoints.web.exposure.include=*");

    @Test
    void everyPartWithEverythingOnTheClassPath() {
        web.withPropertyValues("sema.web.semaphore=db").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(SemaphoreRegistry.class).hasSingleBean(SemaphoreRegistryMetrics.class)
                    .hasSingleBean(SemaphoresEndpoint.class).hasSingleBean(SemaphoresEndpointWebExtension.class)
                    .hasBean("semaphoresHealthIndicator").hasBean("semaphoreFilter")
                    .hasSingleBean(PermitUnavailableExceptionResolver.class).hasSingleBean(RedisSemaphoreSource.class);
            assertThat(context).doesNotHaveBean(dev.sema.redis.RedisSemaphores.class); // no URI: no connection
        });
    }

    @Test
    void nothingButTheRegistryWhenOnlySemaCoreIsThere() {
        new ApplicationContextRunner().withConfiguration(ALL)
                .withClassLoader(new FilteredClassLoader("dev.sema.redis.", "dev.sema.micrometer.",
                        "io.micrometer.", "org.springframework.boot.actuate.", "org.springframework.boot.health.",
                        "jakarta.servlet.", "org.springframework.web."))
                .withPropertyValues("sema.semaphores.db.permits=2", "sema.web.semaphore=db")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(SemaphoreRegistry.class).get("db").permits()).isEqualTo(2);
                    assertThat(context).doesNotHaveBean(RedisSemaphoreSource.class)
                            .doesNotHaveBean(SemaphoreRegistryMetrics.class).doesNotHaveBean(SemaphoresEndpoint.class)
                            .doesNotHaveBean("semaphoresHealthIndicator").doesNotHaveBean("semaphoreFilter")
                            .doesNotHaveBean(PermitUnavailableExceptionResolver.class);
                });
    }

    @Test
    void noFilterWithoutSemaWebSemaphore() {
        web.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean("semaphoreFilter")
                .hasSingleBean(PermitUnavailableExceptionResolver.class));
    }

    @Test
    void pathsAreCommaSeparated() {
        web.withPropertyValues("sema.web.semaphore=db", "sema.web.paths=/api/**, /v2/**")
                .run(context -> assertThat(context.getBean("semaphoreFilter", FilterRegistrationBean.class).getFilter()
                        .toString()).contains("paths=[/api/**, /v2/**]"));
    }

    @Test
    void filterWithoutSpringMvc() {
        web.withClassLoader(new FilteredClassLoader("org.springframework.web.servlet."))
                .withPropertyValues("sema.web.semaphore=db")
                .run(context -> assertThat(context).hasNotFailed().hasBean("semaphoreFilter")
                        .doesNotHaveBean(PermitUnavailableExceptionResolver.class));
    }

    @Test
    void endpointOnlyWhenAvailable() {
        web.withPropertyValues("management.endpoints.web.exposure.include=health")
                .run(context -> assertThat(context).doesNotHaveBean(SemaphoresEndpoint.class));
        web.withPropertyValues("management.endpoint.semaphores.access=NONE")
                .run(context -> assertThat(context).doesNotHaveBean(SemaphoresEndpoint.class));
    }

    @Test
    void healthContributorCanBeSwitchedOff() {
        web.withPropertyValues("management.health.semaphores.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean("semaphoresHealthIndicator"));
    }

    @Test
    void everyPartUsesTheApplicationsOwnRegistry() {
        web.withUserConfiguration(OwnRegistryConfiguration.class).withPropertyValues("sema.web.semaphore=own")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(SemaphoreRegistry.class);
                    assertThat(context.getBean(SemaphoresEndpoint.class).semaphores().semaphores())
                            .containsOnlyKeys("own");
                    SimpleMeterRegistry meters = new SimpleMeterRegistry();
                    context.getBean(SemaphoreRegistryMetrics.class).bindTo(meters);
                    assertThat(meters.get("sema.permits.limit").tag("name", "own").gauge().value()).isEqualTo(OwnRegistryConfiguration.PERMITS);
                    FilterRegistrationBean<?> filter = context.getBean("semaphoreFilter", FilterRegistrationBean.class);
                    assertThat(filter.getFilter().toString()).contains("own");
                });
    }

    @Test
    void backsOffForTheApplicationsOwnParts() {
        web.withUserConfiguration(OwnParts.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(SemaphoresEndpoint.class)).isSameAs(context.getBean("ownEndpoint"));
            assertThat(context.getBean("semaphoresHealthIndicator")).isNotInstanceOf(SemaphoresHealthIndicator.class);
        });
    }

    @Test
    void theApplicationsOwnSemaphoreFilterTakesThePlaceOfTheStarters() {
        web.withUserConfiguration(OwnFilter.class).withPropertyValues("sema.web.semaphore=db").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(FilterRegistrationBean.class);
            FilterRegistrationBean<?> filter = context.getBean("semaphoreFilter", FilterRegistrationBean.class);
            assertThat(filter.getFilter()).isNotInstanceOf(SemaphoreFilter.class);
            assertThat(context).hasSingleBean(PermitUnavailableExceptionResolver.class); // the 503 mapping stays
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnFilter {
        @Bean
        FilterRegistrationBean<jakarta.servlet.Filter> semaphoreFilter() {
            return new FilterRegistrationBean<>((request, response, chain) -> chain.doFilter(request, response));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnParts {
        @Bean
        SemaphoresEndpoint ownEndpoint(SemaphoreRegistry registry) {
            return new SemaphoresEndpoint(registry);
        }

        @Bean
        org.springframework.boot.health.contributor.HealthIndicator semaphoresHealthIndicator() {
            return () -> org.springframework.boot.health.contributor.Health.up().build();
        }
    }
}
