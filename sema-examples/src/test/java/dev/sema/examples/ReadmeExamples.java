package dev.sema.examples;

import dev.sema.AdaptiveLimit;
import dev.sema.Fairness;
import dev.sema.Gate;
import dev.sema.KeyedSemaphore;
import dev.sema.LeakDetection;
import dev.sema.Parallel;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.grpc.SemaClientInterceptor;
import dev.sema.grpc.SemaServerInterceptor;
import dev.sema.micrometer.SemaphoreMetrics;
import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Every Java example of the README, verbatim, so that the compiler checks them;
 * {@link ReadmeExamplesTest} checks that each README example is here and runs the local ones. The
 * examples are the bodies of the {@code exampleN} methods; what surrounds them declares the names
 * they use.
 */
@SuppressWarnings("unused") // results the examples compute and do not use
class ReadmeExamples {

    // ---------------------------------------------------------------- the names the examples use

    record Request(int id) {
    }

    record Response(int status) {
    }

    record Page(String url) {
    }

    record Row(int key) {
    }

    record Image(String name) {
    }

    record Job(int id) {
        void run() {
        }
    }

    static final class Connection implements AutoCloseable {
        boolean closed;

        @Override
        public void close() {
            closed = true;
        }
    }

    static final class Storage {
        long lastToken;

        void write(byte[] data, long fencingToken) {
            if (fencingToken <= lastToken) {
                throw new IllegalStateException("stale fencing token " + fencingToken);
            }
            lastToken = fencingToken;
        }
    }

    final Request request = new Request(1);
    final File file = new File("data.bin");
    final int sizeKiB = 512;
    final long cost = 3;
    final List<String> urls = List.of("https://example.org/a", "https://example.org/b");
    final List<Integer> keys = List.of(1, 2, 3);
    final List<File> files = List.of(new File("a.png"), new File("b.png"));
    final List<Job> jobs = List.of(new Job(1), new Job(2));
    final List<Request> requests = List.of(new Request(1), new Request(2));
    final Connection connection = new Connection();
    final Storage storage = new Storage();
    final byte[] data = new byte[16];
    final Semaphore pool = Semaphore.builder().permits(32).maxPermits(256).build();
    final Semaphore memory = Semaphore.create(64 * 1024);
    /** The service of the gRPC example (compiled, not run: no transport is on this class path). */
    final ServerServiceDefinition service = ServerServiceDefinition.builder("example.Echo").build();
    int sent;
    int rejected;

    Response send(Request r) throws IOException {
        sent++;
        return new Response(200);
    }

    CompletableFuture<Response> sendAsync(Request r) {
        sent++;
        return CompletableFuture.completedFuture(new Response(200));
    }

    void reject(Request r) {
        rejected++;
    }

    void process(File f) {
    }

    void handle(Request r) {
    }

    Page fetch(String url) {
        return new Page(url);
    }

    Row load(int key) {
        return new Row(key);
    }

    Image decode(File f) {
        return new Image(f.getName());
    }

    void abandonWork() {
    }

    // ---------------------------------------------------------------- Sema

    void example1() throws InterruptedException {
        Semaphore db = Semaphore.create(10);
        try (Permit p = db.acquire()) {
            // at most 10 of these run at once; the permit goes back exactly once, however the block ends
        }
    }

    Semaphore example2() {
        Semaphore pool = Semaphore.builder()
                .name("http-client")        // shown in messages and toString()
                .permits(32)                // the limit now
                .maxPermits(256)            // the ceiling the limit may be raised to
                .fairness(Fairness.FIFO)    // the default; or Fairness.BARGING
                .build();
        return pool;
    }

    void example3() throws InterruptedException, IOException {
        try (Permit p = pool.acquire()) {
            send(request);
        }
    }

    void example4() throws InterruptedException {
        Semaphore memory = Semaphore.create(64 * 1024);     // 64 MiB, in KiB
        try (Permit p = memory.acquire(sizeKiB)) {          // waits until sizeKiB are free
            process(file);
        }
    }

    void example5() throws InterruptedException, IOException {
        try (Permit p = pool.acquire(1, Duration.ofMillis(200))) {
            send(request);
        } catch (TimeoutException e) {
            reject(request);
        }
    }

    void example6() throws IOException {
        Optional<Permit> maybe = pool.tryAcquire();
        if (maybe.isEmpty()) {
            reject(request);
            return;
        }
        try (Permit p = maybe.get()) {
            send(request);
        }
    }

    void example7() {
        CompletableFuture<Response> response = pool.acquireAsync()
                .thenCompose(p -> sendAsync(request).whenComplete((r, e) -> p.close()));
        response.join();
    }

