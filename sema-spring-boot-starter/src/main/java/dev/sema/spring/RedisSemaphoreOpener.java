package dev.sema.spring;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import dev.sema.redis.RedisKeyedBuilder;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import java.time.Duration;

/** Opens {@code redis: true} semaphores and keyed families through the {@link RedisConnector}. */
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
        checkLease(at, lease, settings);
        checkIdleExpiry(at, config.expireWhenIdle(), settings);
        checkConfigured(at, "the semaphore", settings);
        if (name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
            throw settings.invalid(at, name, "is not a valid Redis semaphore name: it must be non-blank and must not"
                    + " contain braces (they delimit the cluster hash tag)", "Rename the semaphore under"
                    + " sema.semaphores.");
        }
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore(name, maxPermits,
                lease == null ? RedisSemaphore.DEFAULT_LEASE : lease, partitions.names());
        open(new RedisConnector.Opening<>(handle, connection -> build(connection, name, config, permits, maxPermits,
                partitions, at)), at, "the Redis semaphore '" + name + "'", settings);
        return handle;
    }

    @Override
    public KeyedSemaphore<Object> openKeyed(String name, SemaProperties.KeyedProperties config, long permits,
            int maxKeys, Semaphore parent, Settings settings) {
        String at = Settings.key("sema.keyed", name);
        checkLease(at, config.lease(), settings);
        checkIdleExpiry(at, config.expireWhenIdle(), settings);
        checkConfigured(at, "the family", settings);
        if (name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
            throw settings.invalid(at, name, "is not a valid name for a keyed family on Redis: it must be non-blank"
                    + " and must not contain braces (they delimit the cluster hash tag of its keys' semaphores)",
                    "Rename the family under sema.keyed.");
        }
        DeferredRedisKeyedSemaphore handle = new DeferredRedisKeyedSemaphore(name, permits, maxKeys,
                config.lease() == null ? RedisSemaphore.DEFAULT_LEASE : config.lease());
        open(new RedisConnector.Opening<>(handle, connection -> {
            RedisKeyedBuilder builder = connection.keyed(name).permits(permits).maxKeys(maxKeys);
            if (config.lease() != null) {
                builder.lease(config.lease());
            }
            if (config.expireWhenIdle() != null) {
                builder.expireWhenIdle(config.expireWhenIdle());
            }
            if (parent != null) {
                builder.parent(parent);
            }
            return builder.build();
        }), at, "the Redis keyed semaphore '" + name + "'", settings);
        return handle;
    }

    /** Opens {@code opening} now, or leaves it to the background; a failure that stops the start names {@code at}. */
    private void open(RedisConnector.Opening<?> opening, String at, String what, Settings settings) {
        try {
            redis.open(opening);
        } catch (RedisConnector.Unreachable e) {
            throw SemaRedisAutoConfiguration.unreachable(settings, redis.uri(), e);
        } catch (RedisSemaphoreException e) {
            throw settings.invalid(at + ".redis", true, what + " could not be opened: "
                    + Settings.redacted(e.getMessage()) + " (sema.redis.fail-fast is true)", "Check that Redis is"
                    + " running and reachable at sema.redis.uri (or through the RedisSemaphores bean), or set"
                    + " sema.redis.fail-fast to false to start without it.", e);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw settings.invalid(at + ".redis", true, what + " could not be opened: "
                    + Settings.redacted(e.getMessage()), null, e);
        }
    }

    private static void checkLease(String at, Duration lease, Settings settings) {
        if (lease != null && (lease.compareTo(RedisSemaphore.MIN_LEASE) < 0
                || lease.compareTo(RedisSemaphore.MAX_LEASE) > 0)) {
            throw settings.invalid(at + ".lease", lease, "must be between " + Durations.format(RedisSemaphore.MIN_LEASE)
                    + " and " + RedisSemaphore.MAX_LEASE.toDays() + "d", null);
        }
    }

    private static void checkIdleExpiry(String at, Duration idle, Settings settings) {
        if (idle != null && (idle.compareTo(RedisSemaphore.MIN_IDLE_EXPIRY) < 0
                || idle.compareTo(RedisSemaphore.MAX_IDLE_EXPIRY) > 0)) {
            throw settings.invalid(at + ".expire-when-idle", idle, "must be between "
                    + Durations.format(RedisSemaphore.MIN_IDLE_EXPIRY) + " and " + RedisSemaphore.MAX_IDLE_EXPIRY.toDays()
                    + "d", null);
        }
    }

    private void checkConfigured(String at, String what, Settings settings) {
        if (!redis.configured()) {
            throw settings.invalid(at + ".redis", true, "there is no Redis to keep it in",
                    "Set sema.redis.uri (e.g. redis://127.0.0.1:6379), or define a RedisSemaphores bean, or make"
                            + " " + what + " local with " + at + ".redis=false.");
        }
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
