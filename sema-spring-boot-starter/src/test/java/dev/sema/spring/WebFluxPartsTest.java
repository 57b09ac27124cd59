package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/**
 * The reactive parts switch on in a WebFlux application only, and only with what they need: the WebFilter with
 * sema-reactor (without it, a configured sema.web stops the start, saying what is missing); a servlet application
 * without Reactor on the class path keeps working as before.
 */
@Timeout(30)
class WebFluxPartsTest {
    private static final AutoConfigurations ALL = AutoConfigurations.of(SemaRedisAutoConfiguration.class,
            SemaAutoConfiguration.class, SemaWebAutoConfiguration.class, SemaWebFluxAutoConfiguration.class,
            SemaMetricsAutoConfiguration.class, SemaActuatorAutoConfiguration.class, SemaHealthAutoConfiguration.class);

    private final ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
            .withConfiguration(ALL).withPropertyValues("sema.semaphores.db.permits=2");

    @Test
    void aWebFluxApplicationGetsTheWebFilterAndThe503HandlerAndNoServletFilter() {
        reactive.withPropertyValues("sema.web.semaphore=db").run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(SemaphoreWebFilter.class)
                    .hasSingleBean(PermitUnavailableExceptionHandler.class).doesNotHaveBean("semaphoreFilter")
                    .doesNotHaveBean(PermitUnavailableExceptionResolver.class);
            assertThat(context.getBean(SemaphoreWebFilter.class).limit().semaphore().name()).isEqualTo("db");
        });
    }

    @Test
    void noWebFilterWithoutSemaWeb() {
        reactive.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(SemaphoreWebFilter.class)
                .hasSingleBean(PermitUnavailableExceptionHandler.class));
    }

    @Test
    void theWebFilterIsCheckedLikeTheServletOne() {
        reactive.withPropertyValues("sema.web.semaphore=nothing").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("sema.web.semaphore")
                    .hasMessageContaining("nothing");
        });
    }

    @Test
    void aConfiguredSemaWebWithoutSemaReactorStopsTheStartSayingWhatIsMissing() {
        reactive.withClassLoader(new FilteredClassLoader("dev.sema.reactor."))
                .withPropertyValues("sema.web.semaphore=db").run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("sema.web.semaphore")
                            .hasMessageContaining("dev.sema:sema-reactor");
                });
        reactive.withClassLoader(new FilteredClassLoader("dev.sema.reactor.")).run(context -> assertThat(context)
                .hasNotFailed().hasSingleBean(PermitUnavailableExceptionHandler.class));
    }

    @Test
    void aServletApplicationWithoutReactorWorksAsBefore() {
        new WebApplicationContextRunner().withConfiguration(ALL)
                .withClassLoader(new FilteredClassLoader("reactor.", "dev.sema.reactor.",
                        "org.springframework.web.reactive.", "org.springframework.web.server."))
                .withPropertyValues("sema.semaphores.db.permits=2", "sema.web.semaphore=db")
                .run(context -> assertThat(context).hasNotFailed().hasBean("semaphoreFilter")
                        .hasSingleBean(PermitUnavailableExceptionResolver.class)
                        .doesNotHaveBean(SemaphoreWebFilter.class)
                        .doesNotHaveBean(PermitUnavailableExceptionHandler.class));
    }
}
