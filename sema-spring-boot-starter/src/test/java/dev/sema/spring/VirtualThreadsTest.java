package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.app.Controllers;
import dev.sema.spring.app.TestApp;
import dev.sema.spring.app.WorkService;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.ActiveProfiles;

/**
 * spring.threads.virtual.enabled=true: requests run on virtual threads and wait for permits (in the sema.web filter
 * and in @WithPermits) by parking, never pinning their carrier. Two ways to see it: JFR's jdk.VirtualThreadPinned
 * events (none may come from Sema's code; on JDK 24+ a monitor no longer pins, so this catches the remaining
 * causes, such as a wait under a native frame), and behaviour: with many more requests waiting than there are
 * carrier threads (as many as cores, here 2), another request is still served at once.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = { "spring.threads.virtual.enabled=true", "sema.web.max-wait=5s" })
@ActiveProfiles("it")
@Timeout(60)
class VirtualThreadsTest {
    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    @Autowired
    Controllers controllers;
    @Autowired
    WorkService work;

    @Test
    void waitingRequestsParkTheirVirtualThreadsWithoutPinning() throws Exception {
        Http http = new Http(port);
        Semaphore inbound = registry.get("inbound");
        Semaphore db = registry.get("db");
        List<RecordedEvent> pinned = new CopyOnWriteArrayList<>();
        try (RecordingStream jfr = new RecordingStream()) {
            jfr.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            jfr.onEvent("jdk.VirtualThreadPinned", pinned::add);
            jfr.startAsync();

            int waiting = 24;
            List<CompletableFuture<HttpResponse<String>>> filtered = new ArrayList<>();
            List<CompletableFuture<HttpResponse<String>>> limited = new ArrayList<>();
            db.setPermits(0);
            try (Permit all = inbound.tryAcquire(2).orElseThrow()) {
                for (int i = 0; i < waiting; i++) {
                    filtered.add(http.getAsync("/api/quick"));
                    limited.add(http.getAsync("/work/sync?ms=5"));
                }
                WebFilterTest.await(() -> inbound.queueLength() == waiting && db.queueLength() == waiting);
                // 48 virtual threads wait on 2 carriers: a request that needs no permit is still served at once
                long start = System.nanoTime();
                HttpResponse<String> open = http.get("/open/quick");
                assertThat(open.statusCode()).isEqualTo(200);
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(2_000);
            } finally {
                db.setPermits(2);
            }
            for (CompletableFuture<HttpResponse<String>> r : filtered) {
                assertThat(r.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            }
            for (CompletableFuture<HttpResponse<String>> r : limited) {
                assertThat(r.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            }
            db.setPermits(10);
            assertThat(controllers.virtualRequests.get()).isGreaterThanOrEqualTo(waiting);
            assertThat(work.virtualCalls()).isGreaterThanOrEqualTo(waiting);
            jfr.stop();
        }
        List<String> ours = new ArrayList<>();
        for (RecordedEvent e : pinned) {
            if (e.getStackTrace() != null && e.getStackTrace().getFrames().stream()
                    .map(RecordedFrame::getMethod).anyMatch(m -> m.getType().getName().startsWith("dev.sema."))) {
                ours.add(e.toString());
            }
        }
        assertThat(ours).as("jdk.VirtualThreadPinned events in Sema's code").isEmpty();
    }
}
