package dev.sema.redis;

import dev.sema.internal.AbstractKeyView;
import java.time.Duration;
import java.util.Objects;

/**
 * The semaphore of one key of a {@link RedisKeyedSemaphore}: it finds (or opens) the key's handle at each request,
 * through the family. A {@link RedisSemaphore}, so that its permits' fencing tokens need no cast; what it refuses,
 * and what makes two views equal, is {@link AbstractKeyView}'s.
 */
final class RedisKeyView extends AbstractKeyView<String, RedisPermit> implements RedisSemaphore {
    private final String name;

    RedisKeyView(RedisKeyedSemaphore family, String key) {
        super(family, key);
        this.name = family.name() + ":" + key;
    }

    /** The key's limit as stored in Redis (one round trip, opening the key's handle if it is not live here). */
    @Override
    public long permits() {
        return redis().query(this, "permits", LettuceSemaphore::permits);
    }

    @Override
    public long maxPermits() {
        return redis().query(this, "maxPermits", LettuceSemaphore::maxPermits);
    }

    @Override
    public long availablePermits() {
        return redis().query(this, "availablePermits", LettuceSemaphore::availablePermits);
    }

    @Override
    public int queueLength() {
        return redis().query(this, "queueLength", LettuceSemaphore::queueLength);
    }

    @Override
    public RedisSemaphore partition(String partition) {
        Objects.requireNonNull(partition, "name");
        throw new IllegalArgumentException("semaphore '" + name + "' has no partition '" + partition + "'; the keys of"
                + " keyed semaphore '" + redis().name() + "' have no partitions");
    }

    private RedisKeyedSemaphore redis() {
        return (RedisKeyedSemaphore) family();
    }

    @Override
    public Duration lease() {
        return redis().lease();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        RedisKeyedSemaphore.Entry e = redis().peek(key());
        return e != null && e.ready.isDone() && !e.ready.isCompletedExceptionally() ? e.ready.join().toString()
                : "RedisSemaphore[name=" + name + ", not live in this process]";
    }
}
