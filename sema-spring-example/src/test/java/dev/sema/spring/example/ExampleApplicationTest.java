package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.SemaphoreRegistry;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.env.Environment;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The example application as configured in its application.yml, over real HTTP. */
@SpringBootTest(classes = ExampleApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class ExampleApplicationTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    @Autowired
    Environment environment;
    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
        http.delete("/actuator/inflight");
    }

    @AfterEach
    void closeClient() {
        http.close();
    }

    @Test
    void applicationYmlConfiguresTheRegistryTheFilterAndTheAdaptiveLimit() {
        assertThat(registry.all().keySet()).containsExactly("inbound", "reports");
        assertThat(registry.get("inbound").maxPermits()).isEqualTo(200);
        assertThat(registry.adaptive("inbound")).isPresent();
        assertThat(registry.get("reports").permits()).isEqualTo(8);
        assertThat(registry.adaptive("reports")).isEmpty();
    }

    @Test
    void quotesAndReportsAnswer() throws Exception {
        HttpResponse<String> quote = http.get("/api/quotes/ACME");
        assertThat(quote.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(quote.body()).get("symbol").asString()).isEqualTo("ACME");
        HttpResponse<String> report = http.get("/reports/42");
        assertThat(report.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(report.body()).get("id").asString()).isEqualTo("42");

        JsonNode inFlight = JSON.readTree(http.get("/actuator/inflight").body());
        assertThat(inFlight.get("quotes").get("semaphore").asString()).isEqualTo("inbound");
        assertThat(inFlight.get("quotes").get("requests").asLong()).isEqualTo(1);
        assertThat(inFlight.get("reports").get("peak").asLong()).isEqualTo(1);
        assertThat(inFlight.get("reports").get("highestLimit").asLong()).isEqualTo(8);
        assertThat(inFlight.get("reports").get("now").asLong()).isZero();
    }

    @Test
    void theFilterRefusesApiRequestsBeyondTheLimitAtOnceWith503AndRetryAfter() {
        Semaphore inbound = registry.get("inbound");
        try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
            HttpResponse<String> refused = http.get("/api/quotes/ACME");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
            JsonNode body = JSON.readTree(refused.body());
            assertThat(body.get("semaphore").asString()).isEqualTo("inbound");
            assertThat(body.get("path").asString()).isEqualTo("/api/quotes/ACME");
            assertThat(http.get("/reports/1").statusCode()).isEqualTo(200); // outside sema.web.paths
        }
        assertThat(http.get("/api/quotes/ACME").statusCode()).isEqualTo(200);
    }

    @Test
    void healthAndItsProbesAreNeverRefusedWhileTheFilterRefusesTheApi() {
        Semaphore inbound = registry.get("inbound");
        try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
            assertThat(http.get("/api/quotes/ACME").statusCode()).isEqualTo(503);
            for (String probe : List.of("/actuator/health", "/actuator/health/liveness",
                    "/actuator/health/readiness")) {
                HttpResponse<String> answer = http.get(probe);
                assertThat(answer.statusCode()).as(probe + " " + answer.body()).isEqualTo(200);
                assertThat(JSON.readTree(answer.body()).get("status").asString()).as(probe).isEqualTo("UP");
            }
            assertThat(http.get("/actuator/semaphores").statusCode()).isEqualTo(200);
            assertThat(inbound.availablePermits()).isZero();
        }
        // Not because the filter's paths leave the actuator out: only the default of sema.web.exclude-paths does.
        assertThat(environment.getProperty("sema.web.paths")).contains("/actuator/**");
        assertThat(environment.getProperty("sema.web.exclude-paths")).isNull();
    }

    @Test
    void aReportNeverRenderedWithoutAPermitWithin100MillisIs503WithRetryAfter() {
        Semaphore reports = registry.get("reports");
        try (Permit all = reports.tryAcquire(reports.permits()).orElseThrow()) {
            HttpResponse<String> refused = http.get("/reports/never-rendered");
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(JSON.readTree(refused.body()).get("semaphore").asString()).isEqualTo("reports");
            assertThat(reports.queueLength()).isZero();
        }
        HttpResponse<String> rendered = http.get("/reports/never-rendered");
        assertThat(rendered.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(rendered.body()).get("stale").asBoolean()).isFalse();
    }

    @Test
    void aReportWithoutAPermitIsTheCopyRenderedLastMarkedStaleAndHoldsNoPermit() {
        JsonNode fresh = JSON.readTree(http.get("/reports/fallback-1").body());
        assertThat(fresh.get("stale").asBoolean()).isFalse();

        Semaphore reports = registry.get("reports");
        try (Permit all = reports.tryAcquire(reports.permits()).orElseThrow()) {
            HttpResponse<String> copy = http.get("/reports/fallback-1");
            assertThat(copy.statusCode()).isEqualTo(200);
            JsonNode stale = JSON.readTree(copy.body());
            assertThat(stale.get("stale").asBoolean()).isTrue();
            assertThat(stale.get("id").asString()).isEqualTo("fallback-1");
            assertThat(stale.get("checksum").asString()).isEqualTo(fresh.get("checksum").asString());
            assertThat(reports.availablePermits()).isZero();
        }
        // With a permit, the report is rendered again: the fallback answers refusals only.
        assertThat(JSON.readTree(http.get("/reports/fallback-1").body()).get("stale").asBoolean()).isFalse();

        // Two renderings, each holding a permit; the copy served without one was not counted.
        JsonNode inFlight = JSON.readTree(http.get("/actuator/inflight").body()).get("reports");
        assertThat(inFlight.get("requests").asLong()).isEqualTo(2);
        assertThat(reports.availablePermits()).isEqualTo(reports.permits());
    }

    @Test
    void inFlightNeverExceedsTheLimitsUnderConcurrentRequests() {
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            answers.add(http.getAsync("/api/quotes/S" + i));
            answers.add(http.getAsync("/reports/" + i));
        }
        long refused = answers.stream().map(CompletableFuture::join).filter(r -> r.statusCode() == 503).count();
        long stale = answers.stream().map(CompletableFuture::join)
                .filter(r -> r.statusCode() == 200 && r.body().contains("\"stale\":true")).count();
        assertThat(answers).allSatisfy(a -> assertThat(a.join().statusCode()).isIn(200, 503));

        JsonNode inFlight = JSON.readTree(http.get("/actuator/inflight").body());
        for (String endpoint : List.of("quotes", "reports")) {
            JsonNode counts = inFlight.get(endpoint);
            assertThat(counts.get("peak").asLong()).as(endpoint + " " + counts)
                    .isPositive().isLessThanOrEqualTo(counts.get("highestLimit").asLong());
        }
        assertThat(inFlight.get("quotes").get("requests").asLong() + inFlight.get("reports").get("requests").asLong()
                + stale + refused).isEqualTo(120);
    }

    @Test
    void actuatorServesSemaphoresHealthAndHistograms() {
        HttpResponse<String> semaphores = http.get("/actuator/semaphores");
        assertThat(semaphores.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(semaphores.body()).get("semaphores").propertyNames())
                .containsExactly("inbound", "reports");

        JsonNode health = JSON.readTree(http.get("/actuator/health").body());
        assertThat(health.get("status").asString()).isEqualTo("UP");
        assertThat(health.get("components").get("semaphores").get("status").asString()).isEqualTo("UP");

        http.get("/reports/1");
        String scrape = http.get("/actuator/prometheus").body();
        assertThat(scrape).contains("sema_permits_limit{name=\"reports\"} 8.0",
                "sema_acquire_seconds_bucket{name=\"reports\",outcome=\"granted\",partition=\"\",le=\"0.001\"}",
                "sema_permit_hold_seconds_bucket{name=\"reports\",partition=\"\",le=\"+Inf\"}");
    }
}
