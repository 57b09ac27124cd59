package dev.sema.spring;

import dev.sema.Semaphore;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;

/** Opens {@code redis: true} semaphores through the application's {@link RedisSemaphores} bean. */
final class RedisSemaphoreOpener implements RedisSemaphoreSource {
    private static final System.Logger LOG = System.getLogger(RedisSemaphoreOpener.class.getName());

    private final ObjectProvider<RedisSemaphores> redis;

    RedisSemaphoreOpener(ObjectProvider<RedisSemaphores> redis) {
        this.redis = redis;
    }

    @Override
    public Semaphore open(String name, SemaProperties.SemaphoreProperties config, long permits, long maxPermits,
            Settings settings) {
        String at = Settings.semaphore(name);
        SemaphoreRegistryFactory.checkRedisFits(at, config, settings);
        Duration lease = config.lease();
        if (lease != null && (lease.compareTo(RedisSemaphore.MIN_LEASE) < 0 || lease.compareTo(RedisSemaphore.MAX_LEASE) > 0)) {
            throw settings.invalid(at + ".lease", lease, "must be between " + Durations.format(RedisSemaphore.MIN_LEASE)
                    + " and " + RedisSemaphore.MAX_LEASE.toDays() + "d", null);
        }
        Duration idle = config.expireWhenIdle();
        if (idle != null && (idle.compareTo(RedisSemaphore.MIN_IDLE_EXPIRY) < 0
                || idle.compareTo(RedisSemaphore.MAX_IDLE_EXPIRY) > 0)) {
            throw settings.invalid(at + ".expire-when-idle", idle, "must be between "
                    + Durations.format(RedisSemaphore.MIN_IDLE_EXPIRY) + " and " + RedisSemaphore.MAX_IDLE_EXPIRY.toDays()
                    + "d", null);
        }
        RedisSemaphores connection = redis.getIfAvailable();
        if (connection == null) {
            throw settings.invalid(at + ".redis", true, "there is no Redis to keep it in",
                    "Set sema.redis.uri (e.g. redis://127.0.0.1:6379), or define a RedisSemaphores bean, or make"
                            + " the semaphore local with " + at + ".redis=false.");
        }
        RedisSemaphore.Builder builder;
        try {
            builder = connection.semaphore(name);
        } catch (IllegalArgumentException e) {
            throw settings.invalid(at, name, "is not a valid Redis semaphore name: " + e.getMessage(),
                    "Rename the semaphore under sema.semaphores.");
        }
        builder.permits(permits).maxPermits(maxPermits);
        if (config.lease() != null) {
            builder.lease(config.lease());
        }
        if (config.expireWhenIdle() != null) {
            builder.expireWhenIdle(config.expireWhenIdle());
        }
        RedisSemaphore semaphore;
        try {
            semaphore = builder.build();
        } catch (RedisSemaphoreException | IllegalArgumentException | IllegalStateException e) {
            throw settings.invalid(at + ".redis", true, "the Redis semaphore '" + name + "' could not be opened: "
                    + e.getMessage(), "Check that Redis is running and reachable at sema.redis.uri (or through the"
                    + " RedisSemaphores bean).", e);
        }
        if (semaphore.maxPermits() != maxPermits) {
            LOG.log(System.Logger.Level.WARNING, () -> "semaphore '" + name + "' already exists in Redis with"
                    + " maxPermits " + semaphore.maxPermits() + ": the values stored there win, and " + at
                    + ".permits/.max-permits (" + permits + "/" + maxPermits + ") apply only when it is created");
        }
        return semaphore;
    }
}
