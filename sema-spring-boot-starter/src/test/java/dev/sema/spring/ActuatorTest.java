package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

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
        assertThat(http.post("/actuator/semaphores/db", "{\"permits\": -1}").statusCode()).isEqualTo(400);
        assertThat(http.post("/actuator/semaphores/db", "{}").statusCode()).isEqualTo(400);
        assertThat(registry.get("db").permits()).isEqualTo(10);
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
                .contains("sema_acquire_seconds_count{name=\"db\",outcome=\"granted\"}");
    }
}
