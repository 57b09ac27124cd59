package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.redis.RedisPermit;
import dev.sema.testing.RedisServer;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code sema.keyed.<name>.redis: true} against a real redis-server (API.md §11b, §11c): two application contexts in
 * one JVM, two processes of a fleet, share each key's limit through {@code sema.web} (keyed by a header, over real
 * HTTP) and {@code @WithPermits(key)}; a key beyond this process's {@code max-keys} and a bad key are refused; an idle
 * key leaves the process; a partition of a Redis semaphore as parent bounds every key across both; the endpoint and
 * the meters show the family; and an application whose Redis is down at startup starts, refuses with 503 and serves
 * once Redis is up, and again after Redis restarts.
 */
@Timeout(120)
class RedisKeyedStarterTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TENANT = "X-Tenant";
    private static RedisServer.Binary binary;
    private static RedisServer redis;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeAll
    static void startRedis() throws Exception {
        Optional<RedisServer.Binary> found = RedisServer.Source.INSTALLED_OR_BUNDLED.find();
        assumeTrue(found.isPresent(), () -> RedisServer.Source.INSTALLED_OR_BUNDLED.missing());
        binary = found.get();
        redis = RedisServer.start(binary);
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    @RestController
    static class Api {
        /** Counted down by a test: a held request waits until then. */
        volatile CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger entered = new AtomicInteger();
        private final Work work;

        Api(Work work) {
            this.work = work;
        }

        @GetMapping("/api/hold")
        String hold() throws InterruptedException {
            entered.incrementAndGet();
            return release.await(30, TimeUnit.SECONDS) ? "released" : "timed out";
        }

        @GetMapping("/api/quick")
        String quick() {
            return "quick";
        }

        @GetMapping("/work")
        String work(@RequestParam String tenant) {
            return work.export(tenant);
        }
    }

    static class Work {
        @WithPermits(value = "quotas", key = "#tenant", timeout = "0")
        public String export(String tenant) {
            return "exported for " + tenant;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import({ Api.class, Work.class })
    static class App {
    }

    @Test
    void twoContextsShareAKeysLimitOverHttpWhileAnotherKeyPasses() throws Exception {
        ConfigurableApplicationContext a = start(redis.uri());
        ConfigurableApplicationContext b = start(redis.uri());
        Http httpA = http(a);
        Http httpB = http(b);
        KeyedSemaphore<Object> inA = a.getBean(SemaphoreRegistry.class).keyed("quotas");
        KeyedSemaphore<Object> inB = b.getBean(SemaphoreRegistry.class).keyed("quotas");

        CompletableFuture<HttpResponse<String>> held = hold(a, "acme-shared");
        assertThat(inA.size()).isEqualTo(1);
        assertThat(a.getBean(SemaphoreRegistry.class).get("api").availablePermits())
                .as("the parent holds as many").isEqualTo(9);
        assertThat(inB.get("acme-shared").availablePermits()).as("read from Redis in B").isZero();

        HttpResponse<String> full = httpB.get("/api/quick", TENANT, "acme-shared");
        assertThat(full.statusCode()).as(full.body()).isEqualTo(503);
        assertThat(full.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(JSON.readTree(full.body()).get("semaphore").asString()).isEqualTo("quotas:acme-shared");
        assertThat(httpB.get("/api/quick", TENANT, "bravo-shared").statusCode()).as("another key").isEqualTo(200);
        await("B's request gives its key back", () -> inB.size() == 0);
        HttpResponse<String> busy = httpB.get("/work?tenant=acme-shared");
        assertThat(busy.statusCode()).as("@WithPermits in B").isEqualTo(503);
        assertThat(JSON.readTree(busy.body()).get("semaphore").asString()).isEqualTo("quotas:acme-shared");
        assertThat(httpB.get("/work?tenant=bravo-shared").body()).isEqualTo("exported for bravo-shared");

        JsonNode seenFromA = JSON.readTree(httpA.get("/actuator/semaphores/quotas").body());
        assertThat(seenFromA.toString()).isEqualTo("{\"kind\":\"keyed\",\"redis\":true,\"keys\":1,\"maxKeys\":2,"
                + "\"permitsPerKey\":1,\"closed\":false}");
        JsonNode all = JSON.readTree(httpB.get("/actuator/semaphores").body()).get("semaphores");
        assertThat(all.propertyNames()).containsExactly("api", "quotas");
        assertThat(all.get("quotas").get("keys").asInt()).as("B holds no key").isZero();

        a.getBean(Api.class).release.countDown();
        assertThat(held.get(30, TimeUnit.SECONDS).body()).isEqualTo("released");
        await("the idle key leaves process A", () -> inA.size() == 0);
        assertThat(httpB.get("/api/quick", TENANT, "acme-shared").statusCode()).as("free again").isEqualTo(200);
        // The filter gives the permit back once the chain returns, which the client may see after the response.
        await("the idle key leaves process B", () -> inB.size() == 0);

        MeterRegistry meters = b.getBean(MeterRegistry.class);
        assertThat(meters.get("sema.keys").tag("name", "quotas").gauge().value()).isZero();
        assertThat(meters.get("sema.keys.max").tag("name", "quotas").gauge().value()).isEqualTo(2);
        assertThat(meters.get("sema.acquire").tag("name", "quotas").tag("outcome", "granted").functionTimer().count())
                .isGreaterThanOrEqualTo(3);
        assertThat(meters.getMeters()).allSatisfy(m -> assertThat(m.getId().toString()).doesNotContain("shared"));
    }

    @Test
    void aKeyBeyondMaxKeysIsRefusedWith503AndABadKeyWith400() throws Exception {
        ConfigurableApplicationContext a = start(redis.uri());
        Http http = http(a);
        KeyedSemaphore<Object> quotas = a.getBean(SemaphoreRegistry.class).keyed("quotas");
        CompletableFuture<HttpResponse<String>> first = hold(a, "acme-max");
        CompletableFuture<HttpResponse<String>> second = hold(a, "bravo-max");
        assertThat(quotas.size()).isEqualTo(2);

        HttpResponse<String> third = http.get("/api/quick", TENANT, "charlie-max");
        assertThat(third.statusCode()).as(third.body()).isEqualTo(503);
        assertThat(third.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(JSON.readTree(third.body()).get("semaphore").asString()).isEqualTo("quotas:charlie-max");
        assertThat(http.get("/work?tenant=charlie-max").statusCode()).as("@WithPermits too").isEqualTo(503);

        HttpResponse<String> brace = http.get("/api/quick", TENANT, "acme{1}");
        assertThat(brace.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(brace.body()).get("message").asString()).contains("the key 'acme{1}'",
                "the X-Tenant header", "keyed semaphore 'quotas'", "contains a brace");
        assertThat(quotas.size()).isEqualTo(2);

        a.getBean(Api.class).release.countDown();
        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(second.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        await("both keys leave the process", () -> quotas.size() == 0);

        Semaphore key = quotas.get("delta-max");
        assertThat(key).isInstanceOf(dev.sema.redis.RedisSemaphore.class);
        assertThat(((dev.sema.redis.RedisSemaphore) key).lease()).isEqualTo(Duration.ofSeconds(5));
        try (Permit p = key.tryAcquire().orElseThrow()) {
            assertThat(p).isInstanceOf(RedisPermit.class);
            assertThat(quotas.size()).isEqualTo(1);
        }
        await("an idle key costs this process nothing", () -> quotas.size() == 0);
    }

    @Test
    void startsWhileRedisIsDownRefusesWith503AndServesOnceRedisIsReached() throws Exception {
        RedisServer own = RedisServer.start(binary);
        closing.add(own);
        own.stop();
        ConfigurableApplicationContext app = start(own.uri() + "?timeout=1s");
        Http http = http(app);
        KeyedSemaphore<Object> quotas = app.getBean(SemaphoreRegistry.class).keyed("quotas");

        HttpResponse<String> health = http.get("/actuator/health/semaphores");
        assertThat(health.statusCode()).isEqualTo(503);
        JsonNode unreadable = JSON.readTree(health.body()).get("details").get("unreadable");
        assertThat(unreadable.propertyNames()).containsExactly("quotas");
        assertThat(unreadable.get("quotas").asString()).contains("keyed semaphore 'quotas' is not open yet");
        assertRefused(http.get("/api/quick", TENANT, "acme"), "quotas:acme");
        assertRefused(http.get("/work?tenant=acme"), "quotas:acme");
        assertThat(http.get("/api/quick", TENANT, "a{b}").statusCode()).as("a bad key is still the client's")
                .isEqualTo(400);
        assertThat(JSON.readTree(http.get("/actuator/semaphores/quotas").body()).toString()).isEqualTo(
                "{\"kind\":\"keyed\",\"redis\":true,\"keys\":0,\"maxKeys\":2,\"permitsPerKey\":1,\"closed\":false}");
        MeterRegistry meters = app.getBean(MeterRegistry.class);
        assertThat(meters.get("sema.acquire").tag("name", "quotas").tag("outcome", "unavailable").functionTimer()
                .count()).as("the refusals are counted").isGreaterThanOrEqualTo(2);
        assertThat(quotas.size()).isZero();

        own.restart();
        await("the family serves once Redis is up", () -> http.get("/api/quick", TENANT, "acme").statusCode() == 200);
        await("the request gives its key back", () -> quotas.size() == 0);
        assertThat(http.get("/work?tenant=acme").body()).isEqualTo("exported for acme");
        assertThat(http.get("/actuator/health/semaphores").statusCode()).isEqualTo(200);
        CompletableFuture<HttpResponse<String>> held = hold(app, "acme");
        assertThat(http.get("/api/quick", TENANT, "acme").statusCode()).as("the key's limit holds").isEqualTo(503);
        app.getBean(Api.class).release.countDown();
        assertThat(held.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        await("the idle key leaves the process", () -> quotas.size() == 0);

        own.stop();
        HttpResponse<String> down = http.get("/api/quick", TENANT, "bravo");
        assertThat(down.statusCode()).as("Redis gone once open: a refusal, never a 500: " + down.body())
                .isEqualTo(503);
        assertThat(down.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(http.get("/work?tenant=bravo").statusCode()).isEqualTo(503);
        own.restart();
        await("the family serves again once Redis is back",
                () -> http.get("/api/quick", TENANT, "bravo").statusCode() == 200);
        await("no key left behind", () -> quotas.size() == 0);
    }

    @Test
    void aRedisPartitionAsParentBoundsEveryKeyAcrossTheFleet() throws Exception {
        String[] fleetParent = { "sema.semaphores.fleet.permits=2", "sema.semaphores.fleet.redis=true",
                "sema.semaphores.fleet.lease=5s", "sema.semaphores.fleet.partitions.batch=0.5",
                "sema.keyed.quotas.parent=fleet/batch" };
        ConfigurableApplicationContext a = start(redis.uri(), fleetParent);
        ConfigurableApplicationContext b = start(redis.uri(), fleetParent);
        Semaphore fleet = b.getBean(SemaphoreRegistry.class).get("fleet");
        CompletableFuture<HttpResponse<String>> first = hold(a, "acme-parent");
        CompletableFuture<HttpResponse<String>> second = hold(a, "bravo-parent");
        assertThat(fleet.availablePermits()).as("two keys hold the whole parent, read in B").isZero();

        HttpResponse<String> third = http(b).get("/api/quick", TENANT, "charlie-parent");
        assertThat(third.statusCode()).as("a free key, but no permit of the parent: " + third.body())
                .isEqualTo(503);
        assertThat(JSON.readTree(third.body()).get("semaphore").asString()).isEqualTo("quotas:charlie-parent");
        await("the refused key leaves process B", () -> b.getBean(SemaphoreRegistry.class).keyed("quotas")
                .size() == 0);

        a.getBean(Api.class).release.countDown();
        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(second.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        await("the parent's permits come back", () -> fleet.availablePermits() == 2);
        assertThat(http(b).get("/api/quick", TENANT, "charlie-parent").statusCode()).isEqualTo(200);
    }

    private static void assertRefused(HttpResponse<String> r, String semaphore) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).hasValue("3");
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.get("semaphore").asString()).isEqualTo(semaphore);
        assertThat(body.get("message").asString()).contains("Redis cannot be reached",
                "keyed semaphore 'quotas' is not open yet");
    }

    /** Starts a request that holds the key's permit in {@code app} until released; returns once it holds it. */
    private static CompletableFuture<HttpResponse<String>> hold(ConfigurableApplicationContext app, String tenant) {
        Api api = app.getBean(Api.class);
        int before = api.entered.get();
        CompletableFuture<HttpResponse<String>> held = http(app).getAsync("/api/hold", TENANT, tenant);
        await("the request holds its permit", () -> api.entered.get() > before || held.isDone());
        assertThat(held).as("still holding").isNotDone();
        return held;
    }

    private ConfigurableApplicationContext start(String uri, String... more) {
        ConfigurableApplicationContext c = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.SERVLET)
                .properties("server.port=0", "spring.main.banner-mode=off", "logging.level.root=warn",
                        "sema.redis.uri=" + uri,
                        "sema.semaphores.api.permits=10",
                        "sema.keyed.quotas.permits=1",
                        "sema.keyed.quotas.max-keys=2",
                        "sema.keyed.quotas.redis=true",
                        "sema.keyed.quotas.lease=5s",
                        "sema.keyed.quotas.expire-when-idle=1m",
                        "sema.keyed.quotas.parent=api",
                        "sema.web.keyed=quotas",
                        "sema.web.key=header:" + TENANT,
                        "sema.web.paths=/api/**",
                        "sema.web.retry-after=3s",
                        "management.endpoints.web.exposure.include=health,semaphores",
                        "management.endpoint.health.show-details=always")
                .properties(more)
                .run();
        closing.add(c);
        return c;
    }

    private static Http http(ConfigurableApplicationContext c) {
        return new Http(((WebServerApplicationContext) c).getWebServer().getPort());
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(45);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as(what + " within 45 s").isNegative();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(what + ": interrupted", e);
            }
        }
    }
}
