package dev.sema.spring;

import static dev.sema.spring.WebFilterTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Partitioned;
import dev.sema.internal.Partitioned.PartitionState;
import dev.sema.spring.partitioned.PartitionedApp;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * Partitions over real HTTP (application-partitions.yml): sema.web puts each request into the partition its
 * X-Traffic-Class header names, else the one of the first partition-paths entry its path matches, else none;
 * {@code @WithPermits(partition = ...)} holds the partition's permits; the endpoint shows each partition.
 */
@Timeout(60)
class PartitionWebTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String HEADER = "X-Traffic-Class";
    private static ConfigurableApplicationContext app;
    private static Semaphore api;
    private static PartitionedApp.Api controller;
    private static HttpClient client;
    private static int port;
    /** The name of the semaphore (the view, for a partition's request) of every grant. */
    private final List<String> grants = new CopyOnWriteArrayList<>();
    private final SemaphoreListener listener = new SemaphoreListener() {
        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            grants.add(s.name());
        }
    };

    @BeforeAll
    static void start() {
        app = new SpringApplicationBuilder(PartitionedApp.class).web(WebApplicationType.SERVLET)
                .profiles("partitions").run("--server.port=0");
        api = app.getBean(SemaphoreRegistry.class).get("api");
        controller = app.getBean(PartitionedApp.Api.class);
        client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        port = ((WebServerApplicationContext) app).getWebServer().getPort();
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    @BeforeEach
    void listen() {
        controller.release = new CountDownLatch(1);
        controller.entered.set(0);
        api.addListener(listener);
    }

    @AfterEach
    void allPermitsBack() {
        controller.release.countDown();
        api.removeListener(listener);
        await(() -> api.availablePermits() == api.permits() && used().equals(List.of(0L, 0L, 0L)));
    }

    @Test
    void theHeaderNamesTheRequestsPartition() {
        assertThat(heldBy("/api/other/hold", "batch")).isEqualTo("api/batch");
        assertThat(heldBy("/api/other/hold", "browse")).isEqualTo("api/browse");
    }

    @Test
    void withoutAHeaderTheFirstMatchingPartitionPathPlacesTheRequest() {
        assertThat(heldBy("/api/checkout/hold", null)).isEqualTo("api/checkout");
        assertThat(heldBy("/api/export/hold", null)).isEqualTo("api/batch");
        assertThat(heldBy("/api/other/hold", null)).isEqualTo("api"); // no partition: the semaphore's own
    }

    @Test
    void theHeaderWinsOverThePaths() {
        assertThat(heldBy("/api/checkout/hold", "batch")).isEqualTo("api/batch");
    }

    @Test
    void anUnknownHeaderValueIsNoPartitionAndLeavesThePathsToDecide() {
        assertThat(heldBy("/api/other/hold", "urgent")).isEqualTo("api");
        assertThat(heldBy("/api/other/hold", "")).isEqualTo("api");
        assertThat(heldBy("/api/export/hold", "Batch")).isEqualTo("api/batch"); // names are case-sensitive
    }

    @Test
    void aHeldRequestCountsInItsPartitionAndTheEndpointShowsIt() throws Exception {
        CompletableFuture<HttpResponse<String>> held = send("/api/export/hold", null);
        await(() -> controller.entered.get() == 1);
        assertThat(used()).containsExactly(0L, 0L, 1L);
        HttpResponse<String> r = send("/actuator/semaphores/api", null).get();
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("{\"kind\":\"local\",\"permits\":10,\"maxPermits\":10,\"available\":9,"
                + "\"queued\":0,\"closed\":false,\"fairness\":\"FIFO\",\"partitions\":["
                + "{\"name\":\"checkout\",\"share\":0.6,\"held\":0,\"guarantee\":6,\"queued\":0},"
                + "{\"name\":\"browse\",\"share\":0.3,\"held\":0,\"guarantee\":3,\"queued\":0},"
                + "{\"name\":\"batch\",\"share\":0.1,\"held\":1,\"guarantee\":1,\"queued\":0}]}");
        JsonNode all = JSON.readTree(send("/actuator/semaphores", null).get().body());
        assertThat(all.get("semaphores").get("api").get("partitions").get(2).get("held").asLong()).isEqualTo(1);
        controller.release.countDown();
        assertThat(held.get().body()).isEqualTo("released");
    }

    @Test
    void theRegistrysMetersShowEachPartition() {
        MeterRegistry meters = app.getBean(MeterRegistry.class);
        assertThat(meters.get("sema.partition.guarantee").tag("name", "api").tag("partition", "checkout").gauge()
                .value()).isEqualTo(6.0);
        assertThat(meters.get("sema.partition.guarantee").tag("name", "api").tag("partition", "batch").gauge()
                .value()).isEqualTo(1.0);
    }

    @Test
    void aRefusalNamesThePartitionsView() throws Exception {
        try (Permit all = api.tryAcquire(api.permits()).orElseThrow()) {
            HttpResponse<String> refused = send("/api/export/quick", null).get();
            assertThat(refused.statusCode()).isEqualTo(503);
            assertThat(refused.headers().firstValue("Retry-After")).hasValue("2");
            JsonNode body = JSON.readTree(refused.body());
            assertThat(body.get("semaphore").asString()).isEqualTo("api/batch");
            assertThat(body.get("message").asString()).contains("api/batch");
            assertThat(JSON.readTree(send("/api/other/quick", HEADER + ":checkout").get().body()).get("semaphore")
                    .asString()).isEqualTo("api/checkout");
            assertThat(JSON.readTree(send("/api/other/quick", null).get().body()).get("semaphore").asString())
                    .isEqualTo("api");
        }
        assertThat(send("/api/export/quick", null).get().statusCode()).isEqualTo(200);
    }

    @Test
    void withPermitsOfAPartitionHoldsTheViewsPermits() throws Exception {
        PartitionedApp.Batch batch = app.getBean(PartitionedApp.Batch.class);
        assertThat(batch.export()).containsExactly(0L, 0L, 2L);
        assertThat(batch.exportAsync().get()).containsExactly(0L, 0L, 2L);
        assertThat(grants).containsExactly("api/batch", "api/batch");
        // and over HTTP: /work/** is outside sema.web, so only the annotation's permits are held
        HttpResponse<String> r = send("/work/batch", null).get();
        assertThat(r.body()).isEqualTo("[0,0,2]");
    }

    @Test
    void aRefusedPartitionCallFallsBackNamingTheView() throws Exception {
        PartitionedApp.Batch batch = app.getBean(PartitionedApp.Batch.class);
        try (Permit all = api.tryAcquire(api.permits()).orElseThrow()) {
            assertThat(batch.tryExport()).isEqualTo("busy: api/batch");
            assertThat(batch.tryExportAsync().get()).isEqualTo("busy: api/batch");
        }
        assertThat(batch.tryExport()).isEqualTo("exported");
        assertThat(batch.tryExportAsync().get()).isEqualTo("exported");
    }

    /** The name of the semaphore a request of {@code path} held its permit of, seen while it held it. */
    private String heldBy(String path, String partitionHeader) {
        grants.clear();
        controller.release = new CountDownLatch(1);
        controller.entered.set(0);
        CompletableFuture<HttpResponse<String>> held = send(path, partitionHeader == null ? null
                : HEADER + ":" + partitionHeader);
        await(() -> controller.entered.get() == 1);
        List<String> seen = List.copyOf(grants);
        controller.release.countDown();
        assertThat(held.join().body()).isEqualTo("released");
        assertThat(seen).hasSize(1);
        return seen.get(0);
    }

    private static List<Long> used() {
        return ((Partitioned) api).partitionStates().stream().map(PartitionState::used).toList();
    }

    /** A GET, with one header given as {@code name:value} (or none). */
    private static CompletableFuture<HttpResponse<String>> send(String path, String header) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(20));
        if (header != null) {
            int colon = header.indexOf(':');
            request.header(header.substring(0, colon), header.substring(colon + 1));
        }
        return client.sendAsync(request.GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
