package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Semaphore;
import dev.sema.testing.RedisServer;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
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
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A real redis-server stopped and restarted (API.md §9b): requests limited by a Redis semaphore, through
 * {@code sema.web} and {@code @WithPermits}, are answered 503 with {@code Retry-After} while Redis cannot be reached
 * (a fallback, where there is one), never 500, and are served again once it is back; an application whose Redis is
 * down at startup starts, its Redis semaphores refusing and the health DOWN, and serves once Redis comes up.
 */
@Timeout(120)
class RedisOutageTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static RedisServer.Binary binary;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeAll
    static void findRedis() throws Exception {
        Optional<RedisServer.Binary> found = RedisServer.Source.INSTALLED_OR_BUNDLED.find();
        assumeTrue(found.isPresent(), () -> RedisServer.Source.INSTALLED_OR_BUNDLED.missing());
        binary = found.get();
    }

    @AfterEach
    void close() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    @RestController
    static class Api {
        private final Work work;

        Api(Work work) {
            this.work = work;
        }

        @GetMapping("/api/hello")
        String hello() {
            return "hello";
        }

        @GetMapping("/work")
        String work() {
            return work.limited();
        }

        @GetMapping("/cached")
        String cached() {
            return work.withFallback();
        }
    }

    static class Work {
        @WithPermits(value = "shared", timeout = "2s")
        public String limited() {
            return "worked";
        }

        @WithPermits(value = "shared", timeout = "0", fallback = "stale")
        public String withFallback() {
            return "fresh";
        }

        String stale(PermitUnavailableException why) {
            return "stale";
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import({ Api.class, Work.class })
    static class App {
    }

    @Test
    void startsWhileRedisIsDownRefusesWith503AndServesOnceRedisIsReached() throws Exception {
        RedisServer redis = RedisServer.start(binary);
        closing.add(redis);
        redis.stop();
        ConfigurableApplicationContext app = start(redis.uri());
        Http http = http(app);

        HttpResponse<String> health = http.get("/actuator/health/semaphores");
        assertThat(health.statusCode()).isEqualTo(503);
        JsonNode details = JSON.readTree(health.body()).get("details");
        assertThat(details.get("unreadable").propertyNames()).containsExactly("shared");
        assertThat(details.get("unreadable").get("shared").asString()).contains("not open yet");

        assertRefused(http.get("/api/hello"), "shared");
        assertRefused(http.get("/work"), "shared");
        HttpResponse<String> cached = http.get("/cached");
        assertThat(cached.statusCode()).isEqualTo(200);
        assertThat(cached.body()).isEqualTo("stale");
        HttpResponse<String> probe = http.get("/actuator/health");
        assertThat(probe.statusCode()).isEqualTo(503); // DOWN, as it should: answered by the actuator, not the filter
        assertThat(JSON.readTree(probe.body()).get("status").asString()).isEqualTo("DOWN");

        redis.restart();
        awaitTrue("the application serves once Redis is up", () -> http.get("/api/hello").statusCode() == 200);
        assertThat(http.get("/work").body()).isEqualTo("worked");
        assertThat(http.get("/cached").body()).isEqualTo("fresh");
        assertThat(http.get("/actuator/health/semaphores").statusCode()).isEqualTo(200);
        Semaphore shared = app.getBean(SemaphoreRegistry.class).get("shared");
        assertThat(shared.permits()).isEqualTo(4);
        assertThat(shared.availablePermits()).isEqualTo(4);
    }

    @Test
    void redisStoppedAndRestartedUnderLoadIsAnswered503NeverA500() throws Exception {
        RedisServer redis = RedisServer.start(binary);
        closing.add(redis);
        ConfigurableApplicationContext app = start(redis.uri());
        Http http = http(app);
        Semaphore shared = app.getBean(SemaphoreRegistry.class).get("shared");

        Map<String, LongAdder> statuses = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        AtomicBoolean stop = new AtomicBoolean();
        LongAdder served = new LongAdder();
        LongAdder refused = new LongAdder();
        List<Thread> clients = new ArrayList<>();
        String[] paths = { "/api/hello", "/work", "/cached" };
        for (int i = 0; i < 6; i++) {
            String path = paths[i % paths.length];
            clients.add(Thread.ofVirtual().start(() -> {
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (!stop.get() && System.nanoTime() < deadline) {
                    HttpResponse<String> r = http.get(path);
                    statuses.computeIfAbsent(path + " " + r.statusCode(), k -> new LongAdder()).increment();
                    if (r.statusCode() == 200) {
                        served.increment();
                    } else if (r.statusCode() == 503 && r.headers().firstValue("Retry-After").isPresent()
                            && r.body().contains("\"semaphore\":\"shared\"")) {
                        refused.increment();
                    } else {
                        wrong.add(path + " -> " + r.statusCode() + " " + r.headers().map() + " " + r.body());
                    }
                }
            }));
        }
        try {
            awaitTrue("requests served before the outage", () -> served.sum() > 50);
            redis.stop();
            long refusedBefore = refused.sum();
            awaitTrue("requests refused while Redis is down", () -> refused.sum() > refusedBefore + 20);
            redis.restart();
            long servedAfter = served.sum();
            awaitTrue("requests served again once Redis is back", () -> served.sum() > servedAfter + 50);
        } finally {
            stop.set(true);
            for (Thread t : clients) {
                t.join(30_000);
            }
        }
        assertThat(wrong).as("answers other than 200, or 503 with Retry-After naming the semaphore").isEmpty();
        assertThat(statuses.keySet()).as("every path was refused during the outage and served around it")
                .contains("/api/hello 200", "/api/hello 503", "/work 200", "/work 503", "/cached 200");
        assertThat(statuses).doesNotContainKey("/cached 503");
        // Permits held when Redis went away come back by their leases (5 s) if their release was lost.
        awaitTrue("every permit back", () -> {
            try {
                return shared.availablePermits() == 4 && shared.queueLength() == 0;
            } catch (RuntimeException e) {
                return false;
            }
        });
    }

    private static void assertRefused(HttpResponse<String> r, String semaphore) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        assertThat(r.headers().firstValue("Retry-After")).contains("1");
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.get("semaphore").asString()).isEqualTo(semaphore);
        assertThat(body.get("message").asString()).contains("Redis cannot be reached");
    }

    private ConfigurableApplicationContext start(String uri) {
        ConfigurableApplicationContext c = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.SERVLET)
                .properties("server.port=0", "spring.main.banner-mode=off", "logging.level.root=warn",
                        "spring.threads.virtual.enabled=true",
                        "sema.redis.uri=" + uri + "?timeout=1s",
                        "sema.semaphores.shared.permits=4",
                        "sema.semaphores.shared.redis=true",
                        "sema.semaphores.shared.lease=5s",
                        "sema.semaphores.local.permits=1",
                        "sema.web.semaphore=shared",
                        // The actuator is inside paths, and out all the same: exclude-paths (the actuator's base path
                        // by default) wins.
                        "sema.web.paths=/api/**,/actuator/**",
                        "management.endpoints.web.exposure.include=health,semaphores",
                        "management.endpoint.health.show-details=always")
                .run();
        closing.add(c);
        return c;
    }

    private static Http http(ConfigurableApplicationContext c) {
        return new Http(((WebServerApplicationContext) c).getWebServer().getPort());
    }

    private static void awaitTrue(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(45).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as(what + " within 45 s").isNegative();
            Thread.sleep(50);
        }
    }
}