    void example8() {
        CompletableFuture<Permit> slot = pool.acquireAsync(1, Duration.ofSeconds(1));
        // ... the caller gives up:
        if (!slot.cancel(false)) {              // too late: already granted (or failed)
            slot.thenAccept(Permit::close);     // so give the permit back
        }
    }

    void example9() throws InterruptedException, IOException {
        Response r = pool.withPermits(1, () -> send(request));   // rethrows what send throws
        CompletableFuture<Response> f =
                pool.withPermitsAsync(1, () -> sendAsync(request)); // released when the stage completes
        f.join();
    }

    void example10() {
        pool.setPermits(128);       // raise: queued requests are served at once
        pool.setPermits(8);         // lower: who holds more keeps it; availablePermits() may go negative
        pool.addPermits(16);        // returns how many were added, saturating at maxPermits()
        pool.reducePermits(4);      // returns how many were removed, not below 0
    }

    void example11() throws InterruptedException {
        pool.close();               // queued and later acquires fail with SemaphoreClosedException
        pool.awaitIdle();           // returns once nothing is held; held Permits can still be closed
    }

    void example12() throws InterruptedException {
        Permit batch = memory.acquire(1_024);
        Permit part = batch.split(256);     // a new Permit of 256 for another thread; batch holds 768
        batch.release(512);                 // give back part early; batch holds 256
        batch.merge(part);                  // take part's permits back; batch holds 512, part 0
        batch.forget();                     // the 512 stay consumed: the limit drops by 512
    }

    // ---------------------------------------------------------------- Gate

    void example13() throws Exception {
        Gate gate = new Gate("requests");

        // for each request, on any thread:
        try (Gate.Pass pass = gate.enter()) {       // throws GateClosedException once closed
            handle(request);
        }

        // on shutdown: no new requests; wait for the ones inside, then release what they use
        gate.close().get(30, TimeUnit.SECONDS);
        connection.close();
    }

    void example14() {
        Gate gate = new Gate();
        Gate.Pass pass = gate.enter();
        sendAsync(request).whenComplete((response, failure) -> pass.close());
        gate.close().join();
    }

    // ---------------------------------------------------------------- Parallel

    List<Page> example15() throws InterruptedException {
        List<Page> pages = Parallel.map(urls, 8, url -> fetch(url));     // at most 8 fetches at once
        return pages;
    }

    List<Row> example16() throws InterruptedException {
        Semaphore db = Semaphore.create(16);
        List<Row> rows = Parallel.map(keys, db, key -> load(key));        // with every other user of db: <= 16
        return rows;
    }

    List<Image> example17() throws InterruptedException {
        Semaphore memory = Semaphore.create(512L * 1024 * 1024);         // bytes
        List<Image> images = Parallel.mapWeighted(files, memory, File::length, file -> decode(file));
        return images;
    }

    List<Response> example18() throws InterruptedException {
        Parallel.forEach(jobs, 4, job -> job.run());                      // throws the first failure
        CompletableFuture<List<Response>> all = Parallel.mapAsync(requests, 32, r -> sendAsync(r));
        return all.join();
    }

    // ---------------------------------------------------------------- leak detection and refill

    Semaphore example19() {
        Semaphore connections = Semaphore.builder()
                .permits(10)
                .leakDetection(LeakDetection.SAMPLED)   // OFF (the default), SAMPLED or PARANOID
                .build();
        return connections;
    }

    Semaphore example20() throws InterruptedException {
        // 10 requests per second on average, bursts of up to 50
        Semaphore credit = Semaphore.builder()
                .permits(50).maxPermits(50)
                .refill(1, Duration.ofMillis(100))
                .build();
        credit.acquire().forget();          // spend one unit of credit
        credit.acquire(cost).forget();      // or several: waits until that much has accrued
        return credit;
    }

    // ---------------------------------------------------------------- Redis (compiled only: it names a fixed port)

    void example21() throws InterruptedException {
        try (RedisSemaphores redis = RedisSemaphores.connect("redis://127.0.0.1:6379")) {
            RedisSemaphore api = redis.semaphore("partner-api")
                    .permits(10)                            // only if "partner-api" does not exist yet
                    .lease(Duration.ofSeconds(10))          // default 30 s, renewed while the Permit is open
                    .build();
            try (RedisPermit p = api.acquire()) {
                p.leaseLost().thenRun(() -> abandonWork()); // the lease could not be kept alive in time
                storage.write(data, p.fencingToken());      // the storage refuses tokens older than the last it saw
            }
        }
    }

