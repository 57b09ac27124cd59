package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.ApplicationContextAssertProvider;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ContextConsumer;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;

/**
 * Every configuration mistake that API.md lists stops the application at startup, with a message that names the
 * property (or annotation) and the value; the failure analyzer turns it into Spring Boot's report.
 */
@Timeout(30)
@ExtendWith(OutputCaptureExtension.class)
class BadConfigurationTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaRedisAutoConfiguration.class, SemaAutoConfiguration.class));

    @Test
    void negativePermits() {
        runner.withPropertyValues("sema.semaphores.db.permits=-1")
                .run(failsWith("sema.semaphores.db.permits", "-1", "must be between 0 and"));
    }

    @Test
    void missingPermits() {
        runner.withPropertyValues("sema.semaphores.db.max-permits=5")
                .run(failsWith("sema.semaphores.db.permits", "(not set)", "is required"));
    }

    @Test
    void maxPermitsBelowPermitsNamesTheFileAndLine() {
        runner.withInitializer(context -> YamlFiles.load(context, "bad-max-permits.yml"))
                .run(context -> {
                    SemaConfigurationException e = failure(context);
                    assertThat(e.setting()).isEqualTo("sema.semaphores.db.max-permits");
                    assertThat(e.value()).isEqualTo("5");
                    assertThat(e.reason()).isEqualTo("must not be below sema.semaphores.db.permits (10)");
                    assertThat(e.origin()).contains("bad-max-permits.yml").contains("5:20");
                    FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
                    assertThat(analysis.getDescription()).contains("Property: sema.semaphores.db.max-permits",
                            "Value: \"5\"", "Origin: class path resource [bad-max-permits.yml]",
                            "Reason: must not be below sema.semaphores.db.permits (10)");
                    assertThat(analysis.getAction()).contains("Raise sema.semaphores.db.max-permits to at least 10");
                });
    }

    @Test
    void unknownFairnessIsReportedBySpringBootsBinder() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.fairness=fast")
                .run(context -> {
                    assertThat(context).hasFailed();
                    String messages = allMessages(context.getStartupFailure());
                    assertThat(messages).contains("sema.semaphores.db.fairness").contains("fast")
                            .contains("dev.sema.Fairness");
                });
    }

    @Test
    void redisTrueWithoutRedis() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.redis=true")
                .run(failsWith("sema.semaphores.db.redis", "true", "there is no Redis"));
    }

    @Test
    void redisTrueWithoutSemaRedisOnTheClassPath() {
        runner.withClassLoader(new FilteredClassLoader("dev.sema.redis."))
                .withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.redis=true")
                .run(failsWith("sema.semaphores.db.redis", "true", "sema-redis is not on the class path"));
    }

    @Test
    void webSemaphoreNamingNoSemaphore() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebAutoConfiguration.class))
                .withPropertyValues("sema.semaphores.db.permits=1", "sema.web.semaphore=inbound")
                .run(failsWith("sema.web.semaphore", "inbound", "names no semaphore (there are [db])"));
    }

    @Test
    void negativeMaxWait() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebAutoConfiguration.class))
                .withPropertyValues("sema.semaphores.db.permits=1", "sema.web.semaphore=db", "sema.web.max-wait=-1s")
                .run(failsWith("sema.web.max-wait", "-1s", "must not be negative"));
    }

    @Test
    void refillWithoutPeriod() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.refill.permits=1")
                .run(failsWith("sema.semaphores.db.refill.period", "(not set)", "is required with a refill"));
    }

    @Test
    void adaptiveWithoutAlgorithm() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.adaptive.min-limit=1")
                .run(failsWith("sema.semaphores.db.adaptive.algorithm", "(not set)", "is required"));
    }

    @Test
    void adaptiveMinLimitAboveTheCeiling() {
        runner.withPropertyValues("sema.semaphores.db.permits=10", "sema.semaphores.db.adaptive.algorithm=gradient",
                "sema.semaphores.db.adaptive.min-limit=20")
                .run(failsWith("sema.semaphores.db.adaptive.min-limit", "20", "is above the highest limit"));
    }

    @Test
    void bargingRedisSemaphore() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.redis=true",
                "sema.semaphores.db.fairness=barging")
                .run(failsWith("sema.semaphores.db.fairness", "barging", "a Redis semaphore is always fifo"));
    }

    @Test
    void leaseOutOfRange() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.redis=true",
                "sema.semaphores.db.lease=10ms")
                .run(failsWith("sema.semaphores.db.lease", "10ms", "must be between 100ms and 1d"));
    }

    @Test
    void invalidRedisUri() {
        runner.withPropertyValues("sema.redis.uri=localhost:6379")
                .run(failsWith("sema.redis.uri", "localhost:6379", "is not a Redis URI"));
    }

    @Test
    void unreachableRedisStopsTheStartWithFailFastAndHidesThePassword() {
        runner.withPropertyValues("sema.redis.uri=redis://app:s3cret@127.0.0.1:1?timeout=2s", "sema.redis.fail-fast=true")
                .run(context -> {
                    SemaConfigurationException e = failure(context);
                    assertThat(e.setting()).isEqualTo("sema.redis.uri");
                    assertThat(e.value()).isEqualTo("redis://app:***@127.0.0.1:1?timeout=2s");
                    assertThat(e.reason()).startsWith("Redis cannot be reached");
                    assertThat(e.getMessage()).doesNotContain("s3cret");
                    assertThat(new SemaFailureAnalyzer().analyze(context.getStartupFailure()).getDescription())
                            .doesNotContain("s3cret");
                });
    }

    @Test
    void unreachableRedisStopsTheStartWithFailFastWhenASemaphoreIsOpened() {
        runner.withPropertyValues("sema.redis.uri=redis://127.0.0.1:1?timeout=2s", "sema.redis.fail-fast=true",
                "sema.semaphores.db.permits=1", "sema.semaphores.db.redis=true")
                .run(failsWith("sema.redis.uri", "redis://127.0.0.1:1?timeout=2s", "Redis cannot be reached"));
    }

    @Test
    void withoutFailFastAnUnreachableRedisLetsTheApplicationStart() {
        runner.withPropertyValues("sema.redis.uri=redis://app:s3cret@127.0.0.1:1?timeout=2s",
                "sema.semaphores.db.permits=1", "sema.semaphores.db.redis=true").run(context -> {
                    assertThat(context.getStartupFailure()).isNull();
                    dev.sema.Semaphore db = context.getBean(SemaphoreRegistry.class).get("db");
                    assertThat(SemaphoreState.kind(db)).isEqualTo("redis");
                    assertThat(db.maxPermits()).isEqualTo(1);
                    assertThatThrownBy(() -> db.tryAcquire(1)).isInstanceOf(dev.sema.redis.RedisSemaphoreException.class)
                            .hasMessageContaining("semaphore 'db'").hasMessageContaining("not open yet")
                            .message().doesNotContain("s3cret");
                    assertThatThrownBy(() -> db.tryAcquire(2)).isInstanceOf(IllegalArgumentException.class);
                });
    }

    @Test
    void webFilterOnASemaphoreWithNoPermitToGive() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebAutoConfiguration.class))
                .withPropertyValues("sema.semaphores.inbound.permits=0", "sema.web.semaphore=inbound")
                .run(failsWith("sema.web.semaphore", "inbound", "has max-permits 0"));
    }

    @Test
    void webExcludePathNotStartingWithASlash() {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebAutoConfiguration.class))
                .withPropertyValues("sema.semaphores.inbound.permits=1", "sema.web.semaphore=inbound",
                        "sema.web.exclude-paths=/health,actuator/**")
                .run(failsWith("sema.web.exclude-paths", "/health,actuator/**", "'actuator/**' must start with /"));
    }

    @Test
    void withPermitsNamingNoSemaphore() {
        runner.withPropertyValues("sema.semaphores.db.permits=1").withUserConfiguration(Unknown.class)
                .run(context -> {
                    SemaConfigurationException e = failure(context);
                    assertThat(e.kind()).isEqualTo(SemaConfigurationException.Kind.ANNOTATION);
                    assertThat(e.setting()).isEqualTo("@WithPermits(value) on " + UnknownService.class.getName()
                            + ".call");
                    assertThat(e.value()).isEqualTo("nope");
                    assertThat(e.reason()).contains("names no semaphore in the registry (it has [db])");
                });
    }

    @Test
    void withPermitsTimeoutThatIsNoDuration() {
        runner.withPropertyValues("sema.semaphores.db.permits=1").withUserConfiguration(BadTimeout.class)
                .run(failsWith("@WithPermits(timeout) on " + BadTimeoutService.class.getName() + ".call", "soon",
                        "is not a duration"));
    }

    @Test
    void withPermitsAskingMoreThanTheCeiling() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.max-permits=2")
                .withUserConfiguration(TooMany.class)
                .run(failsWith("@WithPermits(permits) on " + TooManyService.class.getName() + ".call", "3",
                        "must be between 0 and the semaphore's max-permits (2)"));
    }

    @Test
    void withPermitsPlaceholdersAreResolved() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "app.semaphore=db", "app.timeout=50ms")
                .withUserConfiguration(Placeholders.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(PlaceholderService.class).call()).isEqualTo("ok");
                });
    }

    @Test
    void springApplicationPrintsTheReport(CapturedOutput output) {
        SpringApplicationBuilder app = new SpringApplicationBuilder(Plain.class).web(WebApplicationType.NONE)
                .properties("sema.semaphores.db.permits=-3", "spring.main.banner-mode=off");
        assertThatThrownBy(app::run).isInstanceOf(BeanCreationException.class);
        assertThat(output).contains("APPLICATION FAILED TO START", "Invalid Sema configuration:",
                "Property: sema.semaphores.db.permits", "Value: \"-3\"", "Reason: must be between 0 and");
    }

    private static <C extends ApplicationContextAssertProvider<?>> ContextConsumer<C> failsWith(String setting,
            String value, String reason) {
        return context -> {
            SemaConfigurationException e = failure(context);
            assertThat(e.setting()).isEqualTo(setting);
            assertThat(e.value()).isEqualTo(value);
            assertThat(e.reason()).contains(reason);
            assertThat(e.getMessage()).contains(setting).contains(value);
            FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis).isNotNull();
            assertThat(analysis.getDescription()).contains(setting).contains("Value: \"" + value + "\"");
        };
    }

    static SemaConfigurationException failure(ApplicationContextAssertProvider<?> context) {
        assertThat(context.getStartupFailure()).as("the startup failure").isNotNull();
        Throwable t = context.getStartupFailure();
        while (t != null && !(t instanceof SemaConfigurationException)) {
            t = t.getCause();
        }
        assertThat(t).as("a SemaConfigurationException in %s", context.getStartupFailure()).isNotNull();
        return (SemaConfigurationException) t;
    }

    private static String allMessages(Throwable t) {
        StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c.getMessage()).append('\n');
        }
        all.append(NestedExceptionUtils.getMostSpecificCause(t).getMessage());
        return all.toString();
    }

    @Configuration(proxyBeanMethods = false)
    @org.springframework.boot.autoconfigure.ImportAutoConfiguration({ SemaRedisAutoConfiguration.class,
            SemaAutoConfiguration.class })
    static class Plain {
    }

    static class UnknownService {
        @WithPermits("nope")
        public String call() {
            return "ok";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Unknown {
        @Bean
        UnknownService unknownService() {
            return new UnknownService();
        }
    }

    static class BadTimeoutService {
        @WithPermits(value = "db", timeout = "soon")
        public String call() {
            return "ok";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadTimeout {
        @Bean
        BadTimeoutService badTimeoutService() {
            return new BadTimeoutService();
        }
    }

    static class TooManyService {
        @WithPermits(value = "db", permits = 3)
        public CompletableFuture<String> call() {
            return CompletableFuture.completedFuture("ok");
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TooMany {
        @Bean
        TooManyService tooManyService() {
            return new TooManyService();
        }
    }

    static class PlaceholderService {
        @WithPermits(value = "${app.semaphore}", timeout = "${app.timeout}")
        public String call() {
            return "ok";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Placeholders {
        @Bean
        PlaceholderService placeholderService() {
            return new PlaceholderService();
        }
    }
}
