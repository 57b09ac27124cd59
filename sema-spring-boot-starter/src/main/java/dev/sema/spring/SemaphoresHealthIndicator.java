package dev.sema.spring;

import dev.sema.Semaphore;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The {@code semaphores} health contributor: UP, or DOWN naming each Redis semaphore whose state cannot be
 * read (Redis down, or no reply within {@link SemaphoreState#READ_TIMEOUT}), and each keyed family on Redis not open
 * yet (Redis not reached since startup). Local semaphores are always readable. The semaphores are read as {@link SemaphoreState#readAll} reads them: the Redis ones in parallel,
 * the wait bounded in all.
 *
 * <pre>
 * {"status": "DOWN", "details": {"semaphores": {"db": "local", "partner": "redis"},
 *                               "unreadable": {"partner": "RedisSemaphoreException: ..."}}}
 * </pre>
 */
final class SemaphoresHealthIndicator implements HealthIndicator {
    private final SemaphoreRegistry registry;

    SemaphoresHealthIndicator(SemaphoreRegistry registry) {
        this.registry = registry;
    }

    @Override
    public Health health() {
        Map<String, Semaphore> all = registry.all();
        Map<String, String> kinds = new LinkedHashMap<>();
        all.forEach((name, s) -> kinds.put(name, SemaphoreState.kind(s)));
        Map<String, String> unreadable = new LinkedHashMap<>();
        SemaphoreState.readAll(all).forEach((name, reading) -> {
            if (reading instanceof SemaphoreState.Unreadable u) {
                unreadable.put(name, u.problem());
            }
        });
        registry.allKeyed().forEach((name, family) -> {
            String notOpen = SemaphoreState.notOpen(family);
            if (notOpen != null) {
                unreadable.put(name, notOpen);
            }
        });
        Health.Builder health = unreadable.isEmpty() ? Health.up() : Health.down();
        health.withDetail("semaphores", kinds);
        if (!unreadable.isEmpty()) {
            health.withDetail("unreadable", unreadable);
        }
        return health.build();
    }
}
