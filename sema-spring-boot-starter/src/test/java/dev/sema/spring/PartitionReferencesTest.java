package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.assertj.ApplicationContextAssertProvider;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ContextConsumer;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A partition named by {@code @WithPermits(partition)}, {@code sema.web.partition-header} or
 * {@code sema.web.partition-paths} must be one of the semaphore's, or the start stops naming the setting, the value
 * and the partitions there are; {@code partition-paths} are tried in the order written.
 */
@Timeout(30)
class PartitionReferencesTest {
    private static final String[] API = { "sema.semaphores.api.permits=10",
            "sema.semaphores.api.partitions.checkout=0.6", "sema.semaphores.api.partitions.browse=0.3",
            "sema.semaphores.api.partitions.batch=0.1", "sema.semaphores.db.permits=5" };
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class)).withPropertyValues(API);
    private final WebApplicationContextRunner web = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebAutoConfiguration.class))
            .withPropertyValues(API);

    @Test
    void withPermitsNamingAnUnknownPartition() {
        runner.withUserConfiguration(UnknownPartition.class).run(failsWith(
                "@WithPermits(partition) on " + UnknownPartitionService.class.getName() + ".call", "exports",
                "names no partition of semaphore 'api' (its partitions are [checkout, browse, batch])"));
    }

    @Test
    void withPermitsNamingAPartitionOfASemaphoreWithoutPartitions() {
        runner.withUserConfiguration(Unpartitioned.class).run(failsWith(
                "@WithPermits(partition) on " + UnpartitionedService.class.getName() + ".call", "batch",
                "semaphore 'db' has no partitions"));
    }

    @Test
    void withPermitsPartitionMayBeAPlaceholder() {
        runner.withUserConfiguration(UnknownPartition.class).withPropertyValues("app.partition=browse")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(UnknownPartitionService.class).call().join()).isEqualTo("ok");
                });
    }

    @Test
    void partitionPathsNamingAnUnknownPartition() {
        web.withPropertyValues("sema.web.semaphore=api", "sema.web.partition-paths.exports=/api/export/**")
                .run(failsWith("sema.web.partition-paths.exports", "/api/export/**",
                        "names no partition of semaphore 'api' (its partitions are [checkout, browse, batch])"));
    }

    @Test
    void partitionPathsOfASemaphoreWithoutPartitions() {
        web.withPropertyValues("sema.web.semaphore=db", "sema.web.partition-paths.batch=/api/export/**")
                .run(failsWith("sema.web.partition-paths.batch", "/api/export/**",
                        "semaphore 'db' has no partitions"));
    }

    @Test
    void partitionHeaderOfASemaphoreWithoutPartitions() {
        web.withPropertyValues("sema.web.semaphore=db", "sema.web.partition-header=X-Traffic-Class")
                .run(failsWith("sema.web.partition-header", "X-Traffic-Class", "semaphore 'db' has no partitions"));
    }

    @Test
    void partitionPathsMustStartWithASlash() {
        web.withPropertyValues("sema.web.semaphore=api", "sema.web.partition-paths.batch=/api/export/**,reports/**")
                .run(failsWith("sema.web.partition-paths.batch", "/api/export/**,reports/**",
                        "'reports/**' must start with /"));
    }

    @Test
    void theFirstPartitionPathWrittenWins() {
        web.withPropertyValues("sema.web.semaphore=api", "sema.web.partition-paths.batch=/api/export/**",
                "sema.web.partition-paths.checkout=/api/**").run(context -> {
                    WebLimit limit = limit(context);
                    assertThat(limit.select("/api/export/7", h -> null).name()).isEqualTo("api/batch");
                    assertThat(limit.select("/api/cart", h -> null).name()).isEqualTo("api/checkout");
                    assertThat(limit.select("/other", h -> null).name()).isEqualTo("api");
                });
        web.withPropertyValues("sema.web.semaphore=api", "sema.web.partition-paths.checkout=/api/**",
                "sema.web.partition-paths.batch=/api/export/**").run(context ->
                        assertThat(limit(context).select("/api/export/7", h -> null).name()).isEqualTo("api/checkout"));
    }

    @Test
    void theHeaderWinsWhenItNamesAPartition() {
        web.withPropertyValues("sema.web.semaphore=api", "sema.web.partition-header=X-Traffic-Class",
                "sema.web.partition-paths.checkout=/api/**").run(context -> {
                    WebLimit limit = limit(context);
                    assertThat(limit.select("/api/cart", h -> h.equals("X-Traffic-Class") ? " batch " : null).name())
                            .isEqualTo("api/batch");
                    assertThat(limit.select("/api/cart", h -> "bulk").name()).isEqualTo("api/checkout");
                    assertThat(limit.select("/other", h -> "bulk").name()).isEqualTo("api");
                    assertThat(limit.select("/other", h -> null).name()).isEqualTo("api");
                    assertThat(limit.partitioned()).isTrue();
                });
        web.withPropertyValues("sema.web.semaphore=api").run(context -> {
            assertThat(limit(context).partitioned()).isFalse();
            assertThat(limit(context).select("/api/cart", h -> "batch").name()).isEqualTo("api");
        });
    }

    @SuppressWarnings("unchecked")
    private static WebLimit limit(ApplicationContextAssertProvider<?> context) {
        assertThat(context).hasNotFailed();
        return ((FilterRegistrationBean<SemaphoreFilter>) context.getBean("semaphoreFilter")).getFilter().limit();
    }

    private static <C extends ApplicationContextAssertProvider<?>> ContextConsumer<C> failsWith(String setting,
            String value, String reason) {
        return context -> {
            SemaConfigurationException e = BadConfigurationTest.failure(context);
            assertThat(e.setting()).isEqualTo(setting);
            assertThat(e.value()).isEqualTo(value);
            assertThat(e.reason()).contains(reason);
            FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis.getDescription()).contains(setting, "Value: \"" + value + "\"", reason);
        };
    }

    static class UnknownPartitionService {
        @WithPermits(value = "api", partition = "${app.partition:exports}")
        public CompletableFuture<String> call() {
            return CompletableFuture.completedFuture("ok");
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class UnknownPartition {
        @Bean
        UnknownPartitionService unknownPartitionService() {
            return new UnknownPartitionService();
        }
    }

    static class UnpartitionedService {
        @WithPermits(value = "db", partition = "batch")
        public String call() {
            return "ok";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Unpartitioned {
        @Bean
        UnpartitionedService unpartitionedService() {
            return new UnpartitionedService();
        }
    }
}
