package dev.sema.spring;

import static dev.sema.spring.WebFilterTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.reactive.ReactiveApp;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * sema.web in a WebFlux application on Netty, over real HTTP (application-reactive.yml: api, 3 permits, guards
 * /api/** with max-wait 3s and Retry-After 2s): the bound holds under concurrent requests, a refusal is 503 with
 * Retry-After, the permit is held until the response is complete and given back when the client goes away; a
 * @WithPermits refusal in a handler is 503 too; the actuator's semaphores endpoint answers.
 */
@Timeout(60)
class ReactiveWebTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static ConfigurableApplicationContext app;
    private static Semaphore api;
    private static ReactiveApp.Api handlers;
    private static ReactiveHttp http;

    @BeforeAll
    static void start() {
        app = ReactiveHttp.startReactiveApp("reactive");
        api = app.getBean(SemaphoreRegistry.class).get("api");
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
        await(() -> api.availablePermits() == 3 && api.queueLength() == 0 && handlers.inFlight.get() == 0);
    }

    @Test
    void theStartersWebFilterIsTheReactiveOne() {
        assertThat(app.getBean("semaphoreWebFilter")).isInstanceOf(SemaphoreWebFilter.class)
                .hasToString("SemaphoreWebFilter[api, paths=[/api/**], exclude-paths=[/actuator, /actuator/**],"
                        + " max-wait=3s]");
        assertThat(app.containsBean("semaphoreFilter")).isFalse();
    }

    @Test
    void aRequestHoldsItsPermitUntilItsResponseIsComplete() {
        CompletableFuture<ResponseEntity<String>> held = http.get("/api/hold").toFuture();
        await(() -> handlers.entered.get() == 1);
        assertThat(api.availablePermits()).isEqualTo(2);
        handlers.release.tryEmitValue("released");
        ResponseEntity<String> r = held.join();
        assertThat(r.getStatusCode().value()).isEqualTo(200);
        assertThat(r.getBody()).isEqualTo("released");
        await(() -> api.availablePermits() == 3);
    }

    @Test
    void concurrentRequestsNeverExceedTheLimitAndAllAreServed() {
        List<ResponseEntity<String>> responses = Flux.range(0, 40).flatMap(i -> http.get("/api/delay"), 40)
                .collectList().block(ReactiveHttp.TIMEOUT);
        assertThat(responses).hasSize(40).allSatisfy(r -> {
            assertThat(r.getStatusCode().value()).isEqualTo(200);
            assertThat(r.getBody()).isEqualTo("done");
        });
        assertThat(handlers.maxInFlight.get()).isBetween(1, 3);
    }

    @Test
    void aRequestBeyondTheLimitIsRefusedAfterMaxWaitWith503AndRetryAfter() throws Exception {
        try (Permit all = api.tryAcquire(3).orElseThrow()) {
            ResponseEntity<String> r = http.getNow("/api/quick");
            assertThat(r.getStatusCode().value()).isEqualTo(503);
            assertThat(r.getHeaders().getFirst("Retry-After")).isEqualTo("2");
            JsonNode body = JSON.readTree(r.getBody());
            assertThat(body.get("semaphore").asString()).isEqualTo("api");
            assertThat(body.get("status").asInt()).isEqualTo(503);
            assertThat(body.get("path").asString()).isEqualTo("/api/quick");
        }
        assertThat(http.getNow("/api/quick").getBody()).isEqualTo("quick");
    }

    @Test
    void aQueuedRequestIsServedWhenAPermitComesBack() {
        Permit all = api.tryAcquire(3).orElseThrow();
        CompletableFuture<ResponseEntity<String>> waiting = http.get("/api/quick").toFuture();
        await(() -> api.queueLength() == 1);
        all.release(1);
        assertThat(waiting.join().getBody()).isEqualTo("quick");
        all.close();
    }

    @Test
    void theClientGoingAwayGivesTheHeldPermitBackAndWithdrawsAQueuedRequest() {
        Disposable held = http.get("/api/hold").subscribe();
        await(() -> handlers.entered.get() == 1);
        assertThat(api.availablePermits()).isEqualTo(2);
        held.dispose();
        await(() -> api.availablePermits() == 3);
        assertThat(handlers.cancelled).hasValue(1);

        try (Permit all = api.tryAcquire(3).orElseThrow()) {
            Disposable queued = http.get("/api/quick").subscribe();
            await(() -> api.queueLength() == 1);
            queued.dispose();
            await(() -> api.queueLength() == 0);
        }
        assertThat(handlers.entered).hasValue(1);
    }

    @Test
    void pathsOutsideThePatternsAndTheActuatorAreNotLimited() {
        try (Permit all = api.tryAcquire(3).orElseThrow()) {
            assertThat(http.getNow("/open/quick").getBody()).isEqualTo("open");
            assertThat(http.getNow("/actuator/health").getStatusCode().value()).isEqualTo(200);
        }
    }

    @Test
    void thePathIsMatchedDecodedAndNormalized() {
        for (String path : List.of("/api;x=1/quick", "/%61pi/quick", "/open/../api/quick")) {
            Permit all = api.tryAcquire(3).orElseThrow();
            CompletableFuture<ResponseEntity<String>> waiting = http.get(path).toFuture();
            await(() -> api.queueLength() == 1); // limited: it waits for a permit of api
            all.close();
            waiting.join();
        }
    }

    @Test
    void aWithPermitsRefusalInAHandlerIs503WithRetryAfter() throws Exception {
        Semaphore work = app.getBean(SemaphoreRegistry.class).get("work");
        assertThat(http.getNow("/work/try").getBody()).isEqualTo("worked");
        try (Permit busy = work.tryAcquire(1).orElseThrow()) {
            ResponseEntity<String> r = http.getNow("/work/try");
            assertThat(r.getStatusCode().value()).isEqualTo(503);
            assertThat(r.getHeaders().getFirst("Retry-After")).isEqualTo("2");
            assertThat(JSON.readTree(r.getBody()).get("semaphore").asString()).isEqualTo("work");
        }
    }

    @Test
    void theSemaphoresEndpointAnswersInAWebFluxApplication() throws Exception {
        ResponseEntity<String> all = http.getNow("/actuator/semaphores");
        assertThat(all.getStatusCode().value()).isEqualTo(200);
        JsonNode semaphores = JSON.readTree(all.getBody()).get("semaphores");
        assertThat(semaphores.get("api").get("permits").asInt()).isEqualTo(3);
        assertThat(semaphores.get("work").get("available").asInt()).isEqualTo(1);
        ResponseEntity<String> one = http.getNow("/actuator/semaphores/api");
        assertThat(one.getStatusCode().value()).isEqualTo(200);
        assertThat(JSON.readTree(one.getBody()).get("maxPermits").asInt()).isEqualTo(10);
        assertThat(http.getNow("/actuator/semaphores/nothing").getStatusCode().value()).isEqualTo(404);
    }
}