    void example21b() throws InterruptedException {
        String tenantId = "acme";
        try (RedisSemaphores redis = RedisSemaphores.connect("redis://127.0.0.1:6379")) {
            KeyedSemaphore<String> exports = redis.keyed("exports")
                    .permits(5)                              // per tenant, across every process
                    .maxKeys(10_000)                         // tenants live in this process at once
                    .expireWhenIdle(Duration.ofMinutes(10))  // the default: an idle tenant leaves Redis
                    .build();
            try (Permit p = exports.get(tenantId).acquire()) {
                export(tenantId);
            }
        }
    }

    void example22() {
        Semaphore db = Semaphore.builder().name("db").permits(10).listener(new SemaphoreListener() {
            @Override
            public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
                System.out.println(s.name() + ": " + why + " after " + waitNanos / 1_000_000 + " ms");
            }
        }).build();
        db.tryAcquire(11 - 1).orElseThrow().close();
    }

    void example23() {
        Semaphore db = Semaphore.builder().name("db").permits(10).build();
        MeterRegistry registry = new SimpleMeterRegistry();
        SemaphoreMetrics metrics = new SemaphoreMetrics(db, Tags.of("service", "orders"));
        metrics.bindTo(registry);   // gauges, timers and a counter, tagged name="db", service="orders"
        metrics.close();
    }

    // ---------------------------------------------------------------- adaptive limits

    /** A partner API's client: answers 200, or 503 when told to. */
    static final class Client {
        int status = 200;

        Response call(Request r) {
            return new Response(status);
        }
    }

    final Client client = new Client();

    Response tooBusy() {
        return new Response(429);
    }

    Response example24() throws InterruptedException {
        client.status = 503; // the partner is overloaded
        Semaphore partner = Semaphore.builder().name("partner-api").permits(20).maxPermits(500).build();
        AdaptiveLimit adaptive = AdaptiveLimit.gradient().minLimit(4).build(partner);

        Optional<Permit> permit = partner.tryAcquire();   // refuse at once beyond the limit...
        if (permit.isEmpty()) {
            return tooBusy();
        }
        try (Permit p = permit.get()) {
            Response r = client.call(request);
            if (r.status() == 503 || r.status() == 429) {
                adaptive.dropped();                        // ...and say when the downstream is overloaded
            }
            return r;
        }
    }

    void example25() throws Exception {
        Semaphore api = Semaphore.builder().name("api").permits(100)
                .partition("checkout", 0.6)   // declaration order is priority: checkout first
                .partition("browse", 0.3)
                .partition("batch", 0.1)
                .build();
        Semaphore batch = api.partition("batch");   // a view: the same limit, its own FIFO queue

        try (Permit p = batch.acquire(1, Duration.ofMillis(50))) {   // batch gives up first under overload
            export(p);
        }
    }

    void example26() throws Exception {
        Semaphore api = Semaphore.builder().name("api").permits(100)
                .partition("checkout", 0.6).partition("batch", 0.4).build();
        String tenantId = "acme";
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder()
                .name("exports")
                .permits(5)                       // at most 5 exports at once per tenant
                .maxKeys(100_000)                 // tenants exporting or waiting, at most
                .parent(api.partition("batch"))   // optional: every tenant's exports also hold the batch partition's permits
                .build();
        try (Permit p = exports.get(tenantId).acquire()) {
            export(tenantId);
        }
        if (exports.size() != 0 || api.availablePermits() != 100) {
            throw new AssertionError(exports + " " + api);
        }
    }

    void example27() {
        Semaphore api = Semaphore.builder().name("api").permits(100)
                .partition("interactive", 0.8)
                .partition("batch", 0.2)
                .build();
        KeyedSemaphore<String> tenants = KeyedSemaphore.<String>builder().name("tenants").permits(10).build();
        ServerInterceptor limit = SemaServerInterceptor.builder(api)
                .partitionBy(Metadata.Key.of("x-traffic-class", Metadata.ASCII_STRING_MARSHALLER))
                .keyedBy(tenants, Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER)) // 10 calls per tenant
                .maxWait(Duration.ofMillis(50))      // default 0: refuse at once when no permit is free
                .build();
        Server server = ServerBuilder.forPort(8080)
                .addService(ServerInterceptors.intercept(service, limit))
                .build();

        // A client: at most 32 calls in flight to the backend, each waiting up to 2 s for its turn.
        ManagedChannel channel = ManagedChannelBuilder.forTarget("backend:443")
                .intercept(SemaClientInterceptor.builder(Semaphore.create(32)).maxWait(Duration.ofSeconds(2)).build())
                .build();
    }

    /** The export of example 26, for one tenant. */
    void export(String tenant) {
        if (tenant.isEmpty()) {
            throw new AssertionError(tenant);
        }
    }

    /** The batch export of example 25. */
    void export(Permit p) {
        if (p.permits() != 1) {
            throw new AssertionError(p);
        }
    }
}
