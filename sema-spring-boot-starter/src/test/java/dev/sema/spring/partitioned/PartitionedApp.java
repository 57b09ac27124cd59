package dev.sema.spring.partitioned;

import dev.sema.Semaphore;
import dev.sema.internal.Partitioned;
import dev.sema.spring.PermitUnavailableException;
import dev.sema.spring.SemaphoreRegistry;
import dev.sema.spring.WithPermits;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The application of the partition web tests (profile partitions): sema.web over /api/** of a partitioned
 * semaphore, and @WithPermits methods on one of its partitions under /work/**, which the filter leaves alone.
 */
@SpringBootApplication
public class PartitionedApp {

    /** Every /api/** path holds its permit until the test lets it go. */
    @RestController
    public static class Api {
        /** Counted down by the tests: a held request waits until then. */
        public volatile CountDownLatch release = new CountDownLatch(1);
        public final AtomicInteger entered = new AtomicInteger();
        private final Batch batch;

        public Api(Batch batch) {
            this.batch = batch;
        }

        @GetMapping({ "/api/checkout/hold", "/api/export/hold", "/api/other/hold" })
        public String hold() throws InterruptedException {
            entered.incrementAndGet();
            return release.await(20, TimeUnit.SECONDS) ? "released" : "timed out";
        }

        @GetMapping({ "/api/export/quick", "/api/other/quick" })
        public String quick() {
            return "quick";
        }

        @GetMapping("/work/batch")
        public List<Long> work() {
            return batch.export();
        }
    }

    /** Work of the batch partition: each method tells the partitions' held permits it saw while it ran. */
    @Service
    public static class Batch {
        private final SemaphoreRegistry registry;

        public Batch(SemaphoreRegistry registry) {
            this.registry = registry;
        }

        @WithPermits(value = "api", partition = "batch", permits = 2)
        public List<Long> export() {
            return held();
        }

        @WithPermits(value = "api", partition = "${app.partition:batch}", permits = 2)
        public CompletableFuture<List<Long>> exportAsync() {
            return CompletableFuture.completedFuture(held());
        }

        @WithPermits(value = "api", partition = "batch", timeout = "0", fallback = "busy")
        public String tryExport() {
            return "exported";
        }

        @WithPermits(value = "api", partition = "batch", timeout = "0", fallback = "busyLater")
        public CompletableFuture<String> tryExportAsync() {
            return CompletableFuture.completedFuture("exported");
        }

        public String busy(PermitUnavailableException refused) {
            return "busy: " + refused.semaphore();
        }

        public CompletableFuture<String> busyLater(PermitUnavailableException refused) {
            return CompletableFuture.completedFuture("busy: " + refused.semaphore());
        }

        private List<Long> held() {
            Semaphore api = registry.get("api");
            return ((Partitioned) api).partitionStates().stream().map(Partitioned.PartitionState::used).toList();
        }
    }
}
