package dev.sema.spring;

import dev.sema.Semaphore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The {@code semaphores} health contributor: UP, or DOWN naming each Redis semaphore whose state cannot be
 * read (Redis down, or no reply within {@link #TIMEOUT}). Local semaphores are always readable. The Redis
 * semaphores are read in parallel, one round trip each, each on a virtual thread of its own (a read that
 * outlives the check ends by itself, within the Redis command timeout).
 *
 * <pre>
 * {"status": "DOWN", "details": {"semaphores": {"db": "local", "partner": "redis"},
 *                               "unreadable": {"partner": "RedisSemaphoreException: ..."}}}
 * </pre>
 */
final class SemaphoresHealthIndicator implements HealthIndicator {
    /** How long a check waits for the Redis semaphores' replies, in all. */
    static final Duration TIMEOUT = Duration.ofSeconds(3);

    private final SemaphoreRegistry registry;

    SemaphoresHealthIndicator(SemaphoreRegistry registry) {
        this.registry = registry;
    }

    @Override
    public Health health() {
        Map<String, String> kinds = new LinkedHashMap<>();
        Map<String, CompletableFuture<SemaphoreState>> reads = new LinkedHashMap<>();
        for (Map.Entry<String, Semaphore> e : registry.all().entrySet()) {
            Semaphore s = e.getValue();
            kinds.put(e.getKey(), SemaphoreState.kind(s));
            if (SemaphoreState.isRedis(s)) {
                CompletableFuture<SemaphoreState> read = new CompletableFuture<>();
                Thread.ofVirtual().name("sema-health-" + e.getKey()).start(() -> {
                    try {
                        read.complete(SemaphoreState.read(s));
                    } catch (Throwable t) {
                        read.completeExceptionally(t);
                    }
                });
                reads.put(e.getKey(), read);
            }
        }
        Map<String, String> unreadable = new LinkedHashMap<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        for (Map.Entry<String, CompletableFuture<SemaphoreState>> e : reads.entrySet()) {
            String problem = problem(e.getValue(), deadline);
            if (problem != null) {
                unreadable.put(e.getKey(), problem);
            }
        }
        Health.Builder health = unreadable.isEmpty() ? Health.up() : Health.down();
        health.withDetail("semaphores", kinds);
        if (!unreadable.isEmpty()) {
            health.withDetail("unreadable", unreadable);
        }
        return health.build();
    }

    /** Why a read failed, or {@code null} when it succeeded. */
    private static String problem(CompletableFuture<SemaphoreState> read, long deadline) {
        try {
            read.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return null;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return cause.getClass().getSimpleName() + ": " + Settings.redacted(cause.getMessage());
        } catch (TimeoutException e) {
            return "no reply within " + Durations.format(TIMEOUT);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }
}
