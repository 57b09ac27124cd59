package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.AdaptiveLimit;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.app.TestApp;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The semaphores endpoint, the health contributor and the Prometheus scrape, over real HTTP. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("it")
@Timeout(60)
class ActuatorTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
    }

    @Test
    void getAllListsEverySemaphoreInConfigurationOrderInTheDocumentedShape() {
        HttpResponse<String> r = http.get("/actuator/semaphores");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).contains("json"));
        JsonNode semaphores = JSON.readTree(r.body()).get("semaphores");
        List<String> names = new ArrayList<>(semaphores.propertyNames());
        assertThat(names).containsExactly("db", "inbound", "async-db", "single", "partner", "partner-async");
        assertThat(r.body()).contains("{\"semaphores\":{\"db\":{\"kind\":\"local\",\"permits\":10,\"maxPermits\":50,"
                + "\"available\":10,\"queued\":0,\"closed\":false,\"fairness\":\"FIFO\"}");
    }

    @Test
    void anAdaptiveSemaphoreShowsItsAlgorithmAndBoundsAfterItsCounts() {
        AdaptiveLimit adaptive = registry.adaptive("partner").orElseThrow();
        JsonNode partner = JSON.readTree(http.get("/actuator/semaphores").body()).get("semaphores").get("partner");
        assertThat(new ArrayList<>(partner.propertyNames())).containsExactly("kind", "permits", "maxPermits",
                "available", "queued", "closed", "fairness", "adaptive");
        JsonNode a = partner.get("adaptive");
        assertThat(new ArrayList<>(a.propertyNames())).containsExactly("algorithm", "minLimit", "maxLimit", "limit");
        assertThat(a.get("algorithm").asString()).isEqualTo("aimd");
        assertThat(a.get("minLimit").asLong()).isEqualTo(2);
        assertThat(a.get("maxLimit").asLong()).as("no max-limit: the semaphore's maxPermits").isEqualTo(20);
        assertThat(a.get("limit").asLong()).isEqualTo(adaptive.limit()).isEqualTo(partner.get("permits").asLong());

        HttpResponse<String> one = http.get("/actuator/semaphores/partner-async");
        assertThat(JSON.readTree(one.body()).get("adaptive").get("maxLimit").asLong()).isEqualTo(10);
        assertThat(JSON.readTree(http.get("/actuator/semaphores/db").body()).has("adaptive"))
                .as("absent, not null, without an adaptive limit").isFalse();
    }

    @Test
    void postOnAnAdaptiveSemaphoreSetsTheLimitItMovesFrom() {
        Semaphore partner = registry.get("partner");
        AdaptiveLimit adaptive = registry.adaptive("partner").orElseThrow();
        long before = partner.permits();
        long set = before == 15 ? 14 : 15;
        try {
            HttpResponse<String> r = http.post("/actuator/semaphores/partner", "{\"permits\": " + set + "}");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).get("adaptive").get("limit").asLong()).isEqualTo(set);
            assertThat(adaptive.limit()).isEqualTo(set);
            // Used windows of samples until AIMD decides: its one step up is from the limit set, not from before.
            for (int round = 0; round < 10 && adaptive.limit() == set; round++) {
                List<Permit> held = new ArrayList<>();
                for (long i = 0; i < set; i++) {
                    held.add(partner.tryAcquire().orElseThrow(() -> new AssertionError("the limit fell below "
                            + set + " before it grew: " + adaptive)));
                }
                held.forEach(Permit::close);
            }
            assertThat(adaptive.limit()).isEqualTo(set + 1);
            assertThat(partner.permits()).isEqualTo(set + 1);
        } finally {
            partner.setPermits(before);
        }
    }

    @Test
    void getOneShowsItsState() {
        Semaphore db = registry.get("db");
        try (Permit p = db.tryAcquire(3).orElseThrow()) {
            HttpResponse<String> r = http.get("/actuator/semaphores/db");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("{\"kind\":\"local\",\"permits\":10,\"maxPermits\":50,\"available\":7,"
                    + "\"queued\":0,\"closed\":false,\"fairness\":\"FIFO\"}");
        }
    }

    @Test
    void postSetsTheLimitAndReturnsTheNewState() {
        Semaphore db = registry.get("db");
        try {
            HttpResponse<String> r = http.post("/actuator/semaphores/db", "{\"permits\": 20}");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("{\"kind\":\"local\",\"permits\":20,\"maxPermits\":50,\"available\":20,"
                    + "\"queued\":0,\"closed\":false,\"fairness\":\"FIFO\"}");
            assertThat(db.permits()).isEqualTo(20);
        } finally {
            db.setPermits(10);
        }
    }

    @Test
    void unknownNameIs404() {
        assertThat(http.get("/actuator/semaphores/nope").statusCode()).isEqualTo(404);
        assertThat(http.post("/actuator/semaphores/nope", "{\"permits\": 1}").statusCode()).isEqualTo(404);
    }

    @Test
    void limitOutOfRangeIs400() {
        HttpResponse<String> above = http.post("/actuator/semaphores/db", "{\"permits\": 51}");
        assertThat(above.statusCode()).isEqualTo(400);
        assertThat(above.body()).contains("permits (51) must be between 0 and the maxPermits of semaphore 'db' (50)");
        HttpResponse<String> below = http.post("/actuator/semaphores/db", "{\"permits\": -1}");
        assertThat(below.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(below.body()).get("error").asString())
                .isEqualTo("permits (-1) must be between 0 and the maxPermits of semaphore 'db' (50)");
        assertThat(registry.get("db").permits()).isEqualTo(10);
    }

    @Test
    void postWithoutAWholeNumberOfPermitsIs400SayingWhatWasExpected() {
        String expected = ": send {\"permits\": n} with n a whole number in 0..50 (the maxPermits of semaphore 'db')";
        assertThat(error(http.post("/actuator/semaphores/db", "{}"))).isEqualTo("permits is missing" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", ""))).as("no body").isEqualTo("permits is missing" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", "{\"permits\": null}")))
                .isEqualTo("permits is missing" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", "{\"permit\": 20}")))
                .isEqualTo("permits is missing" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", "{\"permits\": \"abc\"}")))
                .isEqualTo("permits (abc) is not a whole number" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", "{\"permits\": 1.5}")))
                .isEqualTo("permits (1.5) is not a whole number" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", "{\"permits\": true}")))
                .isEqualTo("permits (true) is not a whole number" + expected);
        assertThat(error(http.post("/actuator/semaphores/db", "{\"permits\": 99999999999999999999}")))
                .isEqualTo("permits (99999999999999999999) is not a whole number" + expected);
        assertThat(registry.get("db").permits()).isEqualTo(10);
        assertThat(http.post("/actuator/semaphores/nope", "{}").statusCode()).as("the name first").isEqualTo(404);
    }

    /** The message of a 400. */
    private static String error(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).contains("json"));
        return JSON.readTree(r.body()).get("error").asString();
    }

    @Test
    void healthIsUpWithLocalSemaphoresOnly() {
        HttpResponse<String> r = http.get("/actuator/health/semaphores");
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode health = JSON.readTree(r.body());
        assertThat(health.get("status").asString()).isEqualTo("UP");
        assertThat(health.get("details").get("semaphores").get("db").asString()).isEqualTo("local");
        assertThat(JSON.readTree(http.get("/actuator/health").body()).get("components").has("semaphores")).isTrue();
    }

    @Test
    void prometheusShowsEverySemaphore() {
        HttpResponse<String> r = http.get("/actuator/prometheus");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("sema_permits_limit{name=\"db\"} 10.0")
                .contains("sema_permits_max{name=\"db\"} 50.0")
                .contains("sema_permits_limit{name=\"inbound\"} 2.0")
                .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"granted\",partition=\"\"}");
    }
}
