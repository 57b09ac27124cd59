package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.spring.app.TestApp;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.mock.env.MockEnvironment;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Health and readiness probes are never refused (API.md §9b): {@code sema.web.exclude-paths} defaults to the
 * actuator's base path, wherever {@code management.endpoints.web.base-path} puts it, and wins over
 * {@code sema.web.paths}; set empty, it excludes nothing. And a refusal's 503 names the semaphore in its body.
 */
@Timeout(60)
class ExcludePathsTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void theActuatorIsNeverLimitedWhileEverythingElseIsRefused() {
        try (ConfigurableApplicationContext app = start()) {
            Http http = http(app);
            Semaphore inbound = app.getBean(SemaphoreRegistry.class).get("inbound");
            List<Rejection> rejections = new CopyOnWriteArrayList<>();
            inbound.addListener(new SemaphoreListener() {
                @Override
                public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
                    rejections.add(why);
                }
            });
            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                HttpResponse<String> refused = http.get("/open/quick");
                assertThat(refused.statusCode()).isEqualTo(503);
                assertThat(refused.headers().firstValue("Retry-After")).hasValue("2");
                assertThat(refused.headers().firstValue("Content-Type")).hasValueSatisfying(
                        type -> assertThat(type).startsWith("application/json"));
                JsonNode body = JSON.readTree(refused.body());
                assertThat(body.get("status").asInt()).isEqualTo(503);
                assertThat(body.get("semaphore").asString()).isEqualTo("inbound");
                assertThat(body.get("permits").asLong()).isEqualTo(1);
                assertThat(body.get("path").asString()).isEqualTo("/open/quick");
                assertThat(body.get("message").asString()).contains("semaphore 'inbound'");
                for (String probe : List.of("/actuator/health", "/actuator/health/liveness",
                        "/actuator/health/readiness", "/actuator", "/actuator/semaphores")) {
                    assertThat(http.get(probe).statusCode()).as(probe).isEqualTo(200);
                }
                // Only the base path itself and what is under it: a path that merely starts alike is limited.
                assertThat(http.get("/actuatorial").statusCode()).isEqualTo(503);
            }
            // max-wait 0 tries: a refusal, never a timeout (which an adaptive limit would count as a drop)
            assertThat(rejections).containsExactly(Rejection.UNAVAILABLE, Rejection.UNAVAILABLE);
        }
    }

    @Test
    void theDefaultFollowsTheActuatorsBasePath() {
        try (ConfigurableApplicationContext app = start("management.endpoints.web.base-path=/manage")) {
            Http http = http(app);
            Semaphore inbound = app.getBean(SemaphoreRegistry.class).get("inbound");
            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                assertThat(http.get("/manage/health/liveness").statusCode()).isEqualTo(200);
                assertThat(http.get("/actuator/health").statusCode()).isEqualTo(503); // no longer the actuator
            }
        }
    }

    @Test
    void underASpringMvcServletPathTheActuatorIsStillNeverLimited() {
        try (ConfigurableApplicationContext app = start("spring.mvc.servlet.path=/app")) {
            Http http = http(app);
            Semaphore inbound = app.getBean(SemaphoreRegistry.class).get("inbound");
            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                assertThat(http.get("/app/actuator/health/liveness").statusCode()).isEqualTo(200);
                assertThat(http.get("/app/open/quick").statusCode()).isEqualTo(503);
            }
        }
    }

    @Test
    void anEmptyExcludePathsLimitsTheActuatorToo() {
        try (ConfigurableApplicationContext app = start("sema.web.exclude-paths=")) {
            Http http = http(app);
            Semaphore inbound = app.getBean(SemaphoreRegistry.class).get("inbound");
            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                assertThat(http.get("/actuator/health").statusCode()).isEqualTo(503);
            }
        }
    }

    @Test
    void explicitExcludePathsReplaceTheDefault() {
        try (ConfigurableApplicationContext app = start("sema.web.exclude-paths=/open/**")) {
            Http http = http(app);
            Semaphore inbound = app.getBean(SemaphoreRegistry.class).get("inbound");
            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                assertThat(http.get("/open/quick").statusCode()).isEqualTo(200);
                assertThat(http.get("/actuator/health").statusCode()).isEqualTo(503);
            }
        }
    }

    @Test
    void nothingIsExcludedByDefaultWhenTheActuatorHasAPortOfItsOwnOrTheRootAsItsBasePath() {
        assertThat(SemaWebAutoConfiguration.actuatorPaths(new MockEnvironment()))
                .containsExactly("/actuator", "/actuator/**");
        assertThat(SemaWebAutoConfiguration.actuatorPaths(new MockEnvironment()
                .withProperty("management.endpoints.web.base-path", "manage/"))).containsExactly("/manage", "/manage/**");
        assertThat(SemaWebAutoConfiguration.actuatorPaths(new MockEnvironment()
                .withProperty("management.server.port", "9090"))).isEmpty();
        assertThat(SemaWebAutoConfiguration.actuatorPaths(new MockEnvironment()
                .withProperty("management.server.port", "8080"))).containsExactly("/actuator", "/actuator/**");
        assertThat(SemaWebAutoConfiguration.actuatorPaths(new MockEnvironment()
                .withProperty("management.endpoints.web.base-path", "/"))).isEmpty();
        assertThat(SemaWebAutoConfiguration.actuatorPaths(new MockEnvironment()
                .withProperty("spring.mvc.servlet.path", "/app/"))).containsExactly("/app/actuator",
                        "/app/actuator/**");
    }

    /** The web tests' application (profile it), with sema.web over every path, and {@code more}. */
    private static ConfigurableApplicationContext start(String... more) {
        List<String> args = new java.util.ArrayList<>(List.of("--server.port=0", "--sema.web.paths=/**",
                "--sema.web.max-wait=0ms", "--management.endpoint.health.probes.enabled=true",
                "--management.endpoints.web.exposure.include=health,semaphores"));
        for (String m : more) {
            args.add("--" + m); // arguments win over the profile's application-it.yml
        }
        return new SpringApplicationBuilder(TestApp.class).web(WebApplicationType.SERVLET).profiles("it")
                .run(args.toArray(String[]::new));
    }

    private static Http http(ConfigurableApplicationContext c) {
        return new Http(((WebServerApplicationContext) c).getWebServer().getPort());
    }
}
