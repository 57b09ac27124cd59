package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.internal.Partitioned;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.ApplicationContextAssertProvider;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ContextConsumer;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code sema.keyed.<name>} (API.md §11c): a local family per entry, its parent a semaphore or a partition of one;
 * {@code @WithPermits(key)} and {@code sema.web.keyed}/{@code sema.web.key} checked at startup; every mistake stops
 * the start naming the setting and the value.
 */
@Timeout(30)
class KeyedPropertiesTest {
    private static final String[] API = { "sema.semaphores.api.permits=10",
            "sema.semaphores.api.partitions.checkout=0.6", "sema.semaphores.api.partitions.batch=0.2",
            "sema.semaphores.db.permits=5" };
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaRedisAutoConfiguration.class, SemaAutoConfiguration.class))
            .withPropertyValues(API);
    private final WebApplicationContextRunner web = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebAutoConfiguration.class))
            .withPropertyValues(API).withPropertyValues("sema.keyed.exports.permits=2");

    @Test
    void aFamilyIsBuiltFromItsPropertiesWithAPartitionAsParent() {
        runner.withPropertyValues("sema.keyed.exports.permits=2", "sema.keyed.exports.max-keys=3",
                "sema.keyed.exports.parent=api/batch").run(context -> {
                    SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
                    KeyedSemaphore<Object> exports = registry.keyed("exports");
                    assertThat(exports.name()).isEqualTo("exports");
                    assertThat(exports.maxKeys()).isEqualTo(3);
                    assertThat(registry.allKeyed()).containsOnlyKeys("exports");
                    assertThat(registry.all()).containsOnlyKeys("api", "db"); // families are not semaphores
                    Semaphore acme = exports.get("acme");
                    try (Permit p = acme.acquire(2)) {
                        assertThat(acme.tryAcquire()).as("the key's limit").isEmpty();
                        assertThat(((Partitioned) registry.get("api")).partitionStates())
                                .extracting(Partitioned.PartitionState::used).as("the parent's too")
                                .containsExactly(0L, 2L);
                        assertThat(exports.size()).isEqualTo(1);
                    }
                    assertThat(exports.size()).isZero();
                    assertThat(exports.get(42).name()).as("keys compared as given").isEqualTo("exports[42]");
                });
    }

    @Test
    void aSemaphoreMayBeTheParentAndMaxKeysDefaultsToOneHundredThousand() {
        runner.withPropertyValues("sema.keyed.exports.permits=3", "sema.keyed.exports.parent=db").run(context -> {
            SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
            KeyedSemaphore<Object> exports = registry.keyed("exports");
            assertThat(exports.maxKeys()).isEqualTo(100_000);
            try (Permit p = exports.get("acme").acquire(3)) {
                assertThat(registry.get("db").availablePermits()).isEqualTo(2);
            }
        });
    }

    @Test
    void unknownFamiliesAndSemaphoresAreNamedWithTheKnownOnes() {
        runner.withPropertyValues("sema.keyed.exports.permits=1").run(context -> {
            SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
            assertThatThrownBy(() -> registry.keyed("imports")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'imports'").hasMessageContaining("[exports]");
            assertThatThrownBy(() -> registry.keyed("db")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'db' is a semaphore");
            assertThatThrownBy(() -> registry.get("exports")).isInstanceOf(NoSuchElementException.class)
                    .hasMessageContaining("'exports' is a keyed family");
        });
        runner.run(context -> assertThatThrownBy(() -> context.getBean(SemaphoreRegistry.class).keyed("exports"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sema.keyed configures none"));
    }

    @Test
    void familiesAreClosedWithTheContext() {
        KeyedSemaphore<?>[] family = new KeyedSemaphore<?>[1];
        runner.withPropertyValues("sema.keyed.exports.permits=1")
                .run(context -> family[0] = context.getBean(SemaphoreRegistry.class).keyed("exports"));
        assertThat(family[0].isClosed()).isTrue();
        @SuppressWarnings("unchecked")
        KeyedSemaphore<Object> closed = (KeyedSemaphore<Object>) family[0];
        assertThatThrownBy(() -> closed.get("acme").tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
    }

    @Test
    void badFamilyProperties() {
        runner.withPropertyValues("sema.keyed.exports.max-keys=5")
                .run(failsWith("sema.keyed.exports.permits", "(not set)", "is required"));
        runner.withPropertyValues("sema.keyed.exports.permits=-1")
                .run(failsWith("sema.keyed.exports.permits", "-1", "must be between 0 and"));
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.max-keys=0")
                .run(failsWith("sema.keyed.exports.max-keys", "0", "must be at least 1"));
        runner.withPropertyValues("sema.keyed.exports.permits=5", "sema.keyed.exports.max-permits=2")
                .run(failsWith("sema.keyed.exports.max-permits", "2", "must not be below sema.keyed.exports.permits"));
        runner.withPropertyValues("sema.keyed.db.permits=1")
                .run(failsWith("sema.keyed.db.permits", "1", "'db' is also a semaphore (sema.semaphores.db)"));
    }

    @Test
    void anUnknownParentStopsTheStart() {
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.parent=nope")
                .run(failsWith("sema.keyed.exports.parent", "nope", "names no semaphore (there are [api, db])"));
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.parent=api/bulk")
                .run(failsWith("sema.keyed.exports.parent", "api/bulk",
                        "names no partition of semaphore 'api' (its partitions are [checkout, batch])"));
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.parent=db/batch")
                .run(failsWith("sema.keyed.exports.parent", "db/batch", "semaphore 'db' has no partitions"));
    }

    @Test
    void aRedisFamilyRefusesWhatHasNoMeaningOnRedisNamingTheProperty() {
        String[] redisFamily = { "sema.keyed.exports.permits=1", "sema.keyed.exports.redis=true" };
        runner.withPropertyValues(redisFamily).withPropertyValues("sema.keyed.exports.max-permits=3")
                .run(context -> {
                    failsWith("sema.keyed.exports.max-permits", "3", "applies to local keyed families only")
                            .accept(context);
                    FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
                    assertThat(analysis.getAction()).contains("Remove sema.keyed.exports.max-permits",
                            "sema.keyed.exports.redis=false");
                });
        runner.withPropertyValues(redisFamily).withPropertyValues("sema.keyed.exports.leak-detection=sampled")
                .run(failsWith("sema.keyed.exports.leak-detection", "sampled", "applies to local keyed families"
                        + " only (on Redis, a key's lease returns"));
        runner.withPropertyValues(redisFamily).withPropertyValues("sema.keyed.exports.lease=10ms")
                .run(failsWith("sema.keyed.exports.lease", "10ms", "must be between 100ms and 1d"));
        runner.withPropertyValues(redisFamily).withPropertyValues("sema.keyed.exports.expire-when-idle=10ms")
                .run(failsWith("sema.keyed.exports.expire-when-idle", "10ms", "must be between 1s and 365d"));
        runner.withPropertyValues(redisFamily).withPropertyValues("sema.keyed.exports.parent=nope")
                .run(failsWith("sema.keyed.exports.parent", "nope", "names no semaphore (there are [api, db])"));
        runner.withPropertyValues(redisFamily).withPropertyValues("sema.keyed.exports.max-keys=0")
                .run(failsWith("sema.keyed.exports.max-keys", "0", "must be at least 1"));
    }

    @Test
    void aRedisFamilyWithoutRedisStopsTheStart() {
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.redis=true").run(context -> {
            failsWith("sema.keyed.exports.redis", "true", "there is no Redis to keep it in").accept(context);
            FailureAnalysis analysis = new SemaFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis.getAction()).contains("sema.redis.uri", "make the family local with"
                    + " sema.keyed.exports.redis=false");
        });
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SemaRedisAutoConfiguration.class, SemaAutoConfiguration.class))
                .withClassLoader(new FilteredClassLoader("dev.sema.redis"))
                .withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.redis=true")
                .run(failsWith("sema.keyed.exports.redis", "true", "sema-redis is not on the class path"));
    }

    @Test
    void aLocalFamilyIgnoresTheRedisOnlyOptions() {
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.lease=5s",
                "sema.keyed.exports.expire-when-idle=1m").run(context -> {
                    assertThat(context).hasNotFailed();
                    KeyedSemaphore<Object> exports = context.getBean(SemaphoreRegistry.class).keyed("exports");
                    assertThat(SemaphoreState.isRedis(exports)).isFalse();
                    assertThat(exports.get("acme").name()).isEqualTo("exports[acme]");
                });
    }

    /** Redis not reachable (nothing listens on the port): the family starts refusing, and checks keys all the same. */
    @Test
    void aRedisFamilyRefusesAnEmptyKeyOrOneWithABraceBeforeRedisIsReached() {
        runner.withUserConfiguration(Keyed.class)
                .withPropertyValues("sema.redis.uri=redis://127.0.0.1:1?timeout=1s", "sema.keyed.exports.permits=1",
                        "sema.keyed.exports.redis=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    KeyedSemaphore<Object> exports = context.getBean(SemaphoreRegistry.class).keyed("exports");
                    assertThat(SemaphoreState.isRedis(exports)).isTrue();
                    assertThat(exports.get(42)).as("keys are String.valueOf(key)").isEqualTo(exports.get("42"));
                    assertThat(exports.get(42).name()).isEqualTo("exports:42");
                    assertThatThrownBy(() -> exports.get("a{b}")).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("key 'a{b}' of keyed semaphore 'exports' contains a brace");
                    assertThatThrownBy(() -> exports.get("")).isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("key '' of keyed semaphore 'exports' is empty");
                    KeyedService service = context.getBean(KeyedService.class);
                    assertThatThrownBy(() -> service.export(new Tenant("a}")))
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("@WithPermits(key = \"#tenant.id\") on ", "export",
                                    "gave the key 'a}', which the family refuses (the call was not made)",
                                    "contains a brace");
                    assertThatThrownBy(() -> service.exportAsync(new Tenant("")).join())
                            .isInstanceOf(CompletionException.class)
                            .cause().isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("gave the key ''", "is empty");
                    assertThatThrownBy(() -> service.tryExport("a{")).as("no fallback: a bad key is no refusal")
                            .isInstanceOf(IllegalArgumentException.class);
                });
    }

    // ---------------------------------------------------------------- @WithPermits(key)

    @Test
    void withPermitsKeyHoldsThePermitsOfTheCallsKey() {
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.parent=api/batch")
                .withUserConfiguration(Keyed.class).run(context -> {
                    assertThat(context).hasNotFailed();
                    KeyedService service = context.getBean(KeyedService.class);
                    KeyedSemaphore<Object> exports = context.getBean(SemaphoreRegistry.class).keyed("exports");
                    assertThat(service.export(new Tenant("acme"))).isEqualTo("acme held 0 left, 1 live key");
                    assertThat(service.exportByIndex("bravo")).isEqualTo("bravo held 0 left, 1 live key");
                    assertThat(service.exportAsync(new Tenant("acme")).join()).isEqualTo("acme held 0 left, 1 live key");
                    assertThat(exports.size()).isZero();
                    try (Permit held = exports.get("acme").acquire()) {
                        assertThatThrownBy(() -> service.export(new Tenant("acme")))
                                .isInstanceOf(PermitUnavailableException.class)
                                .satisfies(e -> assertThat(((PermitUnavailableException) e).semaphore())
                                        .isEqualTo("exports[acme]"));
                        assertThat(service.export(new Tenant("bravo"))).as("another key is not held up")
                                .isEqualTo("bravo held 0 left, 2 live key");
                    }
                });
    }

    @Test
    void aNullKeyFailsTheCallAndIsNeverASharedKey() {
        runner.withPropertyValues("sema.keyed.exports.permits=1").withUserConfiguration(Keyed.class).run(context -> {
            KeyedService service = context.getBean(KeyedService.class);
            assertThatThrownBy(() -> service.export(new Tenant(null))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("#tenant.id").hasMessageContaining("gave null")
                    .hasMessageContaining(KeyedService.class.getName() + ".export");
            assertThatThrownBy(() -> service.export(null)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("could not be evaluated");
            CompletableFuture<String> async = service.exportAsync(new Tenant(null));
            assertThatThrownBy(async::join).isInstanceOf(CompletionException.class)
                    .hasCauseInstanceOf(IllegalArgumentException.class);
            assertThat(service.calls).as("the method never ran").isEqualTo(0);
            assertThat(context.getBean(SemaphoreRegistry.class).keyed("exports").get("null").availablePermits())
                    .isEqualTo(1);
        });
    }

    @Test
    void tooManyKeysIsARefusalThatTheFallbackAnswers() {
        runner.withPropertyValues("sema.keyed.exports.permits=1", "sema.keyed.exports.max-keys=1")
                .withUserConfiguration(Keyed.class).run(context -> {
                    KeyedService service = context.getBean(KeyedService.class);
                    KeyedSemaphore<Object> exports = context.getBean(SemaphoreRegistry.class).keyed("exports");
                    try (Permit held = exports.get("acme").acquire()) {
                        // timeout "0" is a tryAcquire: a key beyond max-keys is an empty answer, without a cause
                        assertThat(service.tryExport("bravo")).isEqualTo("busy: exports[bravo] null");
                        assertThatThrownBy(() -> service.exportByIndex("bravo"))
                                .isInstanceOf(PermitUnavailableException.class)
                                .hasCauseInstanceOf(dev.sema.TooManyKeysException.class);
                    }
                });
    }

    @Test
    void aKeyOnASemaphoreStopsTheStart() {
        runner.withUserConfiguration(KeyOnSemaphore.class).run(failsWith("@WithPermits(key) on "
                + KeyOnSemaphoreService.class.getName() + ".call", "#id", "'db' is a semaphore, not a keyed family"));
    }

    @Test
    void aFamilyWithoutAKeyStopsTheStart() {
        runner.withPropertyValues("sema.keyed.exports.permits=1").withUserConfiguration(NoKey.class)
                .run(failsWith("@WithPermits(key) on " + NoKeyService.class.getName() + ".call", "",
                        "'exports' is a keyed family: each call needs a key"));
    }

    @Test
    void aKeyThatDoesNotParseStopsTheStart() {
        runner.withPropertyValues("sema.keyed.exports.permits=1").withUserConfiguration(BadKey.class)
                .run(failsWith("@WithPermits(key) on " + BadKeyService.class.getName() + ".call", "#id +",
                        "is not a SpEL expression"));
    }

    // ---------------------------------------------------------------- sema.web.keyed, sema.web.key

    @Test
    void webKeyedAloneMakesAFilterAndEachKeySourceIsRead() {
        web.withPropertyValues("sema.web.keyed=exports", "sema.web.key=header:X-Tenant").run(context -> {
            WebLimit limit = limit(context);
            assertThat(limit.semaphore()).isNull();
            assertThat(limit.family().name()).isEqualTo("exports");
            assertThat(limit.key(keys(" acme ", "alice", "10.0.0.1"))).isEqualTo("acme");
            assertThat(limit.key(keys(" ", "alice", "10.0.0.1"))).as("blank is none").isNull();
            assertThat(limit.missingKey()).contains("no X-Tenant header", "sema.web.key", "'exports'");
        });
        web.withPropertyValues("sema.web.semaphore=api", "sema.web.keyed=exports", "sema.web.key=principal")
                .run(context -> {
                    assertThat(limit(context).semaphore().name()).isEqualTo("api");
                    assertThat(limit(context).key(keys("acme", "alice", "10.0.0.1"))).isEqualTo("alice");
                    assertThat(limit(context).key(keys("acme", null, "10.0.0.1"))).isNull();
                });
        web.withPropertyValues("sema.web.keyed=exports", "sema.web.key=remote-address")
                .run(context -> assertThat(limit(context).key(keys("acme", "alice", "10.0.0.1")))
                        .isEqualTo("10.0.0.1"));
    }

    @Test
    void badWebKeyedSettings() {
        web.withPropertyValues("sema.web.keyed=imports", "sema.web.key=principal")
                .run(failsWith("sema.web.keyed", "imports", "names no keyed family (there are [exports])"));
        web.withPropertyValues("sema.web.keyed=exports")
                .run(failsWith("sema.web.key", "(not set)", "is required with sema.web.keyed"));
        web.withPropertyValues("sema.web.keyed=exports", "sema.web.key=cookie:tenant")
                .run(failsWith("sema.web.key", "cookie:tenant", "is not a key source"));
        web.withPropertyValues("sema.web.keyed=exports", "sema.web.key=header:")
                .run(failsWith("sema.web.key", "header:", "is not a key source"));
        web.withPropertyValues("sema.web.semaphore=db", "sema.web.key=principal")
                .run(failsWith("sema.web.key", "principal", "applies only with sema.web.keyed"));
        web.withPropertyValues("sema.web.keyed=exports", "sema.web.key=principal",
                "sema.web.partition-header=X-Traffic-Class")
                .run(failsWith("sema.web.partition-header", "X-Traffic-Class", "which is not set"));
    }

    private static WebLimit.RequestKeys keys(String header, String principal, String remote) {
        return new WebLimit.RequestKeys() {
            @Override
            public String header(String name) {
                return name.equals("X-Tenant") ? header : null;
            }

            @Override
            public String principal() {
                return principal;
            }

            @Override
            public String remoteAddress() {
                return remote;
            }
        };
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

    record Tenant(String id) {
    }

    static class KeyedService {
        private final SemaphoreRegistry registry;
        volatile int calls;

        KeyedService(SemaphoreRegistry registry) {
            this.registry = registry;
        }

        @WithPermits(value = "exports", key = "#tenant.id", timeout = "0")
        public String export(Tenant tenant) {
            return held(tenant.id());
        }

        @WithPermits(value = "exports", key = "#p0")
        public String exportByIndex(String tenant) {
            return held(tenant);
        }

        @WithPermits(value = "exports", key = "#tenant.id", timeout = "0")
        public CompletableFuture<String> exportAsync(Tenant tenant) {
            return CompletableFuture.completedFuture(held(tenant.id()));
        }

        @WithPermits(value = "exports", key = "#tenant", timeout = "0", fallback = "busy")
        public String tryExport(String tenant) {
            return held(tenant);
        }

        public String busy(String tenant, PermitUnavailableException refused) {
            return "busy: " + refused.semaphore() + " " + refused.getCause();
        }

        private String held(String key) {
            calls++;
            KeyedSemaphore<Object> exports = registry.keyed("exports");
            return key + " held " + exports.get(key).availablePermits() + " left, " + exports.size() + " live key";
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Keyed {
        @Bean
        KeyedService keyedService(SemaphoreRegistry registry) {
            return new KeyedService(registry);
        }
    }

    static class KeyOnSemaphoreService {
        @WithPermits(value = "db", key = "#id")
        public String call(String id) {
            return id;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class KeyOnSemaphore {
        @Bean
        KeyOnSemaphoreService keyOnSemaphoreService() {
            return new KeyOnSemaphoreService();
        }
    }

    static class NoKeyService {
        @WithPermits("exports")
        public String call(String id) {
            return id;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class NoKey {
        @Bean
        NoKeyService noKeyService() {
            return new NoKeyService();
        }
    }

    static class BadKeyService {
        @WithPermits(value = "exports", key = "#id +")
        public String call(String id) {
            return id;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BadKey {
        @Bean
        BadKeyService badKeyService() {
            return new BadKeyService();
        }
    }
}
