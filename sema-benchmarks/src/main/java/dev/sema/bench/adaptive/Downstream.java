package dev.sema.bench.adaptive;

import dev.sema.Fairness;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A simulated dependency with a true capacity: {@code capacity} requests are served at once, each for
 * {@code base} time (uniformly 0.8x to 1.2x); the rest wait in its queue, in arrival order, and a request
 * that finds {@code maxQueue} waiting fails at once (a 503). Callers give up after {@code clientTimeout};
 * the server does not know, and still spends its time on the abandoned request when its turn comes, as a
 * server without deadline propagation does. So up to the capacity the latency is flat; beyond it, latency
 * grows with the queue, callers start timing out, and once the queue holds more than a timeout's worth of
 * work, most of what the server does is wasted: goodput collapses. The capacity can change while it runs.
 */
final class Downstream {
    private final Semaphore servers;
    private final long baseNanos;
    private final long clientTimeoutNanos;
    private final int maxQueue;

    Downstream(int capacity, Duration base, Duration clientTimeout, int maxQueue) {
        this.servers = Semaphore.builder().permits(capacity).maxPermits(100_000).fairness(Fairness.FIFO)
                .name("downstream-servers").build();
        this.baseNanos = base.toNanos();
        this.clientTimeoutNanos = clientTimeout.toNanos();
        this.maxQueue = maxQueue;
    }

    void capacity(int capacity) {
        servers.setPermits(capacity);
    }

    /**
     * Makes one call and waits for it, at most the client timeout.
     *
     * @return whether it succeeded in time
     */
    boolean call() throws InterruptedException {
        if (servers.queueLength() >= maxQueue) {
            return false;
        }
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        Thread.startVirtualThread(() -> {
            try (var server = servers.acquire()) {
                long service = (long) (baseNanos * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
                Thread.sleep(Duration.ofNanos(service));
                done.complete(true);
            } catch (InterruptedException e) {
                done.complete(false);
            }
        });
        try {
            return done.get(clientTimeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return false;
        }
    }
}
