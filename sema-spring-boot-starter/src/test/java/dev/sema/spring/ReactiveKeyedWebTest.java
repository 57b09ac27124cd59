package dev.sema.spring;

import static dev.sema.spring.WebFilterTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.reactive.ReactiveApp;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * sema.web's partitions and keys in a WebFlux application on Netty, over real HTTP (application-reactive-keyed.yml):
 * X-Traffic-Class and partition-paths place a request in a partition of api; each request also holds a permit of its
 * X-Tenant key in the family tenants (1 permit a key, 2 keys at most); a request without the header is 400 naming it;
 * a busy key, a key beyond max-keys and a full semaphore are 503 with Retry-After, and nothing stays held.
 */
@Timeout(60)
class ReactiveKeyedWebTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TENANT = "X-Tenant";
    private static final String CLASS = "X-Traffic-Class";
    private static ConfigurableApplicationContext app;
    private static Semaphore api;
    private static KeyedSemaphore<Object> tenants;
    private static ReactiveApp.Api handlers;
    private static ReactiveHttp http;

    @BeforeAll
    static void start() {
        app = ReactiveHttp.startReactiveApp("reactive-keyed");
        SemaphoreRegistry registry = app.getBean(SemaphoreRegistry.class);
        api = registry.get("api");
        tenants = registry.keyed("tenants");
        handlers = app.getBean(ReactiveApp.Api.class);
        http = ReactiveHttp.to(app);
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    @BeforeEach
    void reset() {
        handlers.reset();
    }

    @AfterEach
    void allPermitsBack() {
        handlers.release.tryEmitValue("released");
        await(() -> api.availablePermits() == api.permits() && tenants.size() == 0 && handlers.inFlight.get() == 0);
    }

    /** The semaphore a refusal names, with every permit of api held. */
    private String refusedBy(String path, String... headers) throws Exception {
        ResponseEntity<String> r = http.getNow(path, headers);
        assertThat(r.getStatusCode().value()).isEqualTo(503);
        assertThat(r.getHeaders().getFirst("Retry-After")).isEqualTo("3");
        return JSON.readTree(r.getBody()).get("semaphore").asString();
    }

    @Test
    void theHeaderThenThePathsPlaceARequestInAPartition() throws Exception {
        try (Permit all = api.tryAcquire(api.permits()).orElseThrow()) {
            assertThat(refusedBy("/api/other/quick", TENANT, "acme", CLASS, "batch")).isEqualTo("api/batch");
            assertThat(refusedBy("/api/checkout/quick", TENANT, "acme")).isEqualTo("api/checkout");
            assertThat(refusedBy("/api/checkout/quick", TENANT, "acme", CLASS, "batch")).isEqualTo("api/batch");
            assertThat(refusedBy("/api/other/quick", TENANT, "acme", CLASS, "urgent")).isEqualTo("api");
        }
        assertThat(http.getNow("/api/other/quick", TENANT, "acme", CLASS, "batch").getBody()).isEqualTo("quick");
    }

    @Test
    void aRequestWithoutItsKeyIsRefusedWith400NamingTheHeader() throws Exception {
        ResponseEntity<String> r = http.getNow("/api/quick");
        assertThat(r.getStatusCode().value()).isEqualTo(400);
        JsonNode body = JSON.readTree(r.getBody());
        assertThat(body.get("message").asString()).contains("no X-Tenant header").contains("'tenants'");
        assertThat(body.get("path").asString()).isEqualTo("/api/quick");
        assertThat(handlers.entered).hasValue(0);
    }

    @Test
    void aBusyKeyAndAKeyBeyondMaxKeysAreRefusedWith503() throws Exception {
        CompletableFuture<ResponseEntity<String>> acme = http.get("/api/hold", TENANT, "acme").toFuture();
        await(() -> handlers.entered.get() == 1);
        assertThat(api.availablePermits()).isEqualTo(api.permits() - 1);
        assertThat(refusedBy("/api/quick", TENANT, "acme")).isEqualTo("tenants[acme]");
        CompletableFuture<ResponseEntity<String>> globex = http.get("/api/hold", TENANT, "globex").toFuture();
        await(() -> handlers.entered.get() == 2);
        ResponseEntity<String> third = http.getNow("/api/quick", TENANT, "initech");
        assertThat(third.getStatusCode().value()).isEqualTo(503);
        assertThat(third.getBody()).contains("tenants");
        handlers.release.tryEmitValue("released");
        assertThat(acme.join().getBody()).isEqualTo("released");
        assertThat(globex.join().getBody()).isEqualTo("released");
        assertThat(http.getNow("/api/quick", TENANT, "initech").getBody()).isEqualTo("quick");
    }

    @Test
    void theKeysPermitGoesBackWhenTheSemaphoreRefuses() throws Exception {
        try (Permit all = api.tryAcquire(api.permits()).orElseThrow()) {
            assertThat(refusedBy("/api/other/quick", TENANT, "acme")).isEqualTo("api");
            assertThat(tenants.size()).isZero();
        }
    }
}
