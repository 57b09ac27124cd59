package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code redis: true} against a real redis-server: two application contexts in one JVM share a semaphore, closing
 * one gives its permits back, the endpoint shows kind redis and changes the fleet's limit, the health contributor
 * goes DOWN when Redis stops, and the starter backs off for the application's own RedisSemaphores.
 */
@Timeout(90)
class RedisStarterTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static RedisServer.Binary binary;
    private static RedisServer redis;
    private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

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
    void closeContexts() {
        contexts.forEach(ConfigurableApplicationContext::close);
    }

    @Test
    void twoContextsShareOneSemaphoreAndClosingOneGivesItsPermitsBack() {
        ConfigurableApplicationContext a = start(redis.uri(), "shared");
        ConfigurableApplicationContext b = start(redis.uri(), "shared");
        Semaphore inA = a.getBean(SemaphoreRegistry.class).get("shared");
        Semaphore inB = b.getBean(SemaphoreRegistry.class).get("shared");
        assertThat(SemaphoreState.kind(inA)).isEqualTo("redis");
        assertThat(inB.availablePermits()).isEqualTo(3);

        Permit heldByA = inA.tryAcquire(2).orElseThrow();
        assertThat(heldByA.permits()).isEqualTo(2);
        assertThat(inB.availablePermits()).isEqualTo(1);
        JsonNode seenFromB = JSON.readTree(http(b).get("/actuator/semaphores/shared").body());
        assertThat(seenFromB.get("kind").asString()).isEqualTo("redis");
        assertThat(seenFromB.get("available").asLong()).isEqualTo(1);

        a.close(); // closes the RedisSemaphores the starter opened: its permits go back, the semaphore stays open
        assertThat(inB.availablePermits()).isEqualTo(3);
        assertThat(inB.isClosed()).isFalse();
        assertThat(inA.isClosed()).isTrue(); // for process A only
        try (Permit p = inB.tryAcquire(3).orElseThrow()) {
            assertThat(p.permits()).isEqualTo(3);
        }
    }

    @Test
    void endpointChangesTheFleetsLimit() {
        ConfigurableApplicationContext a = start(redis.uri(), "fleet");
        ConfigurableApplicationContext b = start(redis.uri(), "fleet");
        HttpResponse<String> r = http(a).post("/actuator/semaphores/fleet", "{\"permits\": 7}");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("{\"kind\":\"redis\",\"permits\":7,\"maxPermits\":10,\"available\":7,"
                + "\"queued\":0,\"closed\":false,\"fairness\":\"FIFO\"}");
        assertThat(b.getBean(SemaphoreRegistry.class).get("fleet").permits()).isEqualTo(7);
    }

    @Test
    void healthGoesDownNamingTheRedisSemaphoreWhenRedisStops() throws Exception {
        try (RedisServer own = RedisServer.start(binary)) {
            ConfigurableApplicationContext c = start(own.uri(), "watched");
            Http http = http(c);
            HttpResponse<String> up = http.get("/actuator/health/semaphores");
            assertThat(up.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(up.body()).get("status").asString()).isEqualTo("UP");

            own.stop();
            HttpResponse<String> down = http.get("/actuator/health/semaphores");
            assertThat(down.statusCode()).isEqualTo(503);
            JsonNode health = JSON.readTree(down.body());
            assertThat(health.get("status").asString()).isEqualTo("DOWN");
            assertThat(health.get("details").get("unreadable").propertyNames()).containsExactly("watched");
            assertThat(health.get("details").get("semaphores").get("local").asString()).isEqualTo("local");
        }
    }

    @Test
    void endpointShowsEachUnreadableRedisSemaphoreUntilRedisIsBack() throws Exception {
        try (RedisServer own = RedisServer.start(binary)) {
            ConfigurableApplicationContext c = start(own.uri(), "watched");
            Http http = http(c);
            assertThat(http.get("/actuator/semaphores/watched").statusCode()).isEqualTo(200);

            own.stop();
            HttpResponse<String> all = http.get("/actuator/semaphores");
            assertThat(all.statusCode()).isEqualTo(200);
            JsonNode semaphores = JSON.readTree(all.body()).get("semaphores");
            assertThat(semaphores.propertyNames()).containsExactly("watched", "local");
            JsonNode watched = semaphores.get("watched");
            assertThat(watched.propertyNames()).containsExactly("kind", "error");
            assertThat(watched.get("kind").asString()).isEqualTo("redis");
            assertThat(watched.get("error").asString()).startsWith("RedisSemaphoreException: ");
            assertThat(semaphores.get("local").get("available").asLong()).isEqualTo(1);

            HttpResponse<String> one = http.get("/actuator/semaphores/watched");
            assertThat(one.statusCode()).isEqualTo(503);
            assertThat(JSON.readTree(one.body()).propertyNames()).containsExactly("kind", "error");
            assertThat(JSON.readTree(one.body()).get("error").asString()).startsWith("RedisSemaphoreException: ");
            assertThat(http.get("/actuator/semaphores/local").statusCode()).isEqualTo(200);

            HttpResponse<String> post = http.post("/actuator/semaphores/watched", "{\"permits\": 5}");
            assertThat(post.statusCode()).isEqualTo(503);
            assertThat(JSON.readTree(post.body()).get("error").asString())
                    .startsWith("semaphore 'watched' could not be changed: RedisSemaphoreException: ");

            own.restart();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            HttpResponse<String> back = http.get("/actuator/semaphores/watched");
            while (back.statusCode() != 200 && System.nanoTime() - deadline < 0) {
                Thread.sleep(100); // the client reconnects on its own schedule; nothing to wait on but the answer
                back = http.get("/actuator/semaphores/watched");
            }
            assertThat(back.statusCode()).as(back.body()).isEqualTo(200);
            assertThat(JSON.readTree(back.body()).get("kind").asString()).isEqualTo("redis");
            assertThat(JSON.readTree(back.body()).has("permits")).isTrue();
        }
    }

    @Test
    void endpointAnswersWithinItsBoundWhileRedisStalls() throws Exception {
        try (RedisServer own = RedisServer.start(binary)) {
            ConfigurableApplicationContext c = start(own.uri(), "stalled");
            Http http = http(c);
            assertThat(http.get("/actuator/semaphores/stalled").statusCode()).isEqualTo(200);

            own.pause(); // connected but silent: each read waits for the command timeout, 10 s
            try {
                long started = System.nanoTime();
                HttpResponse<String> all = http.get("/actuator/semaphores");
                Duration took = Duration.ofNanos(System.nanoTime() - started);
                assertThat(all.statusCode()).isEqualTo(200);
                JsonNode semaphores = JSON.readTree(all.body()).get("semaphores");
                assertThat(semaphores.get("stalled").get("error").asString()).isEqualTo("no reply within 3s");
                assertThat(semaphores.get("local").has("permits")).isTrue();
                assertThat(took).isBetween(SemaphoreState.READ_TIMEOUT, SemaphoreState.READ_TIMEOUT.plusSeconds(4));
            } finally {
                own.resume();
            }
        }
    }

    @Test
    void aPartitionedRedisSemaphoreIsOneLimitForTwoContextsThroughTheirViews() throws Exception {
        ConfigurableApplicationContext a = startPartitioned();
        ConfigurableApplicationContext b = startPartitioned();
        Semaphore tiersB = b.getBean(SemaphoreRegistry.class).get("tiers");
        assertThat(tiersB.partitionNames()).containsExactly("gold", "batch");
        // Limit 4, gold guaranteed 2 and batch 1. Gold in A takes all 4: batch is not waiting (work-conserving).
        try (Permit gold = a.getBean(SemaphoreRegistry.class).get("tiers").partition("gold").tryAcquire(4)
                .orElseThrow()) {
            assertThat(tiersB.partition("gold").availablePermits()).isZero();
            assertThat(tiersB.partition("batch").availablePermits()).isZero();
            // sema.web in B: a request of either partition is refused, naming its view.
            HttpResponse<String> refused = http(b).get("/api/x", "X-Tier", "gold");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("3");
            assertThat(JSON.readTree(refused.body()).get("semaphore").asString()).isEqualTo("tiers/gold");
            // Batch waits in B; the permit A's gold gives back is owed to it, across the fleet.
            CompletableFuture<Permit> batch = tiersB.partition("batch").acquireAsync(1, Duration.ofSeconds(20));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (tiersB.partition("batch").queueLength() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            gold.release(1);
            try (Permit owed = batch.get(20, TimeUnit.SECONDS)) {
                JsonNode seen = JSON.readTree(http(b).get("/actuator/semaphores/tiers").body());
                assertThat(seen.get("kind").asString()).isEqualTo("redis");
                assertThat(seen.get("partitions").toString()).isEqualTo("[{\"name\":\"gold\",\"share\":0.5,"
                        + "\"held\":3,\"guarantee\":2,\"queued\":0},{\"name\":\"batch\",\"share\":0.25,"
                        + "\"held\":1,\"guarantee\":1,\"queued\":0}]");
                assertThat(http(b).get("/api/x", "X-Tier", "gold").statusCode()).isEqualTo(503);
            }
        }
        assertThat(http(b).get("/api/x", "X-Tier", "batch").statusCode()).isEqualTo(404); // let through: no route
        assertThat(tiersB.availablePermits()).isEqualTo(4);
    }

    @Test
    void backsOffForTheApplicationsOwnRedisSemaphores() {
        ConfigurableApplicationContext c = new SpringApplicationBuilder(RedisApp.class, OwnRedis.class)
                .web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off", "own.redis.uri=" + redis.uri(),
                        "sema.semaphores.own.permits=2", "sema.semaphores.own.redis=true")
                .run();
        contexts.add(c);
        assertThat(c.getBeansOfType(RedisSemaphores.class)).containsOnlyKeys("ownRedisSemaphores");
        Semaphore own = c.getBean(SemaphoreRegistry.class).get("own");
        assertThat(SemaphoreState.kind(own)).isEqualTo("redis");
        assertThat(own.availablePermits()).isEqualTo(2);
    }

    private ConfigurableApplicationContext start(String uri, String name) {
        ConfigurableApplicationContext c = new SpringApplicationBuilder(RedisApp.class)
                .web(WebApplicationType.SERVLET)
                .properties("server.port=0", "spring.main.banner-mode=off", "logging.level.root=warn",
                        "sema.redis.uri=" + uri,
                        "sema.semaphores." + name + ".permits=3",
                        "sema.semaphores." + name + ".max-permits=10",
                        "sema.semaphores." + name + ".redis=true",
                        "sema.semaphores." + name + ".lease=5s",
                        "sema.semaphores.local.permits=1",
                        "management.endpoints.web.exposure.include=health,semaphores",
                        "management.endpoint.health.show-details=always")
                .run();
        contexts.add(c);
        return c;
    }

    private ConfigurableApplicationContext startPartitioned() {
        ConfigurableApplicationContext c = new SpringApplicationBuilder(RedisApp.class)
                .web(WebApplicationType.SERVLET).profiles("redis-partitions")
                .properties("server.port=0", "sema.redis.uri=" + redis.uri())
                .run();
        contexts.add(c);
        return c;
    }

    private static Http http(ConfigurableApplicationContext c) {
        return new Http(((WebServerApplicationContext) c).getWebServer().getPort());
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class RedisApp {
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnRedis {
        @Bean
        RedisSemaphores ownRedisSemaphores(org.springframework.core.env.Environment environment) {
            return RedisSemaphores.connect(environment.getRequiredProperty("own.redis.uri"));
        }
    }
}
