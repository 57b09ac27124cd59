package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.internal.Partitioned;
import dev.sema.internal.Partitioned.PartitionState;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.env.PropertiesPropertySourceLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ContextConsumer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.PropertiesPropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.core.io.ClassPathResource;

/**
 * {@code sema.semaphores.<name>.partitions}: the order written is the priority, whatever source declares or
 * overrides a share; a mistake stops the start naming the property and the value.
 */
@Timeout(30)
class PartitionPropertiesTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaRedisAutoConfiguration.class, SemaAutoConfiguration.class));

    @Test
    void yamlOrderIsThePriority() {
        runner.withInitializer(c -> YamlFiles.load(c, "partitions.yml")).run(context -> {
            Semaphore api = context.getBean(SemaphoreRegistry.class).get("api");
            assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch");
            assertThat(states(api)).extracting(PartitionState::guarantee).containsExactly(60L, 30L, 10L);
        });
    }

    @Test
    void applicationPropertiesOrderIsThePriority() {
        runner.withInitializer(c -> loadProperties(c, "partitions.properties")).run(context ->
                assertThat(context.getBean(SemaphoreRegistry.class).get("api").partitionNames())
                        .containsExactly("checkout", "browse", "batch"));
    }

    @Test
    void inlinePropertiesKeepTheirOrder() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.partitions.zeta=0.5",
                "sema.semaphores.api.partitions.alpha=0.2", "sema.semaphores.api.partitions.mid=0.1")
                .run(context -> assertThat(context.getBean(SemaphoreRegistry.class).get("api").partitionNames())
                        .containsExactly("zeta", "alpha", "mid"));
    }

    @Test
    void anEnvironmentVariableChangingAShareKeepsThePartitionsPlace() {
        // Spring Boot's binder alone would put batch first: the source of highest precedence is read first.
        runner.withInitializer(c -> {
            YamlFiles.load(c, "partitions.yml");
            environment(c, Map.of("SEMA_SEMAPHORES_API_PARTITIONS_BATCH", "0.05"));
        }).run(context -> {
            Semaphore api = context.getBean(SemaphoreRegistry.class).get("api");
            assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch");
            assertThat(states(api)).extracting(PartitionState::guarantee).containsExactly(60L, 30L, 5L);
        });
    }

    @Test
    void aSystemPropertyChangingAShareKeepsThePartitionsPlace() {
        Properties system = new Properties();
        system.setProperty("sema.semaphores.api.partitions.browse", "0.2");
        runner.withInitializer(c -> {
            YamlFiles.load(c, "partitions.yml");
            c.getEnvironment().getPropertySources().addFirst(new PropertiesPropertySource("test-systemProperties",
                    system));
        }).run(context -> {
            Semaphore api = context.getBean(SemaphoreRegistry.class).get("api");
            assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch");
            assertThat(states(api)).extracting(PartitionState::guarantee).containsExactly(60L, 20L, 10L);
        });
    }

    @Test
    void aProfileAddingAPartitionPutsItAfterTheOthers() {
        runner.withInitializer(c -> {
            YamlFiles.load(c, "partitions.yml");
            YamlFiles.loadFirst(c, "partitions-profile.yml"); // as application-<profile>.yml: above application.yml
        }).run(context -> {
            Semaphore api = context.getBean(SemaphoreRegistry.class).get("api");
            assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch", "internal");
            assertThat(states(api)).extracting(PartitionState::guarantee).containsExactly(60L, 30L, 5L, 0L);
        });
    }

    @Test
    void oneEnvironmentVariableMayAddAPartition() {
        runner.withInitializer(c -> {
            YamlFiles.load(c, "partitions.yml");
            environment(c, Map.of("SEMA_SEMAPHORES_API_PARTITIONS_INTERNAL", "0"));
        }).run(failsWith("sema.semaphores.api.partitions.internal", "0", "a share must be greater than 0"));
        // Two variables, but only one partition that no ordered source placed: its place is known.
        Map<String, Object> variables = new LinkedHashMap<>();
        variables.put("SEMA_SEMAPHORES_API_PARTITIONS_INTERNAL", "0.01");
        variables.put("SEMA_SEMAPHORES_API_PARTITIONS_BATCH", "0.05");
        runner.withInitializer(c -> {
            YamlFiles.load(c, "partitions.yml");
            environment(c, variables);
        }).run(context -> {
            Semaphore api = context.getBean(SemaphoreRegistry.class).get("api");
            assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch", "internal");
            assertThat(states(api)).extracting(PartitionState::guarantee).containsExactly(60L, 30L, 5L, 1L);
        });
    }

    @Test
    void partitionsDeclaredOnlyInEnvironmentVariablesHaveNoOrderAndStopTheStart() {
        Map<String, Object> variables = new LinkedHashMap<>();
        variables.put("SEMA_SEMAPHORES_API_PERMITS", "10");
        variables.put("SEMA_SEMAPHORES_API_PARTITIONS_CHECKOUT", "0.6");
        variables.put("SEMA_SEMAPHORES_API_PARTITIONS_BATCH", "0.1");
        runner.withInitializer(c -> environment(c, variables))
                .run(failsWith("sema.semaphores.api.partitions", "[checkout, batch]",
                        "are declared only in test-systemEnvironment, which has no order"));
    }

    @Test
    void aShareAboveOne() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.partitions.checkout=0.5",
                "sema.semaphores.api.partitions.batch=1.5")
                .run(failsWith("sema.semaphores.api.partitions.batch", "1.5",
                        "partition 'batch' of semaphore 'api' has share 1.5; a share must be greater than 0 and at"
                                + " most 1"));
    }

    @Test
    void aShareOfZeroOrBelow() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.partitions.batch=-0.1")
                .run(failsWith("sema.semaphores.api.partitions.batch", "-0.1", "a share must be greater than 0"));
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.partitions.batch=0")
                .run(failsWith("sema.semaphores.api.partitions.batch", "0", "a share must be greater than 0"));
    }

    @Test
    void aShareThatIsNoNumberIsReportedBySpringBootsBinder() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.partitions.batch=tenth")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(allMessages(context.getStartupFailure()))
                            .contains("sema.semaphores.api.partitions.batch").contains("tenth");
                });
    }

    @Test
    void sharesAddingUpToMoreThanOneNameEachTerm() {
        runner.withInitializer(c -> YamlFiles.load(c, "partitions-too-much.yml"))
                .run(context -> {
                    SemaConfigurationException e = BadConfigurationTest.failure(context);
                    assertThat(e.setting()).isEqualTo("sema.semaphores.api.partitions");
                    assertThat(e.value()).isEqualTo("{checkout=0.6, browse=0.3, batch=0.2}");
                    assertThat(e.reason()).isEqualTo("the shares of the partitions of semaphore 'api' add up to 1.1"
                            + " (checkout 0.6 + browse 0.3 + batch 0.2); they must add up to at most 1");
                    FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
                    assertThat(analysis.getDescription()).contains("Property: sema.semaphores.api.partitions",
                            "Value: \"{checkout=0.6, browse=0.3, batch=0.2}\"", "add up to 1.1");
                    assertThat(analysis.getAction()).contains("add up to at most 1");
                });
    }

    @Test
    void namesThatRelaxedBindingTakesForOneAreDuplicates() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.partitions.big-batch=0.1",
                "sema.semaphores.api.partitions[bigBatch]=0.2")
                .run(failsWith("sema.semaphores.api.partitions[bigBatch]", "0.2",
                        "partitions 'big-batch' and 'bigBatch' are one name to Spring Boot's relaxed binding"));
    }

    @Test
    void aBargingSemaphoreCannotBePartitioned() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.fairness=barging",
                "sema.semaphores.api.partitions.batch=0.1")
                .run(failsWith("sema.semaphores.api.fairness", "barging", "needs fifo"));
    }

    @Test
    void aRedisSemaphoresPartitionsAreCheckedAsALocalOnesAreBeforeRedisIsAsked() {
        runner.withPropertyValues("sema.semaphores.api.permits=10", "sema.semaphores.api.redis=true",
                "sema.semaphores.api.partitions.batch=1.5")
                .run(failsWith("sema.semaphores.api.partitions.batch", "1.5", "share"));
    }

    @Test
    void theRegistryHandsOutPartitionViews() {
        runner.withInitializer(c -> YamlFiles.load(c, "partitions.yml")).run(context -> {
            SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
            Semaphore batch = registry.get("api").partition("batch");
            assertThat(batch.name()).isEqualTo("api/batch");
            assertThat(registry.all()).containsOnlyKeys("api"); // views are not registry entries
            try (Permit p = batch.tryAcquire(3).orElseThrow()) {
                assertThat(states(registry.get("api"))).extracting(PartitionState::used).containsExactly(0L, 0L, 3L);
            }
        });
    }

    @Test
    void anUnpartitionedSemaphoreHasNone() {
        runner.withPropertyValues("sema.semaphores.db.permits=10").run(context ->
                assertThat(context.getBean(SemaphoreRegistry.class).get("db").partitionNames()).isEmpty());
    }

    static List<PartitionState> states(Semaphore s) {
        return ((Partitioned) s).partitionStates();
    }

    /** Environment variables, as the operating system would give them (mapped as Spring Boot maps them). */
    private static void environment(ConfigurableApplicationContext context, Map<String, Object> variables) {
        context.getEnvironment().getPropertySources().addFirst(new SystemEnvironmentPropertySource(
                "test-systemEnvironment", variables));
    }

    private static void loadProperties(ConfigurableApplicationContext context, String file) {
        try {
            for (PropertySource<?> source : new PropertiesPropertySourceLoader().load(file,
                    new ClassPathResource(file))) {
                context.getEnvironment().getPropertySources().addLast(source);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ContextConsumer<AssertableApplicationContext> failsWith(String setting, String value,
            String reason) {
        return context -> {
            SemaConfigurationException e = BadConfigurationTest.failure(context);
            assertThat(e.setting()).isEqualTo(setting);
            assertThat(e.value()).isEqualTo(value);
            assertThat(e.reason()).contains(reason);
            FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis.getDescription()).contains("Property: " + setting, "Value: \"" + value + "\"");
        };
    }

    private static String allMessages(Throwable t) {
        StringBuilder all = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.append(c.getMessage()).append('\n');
        }
        return all.toString();
    }
}
