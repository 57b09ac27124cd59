package dev.sema.spring.app;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** /work/** calls the @WithPermits services; /api/** is behind the sema.web filter, /open/** is not. */
@RestController
public class Controllers {
    private final WorkService work;
    /** Completed by the tests: what /api/deferred answers, asynchronously. */
    public volatile CompletableFuture<String> deferred = new CompletableFuture<>();
    /** Counted down by the tests: /api/hold blocks until then. */
    public volatile CountDownLatch release = new CountDownLatch(1);
    public final AtomicInteger entered = new AtomicInteger();
    public final AtomicInteger virtualRequests = new AtomicInteger();

    public Controllers(WorkService work) {
        this.work = work;
    }

    @GetMapping("/work/sync")
    public String sync(@RequestParam long ms) throws InterruptedException {
        return work.work(ms);
    }

    @GetMapping("/work/async")
    public CompletableFuture<String> async(@RequestParam long ms) {
        return work.workAsync(ms);
    }

    @GetMapping("/work/single")
    public String single() {
        return work.single();
    }

    @GetMapping("/work/single-async")
    public CompletableFuture<String> singleAsync() {
        return work.singleAsync();
    }

    @GetMapping("/work/partner/{outcome}")
    public String partner(@PathVariable String outcome) {
        return work.partner(outcome);
    }

    @GetMapping("/api/quick")
    public String quick() {
        if (Thread.currentThread().isVirtual()) {
            virtualRequests.incrementAndGet();
        }
        return "quick";
    }

    @GetMapping("/api/hold")
    public String hold() throws InterruptedException {
        entered.incrementAndGet();
        return release.await(20, TimeUnit.SECONDS) ? "released" : "timed out";
    }

    @GetMapping("/api/deferred")
    public CompletableFuture<String> deferred() {
        return deferred;
    }

    @GetMapping("/open/quick")
    public String open() {
        return "open";
    }
}
