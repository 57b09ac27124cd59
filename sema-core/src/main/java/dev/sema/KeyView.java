package dev.sema;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * The semaphore of one key of a {@link LocalKeyedSemaphore}: it holds only the key, and finds (or makes) the
 * key's engine at each request, so it is never stale. Resizing, closing and listeners belong to the family.
 */
final class KeyView<K> implements Semaphore {
    private final LocalKeyedSemaphore<K> family;
    private final K key;
    /** Built when first asked for: a view is made for every request, its name only for messages and events. */
    private String name;

    KeyView(LocalKeyedSemaphore<K> family, K key) {
        this.family = family;
        this.key = key;
    }

    K key() {
        return key;
    }

    @Override
    public Permit acquire(long permits) throws InterruptedException {
        try {
            return family.acquire(this, permits, null, true);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        Objects.requireNonNull(timeout, "timeout");
        return family.acquire(this, permits, timeout, true);
    }

    @Override
    public Permit acquireUninterruptibly(long permits) {
        try {
            return family.acquire(this, permits, null, false);
        } catch (InterruptedException | TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public Permit drainPermits() {
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

    /** Waits until the key holds nothing: at once when it is idle. */
    @Override
    public void awaitIdle() throws InterruptedException {
        family.awaitIdle(this);
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        return family.awaitIdleAsync(this);
    }

    /** The key's limit: its live semaphore's, or the one it would get now. */
    @Override
    public long permits() {
        return family.limitNow(key);
    }

    @Override
    public long maxPermits() {
        LocalKeyedSemaphore.Entry<K> e = family.peek(key);
        return e != null ? e.engine.maxPermits() : family.limitNow(key);
    }

    @Override
    public long availablePermits() {
        LocalKeyedSemaphore.Entry<K> e = family.peek(key);
        return e != null ? e.engine.availablePermits() : family.limitNow(key);
    }

    @Override
    public int queueLength() {
        LocalKeyedSemaphore.Entry<K> e = family.peek(key);
        return e != null ? e.engine.queueLength() : 0;
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
    public Fairness fairness() {
        return Fairness.FIFO;
    }

    @Override
    public void close() {
        throw notHere("close()");
    }

    @Override
    public void close(Throwable cause) {
        throw notHere("close(" + cause + ")");
    }

    @Override
    public boolean isClosed() {
        return family.isClosed();
    }

    @Override
    public void addListener(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        throw new UnsupportedOperationException("semaphore '" + name() + "' is a key of keyed semaphore '"
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
        String n = name;
        if (n == null) {
            n = family.name() + "[" + key + "]"; // racy but idempotent: a String is safely published
            name = n;
        }
        return n;
    }

    private UnsupportedOperationException notHere(String what) {
        return new UnsupportedOperationException(what + " on semaphore '" + name() + "': every key has the limit of"
                + " keyed semaphore '" + family.name() + "', which is closed as a whole");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KeyView<?> v && v.family == family && v.key.equals(key);
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(family) * 31 + key.hashCode();
    }

    @Override
    public String toString() {
        LocalKeyedSemaphore.Entry<K> e = family.peek(key);
        return e != null ? e.engine.toString() : "Semaphore[" + name() + ", idle]";
    }
}
