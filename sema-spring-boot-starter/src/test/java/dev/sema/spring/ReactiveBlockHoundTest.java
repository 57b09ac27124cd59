package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Semaphore;
import dev.sema.spring.reactive.ReactiveApp;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Arrays;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.core.scheduler.Schedulers;

/**
 * No event-loop thread blocks in the starter's reactive path: with BlockHound installed (and every integration on the
 * class path, sema-reactor's among them), many requests queue on a small limit, through sema.web and a
 * {@code @WithPermits} Mono service, and none is reported; a handler that does block is. BlockHound stays in the JVM
 * once installed (and decides once per thread whether it is checked): it reports into a list rather than failing the
 * call, so that the tests that run after this class in the same JVM are not changed by it.
 */
@Timeout(60)
class ReactiveBlockHoundTest {
    private static final List<String> BLOCKED = new CopyOnWriteArrayList<>();
    private static ConfigurableApplicationContext app;
    private static ReactiveApp.Api handlers;
    private static ReactiveHttp http;

    @BeforeAll
    static void start() {
        BlockHound.Builder builder = BlockHound.builder();
        List<BlockHoundIntegration> integrations = new ArrayList<>();
        ServiceLoader.load(BlockHoundIntegration.class).forEach(integrations::add);
        integrations.sort(null);
        integrations.forEach(builder::with);
        builder.blockingMethodCallback(method -> BLOCKED.add(method + " on " + Thread.currentThread().getName() + ":\n  "
                + Arrays.stream(new Throwable().getStackTrace()).limit(40).map(String::valueOf)
                        .collect(Collectors.joining("\n  "))))
                .install();
        // Reactor's schedulers anew: a worker started before the install (by an earlier test in this JVM) idles in
        // its queue's take(), which Reactor's integration allows, but BlockHound never saw that call begin.
        Schedulers.shutdownNow();
        assertThat(integrations).extracting(i -> i.getClass().getName())
                .contains("dev.sema.reactor.SemaBlockHoundIntegration");
        app = ReactiveHttp.startReactiveApp("reactive");
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
        BLOCKED.clear();
    }

    @Test
    void requestsQueuedOnASmallLimitBlockNoEventLoopThread() {
        Semaphore api = app.getBean(SemaphoreRegistry.class).get("api");
        List<ResponseEntity<String>> responses = Flux.range(0, 60)
                .flatMap(i -> http.get(i % 3 == 0 ? "/work/try" : "/api/delay"), 60)
                .collectList().block(ReactiveHttp.TIMEOUT);
        assertThat(responses).hasSize(60);
        assertThat(responses).filteredOn(r -> r.getBody() != null && r.getBody().equals("done")).hasSize(40);
        assertThat(handlers.maxInFlight.get()).isBetween(1, 3);
        assertThat(BLOCKED).isEmpty();
        WebFilterTest.await(() -> api.availablePermits() == 3);
    }

    @Test
    void aHandlerThatBlocksTheEventLoopIsReported() {
        assertThat(http.getNow("/api/blocking").getStatusCode().value()).isEqualTo(200);
        assertThat(BLOCKED).anyMatch(b -> b.contains("sleep") && b.contains("reactor-http"));
    }
}
