package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.SemaphoreRegistry;
import dev.sema.testing.RedisServer;
import java.net.http.HttpResponse;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The redis profile against a real redis-server (the installed one, else the bundled Redis 6.2): two instances of
 * the application share the {@code exports} semaphore, and a permit one holds is missing for the other.
 */
@Tag("redis")
@Timeout(90)
class RedisProfileTest {
    private static RedisServer redis;

    @BeforeAll
    static void startRedis() throws Exception {
        Optional<RedisServer.Binary> found = RedisServer.Source.INSTALLED_OR_BUNDLED.find();
        assumeTrue(found.isPresent(), () -> RedisServer.Source.INSTALLED_OR_BUNDLED.missing());
        redis = RedisServer.start(found.get());
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void twoInstancesShareTheExportsSemaphore() {
        try (ConfigurableApplicationContext a = start(); ConfigurableApplicationContext b = start();
                Http httpA = http(a); Http httpB = http(b)) {
            Semaphore inA = a.getBean(SemaphoreRegistry.class).get("exports");
            Semaphore inB = b.getBean(SemaphoreRegistry.class).get("exports");
            assertThat(httpA.get("/actuator/semaphores/exports").body())
                    .startsWith("{\"kind\":\"redis\",\"permits\":4,");

            HttpResponse<String> export = httpB.get("/exports/7");
            assertThat(export.statusCode()).isEqualTo(200);
            assertThat(export.body()).isEqualTo("export 7");
            try (Permit held = inA.tryAcquire(3).orElseThrow()) {
                assertThat(held.permits()).isEqualTo(3);
                assertThat(inB.availablePermits()).isEqualTo(1);
            }
            assertThat(inB.availablePermits()).isEqualTo(4);
        }
    }

    private static ConfigurableApplicationContext start() {
        return new SpringApplicationBuilder(ExampleApplication.class)
                .profiles("redis")
                .run("--server.port=0", "--server.address=127.0.0.1", "--logging.level.root=warn",
                        "--sema.redis.uri=" + redis.uri(), "--sema.semaphores.exports.expire-when-idle=1m");
    }

    private static Http http(ConfigurableApplicationContext context) {
        return new Http(((WebServerApplicationContext) context).getWebServer().getPort());
    }
}
