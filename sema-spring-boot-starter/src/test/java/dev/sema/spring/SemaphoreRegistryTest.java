package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.AdaptiveLimit;
import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.NoSuchElementException;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** sema.semaphores.* into the SemaphoreRegistry: order, kinds, every option; and backing off for the application's own registry. */
@Timeout(30)
class SemaphoreRegistryTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaRedisAutoConfiguration.class, SemaAutoConfiguration.class));

    @Test
    void propertiesBecomeSemaphoresInConfigurationOrder() {
        runner.withPropertyValues(
                "sema.semaphores.zeta.permits=1",
                "sema.semaphores.db.permits=10",
                "sema.semaphores.db.max-permits=50",
                "sema.semaphores.db.fairness=barging",
                "sema.semaphores.alpha.permits=0",
                "sema.semaphores.alpha.max-permits=4")
                .run(context -> {
                    SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
                    assertThat(registry.all()).containsOnlyKeys("zeta", "db", "alpha");
                    assertThat(registry.all().keySet()).containsExactly("zeta", "db", "alpha");
                    Semaphore db = registry.get("db");
                    assertThat(db.name()).isEqualTo("db");
                    assertThat(db.permits()).isEqualTo(10);
                    assertThat(db.maxPermits()).isEqualTo(50);
                    assertThat(db.fairness()).isEqualTo(Fairness.BARGING);
                    assertThat(SemaphoreState.kind(db)).isEqualTo("local");
                    assertThat(registry.get("zeta").maxPermits()).isEqualTo(1);
                    assertThat(registry.get("zeta").fairness()).isEqualTo(Fairness.FIFO);
                    assertThat(registry.get("alpha").permits()).isZero();
                    assertThat(registry.find("nope")).isEmpty();
                    assertThat(registry.adaptive("db")).isEmpty();
                    assertThatThrownBy(() -> registry.get("nope")).isInstanceOf(NoSuchElementException.class)
                            .hasMessageContaining("'nope'").hasMessageContaining("[zeta, db, alpha]");
                    assertThatThrownBy(() -> registry.all().put("x", db)).isInstanceOf(UnsupportedOperationException.class);
                });
    }

    @Test
    void yamlOrderIsKept() {
        runner.withInitializer(context -> YamlFiles.load(context, "registry-order.yml")).run(context ->
                assertThat(context.getBean(SemaphoreRegistry.class).all().keySet())
                        .containsExactly("payments", "db", "api", "cache"));
    }

    @Test
    void refillAddsCreditEveryPeriod() {
        runner.withPropertyValues(
                "sema.semaphores.credit.permits=0",
                "sema.semaphores.credit.max-permits=5",
                "sema.semaphores.credit.refill.permits=1",
                "sema.semaphores.credit.refill.period=20ms")
                .run(context -> {
                    Semaphore credit = context.getBean(SemaphoreRegistry.class).get("credit");
                    try (Permit p = credit.acquire(2, Duration.ofSeconds(5))) {
                        assertThat(p.permits()).isEqualTo(2);
                    }
                });
    }

    @Test
    void adaptiveLimitControlsTheSemaphore() {
        runner.withPropertyValues(
                "sema.semaphores.partner.permits=20",
                "sema.semaphores.partner.max-permits=100",
                "sema.semaphores.partner.adaptive.algorithm=aimd",
                "sema.semaphores.partner.adaptive.min-limit=4",
                "sema.semaphores.partner.adaptive.max-limit=60",
                "sema.semaphores.partner.adaptive.initial-limit=30",
                "sema.semaphores.latency.permits=8",
                "sema.semaphores.latency.adaptive.algorithm=gradient")
                .run(context -> {
                    SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
                    Optional<AdaptiveLimit> adaptive = registry.adaptive("partner");
                    assertThat(adaptive).isPresent();
                    assertThat(adaptive.get().limit()).isEqualTo(30);
                    assertThat(registry.get("partner").permits()).isEqualTo(30);
                    adaptive.get().dropped();
                    assertThat(registry.get("partner").permits()).isEqualTo(27); // x 0.9
                    assertThat(registry.adaptive("latency")).isPresent();
                    assertThat(registry.get("latency").permits()).isEqualTo(8);
                });
    }

    @Test
    void leakDetectionIsPassedOn() {
        runner.withPropertyValues("sema.semaphores.db.permits=1", "sema.semaphores.db.leak-detection=paranoid")
                .run(context -> assertThat(context.getBean(SemaphoreRegistry.class).get("db").toString())
                        .contains("db"));
    }

    @Test
    void namesThatNeedBracketsAreKeptAsWritten() {
        runner.withPropertyValues("sema.semaphores[Partner.API].permits=3")
                .run(context -> assertThat(context.getBean(SemaphoreRegistry.class).get("Partner.API").permits())
                        .isEqualTo(3));
    }

    @Test
    void noSemaphoresMakesAnEmptyRegistry() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(SemaphoreRegistry.class).all()).isEmpty();
            assertThat(context).doesNotHaveBean("redisSemaphores");
        });
    }

    @Test
    void closingTheContextClosesLocalSemaphoresAndAdaptiveLimits() {
        Semaphore[] db = new Semaphore[1];
        AdaptiveLimit[] adaptive = new AdaptiveLimit[1];
        runner.withPropertyValues("sema.semaphores.db.permits=4", "sema.semaphores.db.adaptive.algorithm=aimd")
                .run(context -> {
                    db[0] = context.getBean(SemaphoreRegistry.class).get("db");
                    adaptive[0] = context.getBean(SemaphoreRegistry.class).adaptive("db").orElseThrow();
                    assertThat(db[0].isClosed()).isFalse();
                });
        assertThat(db[0].isClosed()).isTrue();
        long limit = db[0].permits();
        adaptive[0].dropped(); // closed: no longer adjusts
        assertThat(db[0].permits()).isEqualTo(limit);
    }

    @Test
    void backsOffForTheApplicationsOwnRegistry() {
        runner.withUserConfiguration(OwnRegistryConfiguration.class).withPropertyValues("sema.semaphores.db.permits=10")
                .run(context -> {
                    assertThat(context).hasSingleBean(SemaphoreRegistry.class);
                    SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
                    assertThat(registry.all()).containsOnlyKeys("own");
                    assertThat(registry).isSameAs(context.getBean("ownRegistry"));
                });
    }
}
