package dev.sema.spring;

import dev.sema.Semaphore;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import java.time.Duration;

/** Opens {@code redis: true} semaphores through the {@link RedisConnector}. */
final class RedisSemaphoreOpener implements RedisSemaphoreSource {
    private static final System.Logger LOG = System.getLogger(RedisSemaphoreOpener.class.getName());

    private final RedisConnector redis;

    RedisSemaphoreOpener(RedisConnector redis) {
        this.redis = redis;
    }

    @Override
    public Semaphore open(String name, SemaProperties.SemaphoreProperties config, long permits, long maxPermits,
            ConfiguredPartitions partitions, Settings settings) {
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
        if (!redis.configured()) {
            throw settings.invalid(at + ".redis", true, "there is no Redis to keep it in",
                    "Set sema.redis.uri (e.g. redis://127.0.0.1:6379), or define a RedisSemaphores bean, or make"
                            + " the semaphore local with " + at + ".redis=false.");
        }
        if (name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
            throw settings.invalid(at, name, "is not a valid Redis semaphore name: it must be non-blank and must not"
                    + " contain braces (they delimit the cluster hash tag)", "Rename the semaphore under"
                    + " sema.semaphores.");
        }
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore(name, maxPermits,
                lease == null ? RedisSemaphore.DEFAULT_LEASE : lease, partitions.names());
        try {
            redis.open(new RedisConnector.Opening(handle, connection -> build(connection, name, config, permits,
                    maxPermits, partitions, at)));
        } catch (RedisConnector.Unreachable e) {
            throw SemaRedisAutoConfiguration.unreachable(settings, redis.uri(), e);
        } catch (RedisSemaphoreException e) {
            throw settings.invalid(at + ".redis", true, "the Redis semaphore '" + name + "' could not be opened: "
                    + Settings.redacted(e.getMessage()) + " (sema.redis.fail-fast is true)", "Check that Redis is"
                    + " running and reachable at sema.redis.uri (or through the RedisSemaphores bean), or set"
                    + " sema.redis.fail-fast to false to start without it.", e);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw settings.invalid(at + ".redis", true, "the Redis semaphore '" + name + "' could not be opened: "
                    + Settings.redacted(e.getMessage()), null, e);
        }
        return handle;
    }

    private static RedisSemaphore build(RedisSemaphores connection, String name,
            SemaProperties.SemaphoreProperties config, long permits, long maxPermits, ConfiguredPartitions partitions,
            String at) {
        RedisSemaphore.Builder builder = connection.semaphore(name).permits(permits).maxPermits(maxPermits);
        partitions.forEach(builder::partition);
        if (config.lease() != null) {
            builder.lease(config.lease());
        }
        if (config.expireWhenIdle() != null) {
            builder.expireWhenIdle(config.expireWhenIdle());
        }
        RedisSemaphore semaphore = builder.build();
        if (semaphore.maxPermits() != maxPermits) {
            LOG.log(System.Logger.Level.WARNING, () -> "semaphore '" + name + "' already exists in Redis with"
                    + " maxPermits " + semaphore.maxPermits() + ": the values stored there win, and " + at
                    + ".permits/.max-permits (" + permits + "/" + maxPermits + ") apply only when it is created");
        }
        return semaphore;
    }

    @Override
    public void whenOpen(Semaphore semaphore, Runnable action) {
        ((DeferredRedisSemaphore) semaphore).whenOpen(opened -> action.run());
    }
}
