package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.app.Controllers;
import dev.sema.spring.app.TestApp;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;

/** sema.web over real HTTP: inbound (2 permits) guards /api/** with max-wait 300ms and Retry-After 2s. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("it")
@Timeout(60)
class WebFilterTest {
    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    @Autowired
    Controllers controllers;
    Http http;
    Semaphore inbound;

    @BeforeEach
    void client() {
        http = new Http(port);
        inbound = registry.get("inbound");
        controllers.release = new CountDownLatch(1);
        controllers.entered.set(0);
    }

    @AfterEach
    void allPermitsBack() {
        controllers.release.countDown();
        await(() -> inbound.availablePermits() == 2);
    }

    @Test
    void matchingRequestHoldsAPermitUntilItsResponseIsComplete() {
        CompletableFuture<HttpResponse<String>> held = http.getAsync("/api/hold");
        await(() -> controllers.entered.get() == 1);
        assertThat(inbound.availablePermits()).isEqualTo(1);
        controllers.release.countDown();
        assertThat(held.join().body()).isEqualTo("released");
        await(() -> inbound.availablePermits() == 2);
    }

    @Test
    void requestBeyondTheLimitIsRefusedAfterMaxWaitWith503AndRetryAfter() {
        try (Permit all = inbound.tryAcquire(2).orElseThrow()) {
            long start = System.nanoTime();
            HttpResponse<String> r = http.get("/api/quick");
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.headers().firstValue("Retry-After")).hasValue("2");
            assertThat(waitedMillis).isGreaterThanOrEqualTo(290);
        }
        assertThat(http.get("/api/quick").statusCode()).isEqualTo(200);
    }

    @Test
    void requestWaitsUpToMaxWaitForAPermit() {
        Permit all = inbound.tryAcquire(2).orElseThrow();
        CompletableFuture<HttpResponse<String>> waiting = http.getAsync("/api/quick");
        await(() -> inbound.queueLength() == 1);
        all.release(1);
        HttpResponse<String> r = waiting.join();
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("quick");
        all.close();
    }

    @Test
    void pathsOutsideThePatternsAreNotLimited() {
        try (Permit all = inbound.tryAcquire(2).orElseThrow()) {
            HttpResponse<String> r = http.get("/open/quick");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("open");
            assertThat(http.get("/actuator/health").statusCode()).isEqualTo(200);
            // the path is matched as decoded and normalized: these are /api/quick all the same
            assertThat(http.get("/api;x=1/quick").statusCode()).isEqualTo(503);
            assertThat(http.get("/%61pi/quick").statusCode()).isEqualTo(503);
        }
    }

    @Test
    void asyncRequestHoldsItsPermitUntilTheAsyncResponseIsComplete() {
        controllers.deferred = new CompletableFuture<>();
        CompletableFuture<HttpResponse<String>> pending = http.getAsync("/api/deferred");
        await(() -> inbound.availablePermits() == 1);
        // the controller has returned and the request thread is gone; the permit is still held
        sleepQuietly(100);
        assertThat(inbound.availablePermits()).isEqualTo(1);
        assertThat(pending).isNotDone();
        controllers.deferred.complete("later");
        assertThat(pending.join().body()).isEqualTo("later");
        await(() -> inbound.availablePermits() == 2);
    }

    @Test
    void refusedAsyncRequestNeverReachesTheController() {
        try (Permit all = inbound.tryAcquire(2).orElseThrow()) {
            controllers.deferred = new CompletableFuture<>();
            HttpResponse<String> r = http.get("/api/deferred");
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.body()).contains("Service Unavailable");
        }
    }

    static void await(BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            sleepQuietly(5);
        }
    }

    static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
