package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.app.TestApp;
import dev.sema.spring.app.WorkService;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;

/** @WithPermits over real HTTP: the limit under concurrent calls, 503 + Retry-After, async, interrupts, drops. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("it")
@Timeout(60)
class WithPermitsWebTest {
    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    @Autowired
    WorkService work;
    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
        work.resetMaxInFlight();
    }

    @Test
    void limitHoldsUnderConcurrentCalls() {
        Semaphore db = registry.get("db");
        db.setPermits(3);
        try {
            List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                calls.add(http.getAsync("/work/sync?ms=60"));
            }
            for (CompletableFuture<HttpResponse<String>> c : calls) {
                HttpResponse<String> r = c.join();
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.body()).isEqualTo("done");
            }
            assertThat(work.maxInFlight()).isBetween(1, 3);
            assertThat(db.availablePermits()).isEqualTo(3);
        } finally {
            db.setPermits(10);
        }
    }

    @Test
    void asyncLimitHoldsUntilTheReturnedStageCompletes() {
        // async-db has 4 permits and each call holds 2: at most two calls are in flight at once
        List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            calls.add(http.getAsync("/work/async?ms=60"));
        }
        for (CompletableFuture<HttpResponse<String>> c : calls) {
            assertThat(c.join().statusCode()).isEqualTo(200);
        }
        assertThat(work.maxInFlight()).isBetween(1, 2);
        assertThat(registry.get("async-db").availablePermits()).isEqualTo(4);
    }

    @Test
    void asyncPermitIsReleasedWhenTheStageCompletesNotWhenTheMethodReturns() throws Exception {
        Semaphore asyncDb = registry.get("async-db");
        CompletableFuture<String> pending = work.newPending();
        CompletableFuture<String> result = work.awaitPending();
        assertThat(asyncDb.availablePermits()).isEqualTo(3);
        pending.complete("late");
        assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("late");
        assertThat(asyncDb.availablePermits()).isEqualTo(4);
    }

    @Test
    void aMethodDeclaredToReturnCompletionStageHoldsItsPermitUntilTheStageCompletes() throws Exception {
        Semaphore asyncDb = registry.get("async-db");
        CompletableFuture<String> pending = work.newPending();
        CompletionStage<String> result = work.awaitPendingStage();
        assertThat(asyncDb.availablePermits()).isEqualTo(3);
        pending.complete("late");
        assertThat(result.toCompletableFuture().get(5, TimeUnit.SECONDS)).isEqualTo("late");
        assertThat(asyncDb.availablePermits()).isEqualTo(4);

        Semaphore single = registry.get("single");
        try (Permit held = single.tryAcquire().orElseThrow()) {
            CompletionStage<String> refused = work.singleStage(); // does not throw
            assertThatThrownBy(() -> refused.toCompletableFuture().get(5, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).cause().isInstanceOf(PermitUnavailableException.class);
        }
        assertThat(work.singleStage().toCompletableFuture().get(5, TimeUnit.SECONDS)).isEqualTo("single");
        assertThat(single.availablePermits()).isEqualTo(1);
    }

    @Test
    void unavailablePermitIs503WithRetryAfter() {
        Semaphore single = registry.get("single");
        try (Permit held = single.tryAcquire().orElseThrow()) {
            HttpResponse<String> r = http.get("/work/single");
            assertThat(r.statusCode()).isEqualTo(503);
            assertThat(r.headers().firstValue("Retry-After")).hasValue("2");
            assertThat(r.body()).contains("\"semaphore\":\"single\"", "\"path\":\"/work/single\"",
                    "1 permit of semaphore 'single' not available");
            HttpResponse<String> async = http.get("/work/single-async");
            assertThat(async.statusCode()).isEqualTo(503);
            assertThat(async.headers().firstValue("Retry-After")).hasValue("2");
            assertThat(async.body()).contains("\"semaphore\":\"single\"").containsPattern("not available after \\d+ms");
        }
        assertThat(http.get("/work/single").body()).isEqualTo("single");
        assertThat(http.get("/work/single-async").body()).isEqualTo("single");
    }

    @Test
    void unavailablePermitFailsTheReturnedFutureInsteadOfThrowing() throws Exception {
        Semaphore single = registry.get("single");
        try (Permit held = single.tryAcquire().orElseThrow()) {
            CompletableFuture<String> result = work.singleAsync(); // does not throw
            assertThatThrownBy(() -> result.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(PermitUnavailableException.class)
                    .satisfies(e -> {
                        PermitUnavailableException p = (PermitUnavailableException) e;
                        assertThat(p.semaphore()).isEqualTo("single");
                        assertThat(p.permits()).isEqualTo(1);
                        assertThat(p.waited()).isGreaterThanOrEqualTo(Duration.ofMillis(90));
                    });
            assertThatThrownBy(work::single).isInstanceOf(PermitUnavailableException.class)
                    .hasMessageMatching("1 permit of semaphore 'single' not available after 0(\\.\\d)?ms");
        }
    }

    @Test
    void interruptedWaitThrowsWithTheInterruptStatusSetAgain() throws Exception {
        Semaphore single = registry.get("single");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicReference<Boolean> interrupted = new AtomicReference<>();
        try (Permit held = single.tryAcquire().orElseThrow()) {
            Thread waiter = Thread.ofPlatform().start(() -> {
                try {
                    work.waitForSingle();
                } catch (Throwable t) {
                    thrown.set(t);
                    interrupted.set(Thread.currentThread().isInterrupted());
                }
            });
            WebFilterTest.await(() -> single.queueLength() == 1);
            waiter.interrupt();
            waiter.join(10_000);
            assertThat(waiter.isAlive()).isFalse();
        }
        assertThat(thrown.get()).isInstanceOf(PermitUnavailableException.class)
                .hasCauseInstanceOf(InterruptedException.class).hasMessageContaining("(interrupted)");
        assertThat(interrupted.get()).isTrue();
        assertThat(single.availablePermits()).isEqualTo(1);
        assertThat(single.queueLength()).isZero();
    }

    @Test
    void droppedOnFailuresTellTheAdaptiveLimit() {
        Semaphore partner = registry.get("partner");
        long before = registry.adaptive("partner").orElseThrow().limit();
        assertThat(http.get("/work/partner/fine").body()).isEqualTo("quote");
        assertThat(http.get("/work/partner/broken").statusCode()).isEqualTo(500); // not a drop
        assertThat(partner.permits()).isEqualTo(before);
        assertThat(http.get("/work/partner/overloaded").statusCode()).isEqualTo(500);
        assertThat(partner.permits()).isEqualTo((long) Math.floor(before * 0.9));
        assertThat(partner.availablePermits()).isEqualTo(partner.permits());
    }

    @Test
    void droppedOnFailuresOfTheReturnedStageTellTheAdaptiveLimit() {
        Semaphore partnerAsync = registry.get("partner-async");
        long before = partnerAsync.permits();
        assertThat(work.partnerAsync("fine").join()).isEqualTo("quote");
        assertThat(partnerAsync.permits()).isEqualTo(before);
        assertThatThrownBy(() -> work.partnerAsync("overloaded").join()).hasCauseInstanceOf(
                dev.sema.spring.app.UpstreamOverloaded.class);
        assertThat(partnerAsync.permits()).isEqualTo((long) Math.floor(before * 0.9));
    }
}
