package dev.sema.internal;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * The semaphore of one key of a keyed semaphore (API.md §11b), local or on Redis: it holds its family and the key,
 * and hands every request to the family, which finds (or makes) the key's semaphore at each one, so a view is never
 * stale (a view may also keep a hint of where the key was, which the family checks before it trusts it). What
 * belongs to the family is refused here alike for both: resizing and closing (every key has the family's limit, and
 * the family is closed as a whole) and listeners (the family's see every key's events).
 *
 * @param <K> the key's type
 * @param <P> the Permit its blocking acquires return
 */
public abstract class AbstractKeyView<K, P extends Permit> implements Semaphore {
    private final AbstractKeyedSemaphore<K, P> family;
    private final K key;

    /**
     * The view of {@code key} of {@code family}.
     *
     * @param family the family
     * @param key the key, compared by {@code equals}
     */
    protected AbstractKeyView(AbstractKeyedSemaphore<K, P> family, K key) {
        this.family = family;
        this.key = key;
    }

    /**
     * The key.
     *
     * @return the key
     */
    public final K key() {
        return key;
    }

    /**
     * The family.
     *
     * @return the family this view was made by
     */
    protected final AbstractKeyedSemaphore<K, P> family() {
        return family;
    }

    @Override
    public final P acquire(long permits) throws InterruptedException {
        try {
            return family.acquire(this, permits, null, true);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public final P acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        Objects.requireNonNull(timeout, "timeout");
        return family.acquire(this, permits, timeout, true);
    }

    @Override
    public final P acquireUninterruptibly(long permits) {
        try {
            return family.acquire(this, permits, null, false);
        } catch (InterruptedException | TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public final P drainPermits() {
        return family.drainPermits(this);
    }

    @Override
    public final Optional<Permit> tryAcquire(long permits) {
        return family.tryAcquire(this, permits);
    }

    @Override
    public final CompletableFuture<Permit> acquireAsync(long permits) {
        return family.acquireAsync(this, permits, null);
    }

    @Override
    public final CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return family.acquireAsync(this, permits, timeout);
    }

    /** Waits until the key holds nothing (on Redis: in any process); at once when it is idle. */
    @Override
    public final void awaitIdle() throws InterruptedException {
        family.awaitIdle(this);
    }

    @Override
    public final CompletableFuture<Void> awaitIdleAsync() {
        return family.awaitIdleAsync(this);
    }

    /** Whether the family is closed (on Redis: in this process; a key's semaphore is never closed for the fleet). */
    @Override
    public final boolean isClosed() {
        return family.isClosed();
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

    /** Every key's semaphore is FIFO, whatever the family's parent. */
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

    private UnsupportedOperationException notHere(String what) {
        return new UnsupportedOperationException(what + " on semaphore '" + name() + "': every key has the limit of"
                + " keyed semaphore '" + family.name() + "', which is closed as a whole");
    }

    /** The same key of the same family: two views of one key are interchangeable. */
    @Override
    public final boolean equals(Object o) {
        return o instanceof AbstractKeyView<?, ?> v && v.family == family && v.key.equals(key);
    }

    @Override
    public final int hashCode() {
        return System.identityHashCode(family) * 31 + key.hashCode();
    }
}
