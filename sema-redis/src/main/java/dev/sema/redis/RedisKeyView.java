package dev.sema.redis;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.SemaphoreListener;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * The semaphore of one key of a {@link RedisKeyedSemaphore}: it holds only the key, and finds (or opens) the key's
 * handle at each request, so it is never stale. A {@link RedisSemaphore}, so that its permits' fencing tokens need
 * no cast; resizing, closing and listeners belong to the family.
 */
final class RedisKeyView implements RedisSemaphore {
    private final RedisKeyedSemaphore family;
    private final String key;
    private final String name;

    RedisKeyView(RedisKeyedSemaphore family, String key) {
        this.family = family;
        this.key = key;
        this.name = family.name() + ":" + key;
    }

    String key() {
        return key;
    }

    @Override
    public RedisPermit acquire(long permits) throws InterruptedException {
        try {
            return family.acquire(this, permits, null, true);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public RedisPermit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        Objects.requireNonNull(timeout, "timeout");
        return family.acquire(this, permits, timeout, true);
    }

    @Override
    public RedisPermit acquireUninterruptibly(long permits) {
        try {
            return family.acquire(this, permits, null, false);
        } catch (InterruptedException | TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public RedisPermit drainPermits() {
        return family.drainPermits(this);
    }

    @Override
    public Optional<Permit> tryAcquire(long permits) {
        return family.tryAcquire(this, permits);
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits) {
        return family.acquireAsync(this, permits, null);
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return family.acquireAsync(this, permits, timeout);
    }

    /** Waits until the key's semaphore holds nothing, in any process. */
    @Override
    public void awaitIdle() throws InterruptedException {
        family.awaitIdle(this);
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        return family.awaitIdleAsync(this);
    }

    /** The key's limit as stored in Redis (one round trip, opening the key's handle if it is not live here). */
    @Override
    public long permits() {
        return family.query(this, "permits", LettuceSemaphore::permits);
    }

    @Override
    public long maxPermits() {
        return family.query(this, "maxPermits", LettuceSemaphore::maxPermits);
    }

    @Override
    public long availablePermits() {
        return family.query(this, "availablePermits", LettuceSemaphore::availablePermits);
    }

    @Override
    public int queueLength() {
        return family.query(this, "queueLength", LettuceSemaphore::queueLength);
    }

    @Override
    public void setPermits(long limit) {
        throw notHere("setPermits(" + limit + ")");
    }

    @Override
    public long addPermits(long n) {
        throw notHere("addPermits(" + n + ")");
    }

    @Override
    public long reducePermits(long n) {
        throw notHere("reducePermits(" + n + ")");
    }

    @Override
    public RedisSemaphore partition(String partition) {
        Objects.requireNonNull(partition, "name");
        throw new IllegalArgumentException("semaphore '" + name + "' has no partition '" + partition + "'; the keys of"
                + " keyed semaphore '" + family.name() + "' have no partitions");
    }

    @Override
    public Fairness fairness() {
        return Fairness.FIFO;
    }

    @Override
    public Duration lease() {
        return family.lease();
    }

    @Override
    public void close() {
        throw notHere("close()");
    }

    @Override
    public void close(Throwable cause) {
        throw notHere("close(" + cause + ")");
    }

    /** Whether the family is closed in this process (a key's semaphore is never closed for the fleet by it). */
    @Override
    public boolean isClosed() {
        return family.isClosed();
    }

    @Override
    public void addListener(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        throw new UnsupportedOperationException("semaphore '" + name + "' is a key of keyed semaphore '"
                + family.name() + "': its listeners are the family's, which see its events with it as the semaphore;"
                + " register there");
    }

    @Override
    public boolean removeListener(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        return false;
    }

    @Override
    public String name() {
        return name;
    }

    private UnsupportedOperationException notHere(String what) {
        return new UnsupportedOperationException(what + " on semaphore '" + name + "': every key has the limit of"
                + " keyed semaphore '" + family.name() + "', which is closed as a whole");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RedisKeyView v && v.family == family && v.key.equals(key);
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(family) * 31 + key.hashCode();
    }

    @Override
    public String toString() {
        RedisKeyedSemaphore.Entry e = family.peek(key);
        return e != null && e.ready.isDone() && !e.ready.isCompletedExceptionally() ? e.ready.join().toString()
                : "RedisSemaphore[name=" + name + ", not live in this process]";
    }
}
