package dev.sema.spring;

import static dev.sema.spring.WebFilterTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import dev.sema.spring.keyed.KeyedApp;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Keyed families over real HTTP (application-keyed.yml): sema.web holds a permit of the request's X-Tenant key and
 * one of the semaphore, refuses a request without a key with 400 and a key beyond max-keys with 503;
 * {@code @WithPermits(key)} refuses a busy key with 503; the endpoint and the meters show the family, never a key.
 */
@Timeout(60)
class KeyedWebTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TENANT = "X-Tenant";
    private static ConfigurableApplicationContext app;
    private static Semaphore api;
    private static KeyedSemaphore<Object> exports;
    private static KeyedApp.Api controller;
    private static Http http;

    @BeforeAll
    static void start() {
        app = new SpringApplicationBuilder(KeyedApp.class).web(WebApplicationType.SERVLET).profiles("keyed")
                .run("--server.port=0");
        SemaphoreRegistry registry = app.getBean(SemaphoreRegistry.class);
        api = registry.get("api");
        exports = registry.keyed("exports");
        controller = app.getBean(KeyedApp.Api.class);
        http = new Http(((WebServerApplicationContext) app).getWebServer().getPort());
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    @BeforeEach
    void reset() {
        controller.release = new CountDownLatch(1);
        controller.entered.set(0);
    }

    @AfterEach
    void allPermitsBack() {
        controller.release.countDown();
        await(() -> api.availablePermits() == api.permits() && exports.size() == 0);
    }

    /** Starts a request that holds its permits until released; returns once it holds them. */
    private CompletableFuture<HttpResponse<String>> hold(String tenant) {
        int before = controller.entered.get();
        CompletableFuture<HttpResponse<String>> held = http.getAsync("/api/hold", TENANT, tenant);
        await(() -> controller.entered.get() > before);
        return held;
    }

    @Test
    void aRequestHoldsAPermitOfItsKeyAndOneOfTheSemaphoreAndGivesBothBack() throws Exception {
        CompletableFuture<HttpResponse<String>> held = hold("acme");
        assertThat(exports.size()).isEqualTo(1);
        assertThat(exports.get("acme").availablePermits()).isZero();
        // the semaphore's permit, and the key's parent (api/batch) one more of api's
        assertThat(api.availablePermits()).isEqualTo(api.permits() - 2);

        HttpResponse<String> busy = http.get("/api/quick", TENANT, "acme");
        assertThat(busy.statusCode()).isEqualTo(503);
        assertThat(busy.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(JSON.readTree(busy.body()).get("semaphore").asString()).isEqualTo("exports[acme]");
        assertThat(api.availablePermits()).as("the refused request took nothing").isEqualTo(api.permits() - 2);

        assertThat(http.get("/api/quick", TENANT, "bravo").statusCode()).as("another key").isEqualTo(200);
        controller.release.countDown();
        assertThat(held.get().body()).isEqualTo("released");
        await(() -> api.availablePermits() == api.permits() && exports.size() == 0);
    }

    @Test
    void aRequestWithoutAKeyIsRefusedWith400NamingTheHeader() throws Exception {
        for (HttpResponse<String> r : java.util.List.of(http.get("/api/quick"), http.get("/api/quick", TENANT,
                "  "))) {
            assertThat(r.statusCode()).isEqualTo(400);
            JsonNode body = JSON.readTree(r.body());
            assertThat(body.get("message").asString()).contains("no X-Tenant header", "sema.web.key", "'exports'");
            assertThat(body.get("path").asString()).isEqualTo("/api/quick");
        }
        assertThat(exports.size()).isZero();
        assertThat(api.availablePermits()).isEqualTo(api.permits());
        assertThat(http.get("/work/export?tenant=acme").statusCode()).as("paths the filter leaves alone")
                .isEqualTo(200);
    }

    @Test
    void aKeyBeyondMaxKeysIsRefusedWith503AndRetryAfter() throws Exception {
        CompletableFuture<HttpResponse<String>> acme = hold("acme");
        CompletableFuture<HttpResponse<String>> bravo = hold("bravo");
        HttpResponse<String> third = http.get("/api/quick", TENANT, "charlie");
        assertThat(third.statusCode()).isEqualTo(503);
        assertThat(third.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(JSON.readTree(third.body()).get("semaphore").asString()).isEqualTo("exports[charlie]");
        assertThat(exports.size()).isEqualTo(2);
        controller.release.countDown();
        assertThat(acme.get().statusCode()).isEqualTo(200);
        assertThat(bravo.get().statusCode()).isEqualTo(200);
    }

    @Test
    void withPermitsKeyRefusesABusyKeyWith503() throws Exception {
        assertThat(http.get("/work/export?tenant=acme").body()).isEqualTo("exported for acme");
        CompletableFuture<HttpResponse<String>> held = hold("acme"); // the filter's permit of the key acme
        HttpResponse<String> busy = http.get("/work/export?tenant=acme");
        assertThat(busy.statusCode()).isEqualTo(503);
        assertThat(busy.headers().firstValue("Retry-After")).hasValue("3");
        assertThat(JSON.readTree(busy.body()).get("semaphore").asString()).isEqualTo("exports[acme]");
        assertThat(http.get("/work/export?tenant=bravo").statusCode()).isEqualTo(200);
        controller.release.countDown();
        assertThat(held.get().statusCode()).isEqualTo(200);
    }

    @Test
    void theEndpointShowsTheFamily() throws Exception {
        CompletableFuture<HttpResponse<String>> held = hold("acme");
        JsonNode all = JSON.readTree(http.get("/actuator/semaphores").body()).get("semaphores");
        assertThat(all.get("api").get("kind").asString()).isEqualTo("local");
        JsonNode family = all.get("exports");
        assertThat(family.toString()).isEqualTo(
                "{\"kind\":\"keyed\",\"keys\":1,\"maxKeys\":2,\"permitsPerKey\":1,\"closed\":false}");
        HttpResponse<String> one = http.get("/actuator/semaphores/exports");
        assertThat(one.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(one.body()).get("kind").asString()).isEqualTo("keyed");
        HttpResponse<String> post = http.post("/actuator/semaphores/exports", "{\"permits\": 3}");
        assertThat(post.statusCode()).isEqualTo(400);
        assertThat(post.body()).contains("'exports' is a keyed family");
        controller.release.countDown();
        held.get();
    }

    @Test
    void theMetersShowTheFamilyAndNoKey() throws Exception {
        http.get("/api/quick", TENANT, "tenant-zulu");
        hold("tenant-yankee");
        MeterRegistry meters = app.getBean(MeterRegistry.class);
        assertThat(meters.get("sema.keys").tag("name", "exports").gauge().value()).isEqualTo(1);
        assertThat(meters.get("sema.acquire").tag("name", "exports").tag("outcome", "granted").tag("partition", "")
                .functionTimer().count()).isGreaterThanOrEqualTo(2);
        assertThat(meters.getMeters()).allSatisfy(m -> assertThat(m.getId().toString()).doesNotContain("tenant-"));
        controller.release.countDown();
    }
}
