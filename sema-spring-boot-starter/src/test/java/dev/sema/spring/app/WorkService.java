package dev.sema.spring.app;

import dev.sema.spring.WithPermits;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Service;

/**
 * @WithPermits on blocking and asynchronous methods; counts how many calls run at once. The tests reach its state
 * through methods: the bean they get is the proxy.
 */
@Service
public class WorkService {
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger maxInFlight = new AtomicInteger();
    private final AtomicInteger virtualCalls = new AtomicInteger();
    /** Completed by the tests: the stage awaitPending returns. */
    private volatile CompletableFuture<String> pending = new CompletableFuture<>();

    public int maxInFlight() {
        return maxInFlight.get();
    }

    public void resetMaxInFlight() {
        maxInFlight.set(0);
    }

    public int virtualCalls() {
        return virtualCalls.get();
    }

    public CompletableFuture<String> newPending() {
        pending = new CompletableFuture<>();
        return pending;
    }

    @WithPermits("db")
    public String work(long millis) throws InterruptedException {
        enter();
        try {
            Thread.sleep(millis);
            return "done";
        } finally {
            inFlight.decrementAndGet();
        }
    }

    @WithPermits(value = "async-db", permits = 2)
    public CompletableFuture<String> workAsync(long millis) {
        enter();
        return CompletableFuture.supplyAsync(() -> "done", CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS))
                .whenComplete((v, e) -> inFlight.decrementAndGet());
    }

    @WithPermits("async-db")
    public CompletableFuture<String> awaitPending() {
        return pending;
    }

    /** Declared to return the interface, not CompletableFuture: the stage it returns is not a CompletableFuture. */
    @WithPermits("async-db")
    public CompletionStage<String> awaitPendingStage() {
        return pending.minimalCompletionStage();
    }

    @WithPermits(value = "single", timeout = "100ms")
    public CompletionStage<String> singleStage() {
        return CompletableFuture.completedFuture("single").minimalCompletionStage();
    }

    @WithPermits(value = "single", timeout = "0")
    public String single() {
        return "single";
    }

    @WithPermits(value = "single", timeout = "100ms")
    public CompletableFuture<String> singleAsync() {
        return CompletableFuture.completedFuture("single");
    }

    @WithPermits("single")
    public String waitForSingle() {
        return "single";
    }

    @WithPermits(value = "partner", droppedOn = UpstreamOverloaded.class)
    public String partner(String outcome) {
        return switch (outcome) {
            case "overloaded" -> throw new UpstreamOverloaded("partner answered 503");
            case "broken" -> throw new IllegalStateException("a bug, not an overload");
            default -> "quote";
        };
    }

    @WithPermits(value = "partner-async", droppedOn = UpstreamOverloaded.class)
    public CompletableFuture<String> partnerAsync(String outcome) {
        return "overloaded".equals(outcome) ? CompletableFuture.failedFuture(new UpstreamOverloaded("503"))
                : CompletableFuture.completedFuture("quote");
    }

    private void enter() {
        if (Thread.currentThread().isVirtual()) {
            virtualCalls.incrementAndGet();
        }
        int now = inFlight.incrementAndGet();
        maxInFlight.accumulateAndGet(now, Math::max);
    }
}
