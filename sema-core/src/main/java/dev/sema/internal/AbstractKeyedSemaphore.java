package dev.sema.internal;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.TooManyKeysException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What both keyed semaphores (API.md §11b), local and on Redis, keep alike: the bound on live keys, the refusals
 * made before any key's semaphore is asked, the listeners, and the requests their key views hand over
 * ({@link AbstractKeyView}). How a key's semaphore is found, made and retired is each family's own.
 *
 * <p>Rules kept here:
 * <ul>
 * <li>B1: {@link #countIn()} counts a key about to be made in {@code live} and refuses it beyond {@code maxKeys},
 *     before anything is made; the family counts it out once, when the key is retired or its making lost a race.
 *     So at most {@code maxKeys} keys hold memory at once; a race near the bound may refuse a request early, never
 *     let one through beyond it.</li>
 * <li>B2: a request is checked ({@link #checkRequest}) before any key is made for it: a negative count, and one the
 *     parent could never grant, leave the family as it was.</li>
 * <li>B3: a refusal made here is told to the family's listeners before it is thrown, with the key's semaphore as
 *     the semaphore, as its own refusals are.</li>
 * </ul>
 *
 * @param <K> the key's type
 * @param <P> the Permit its key views' blocking acquires return
 */
public abstract class AbstractKeyedSemaphore<K, P extends Permit> implements KeyedSemaphore<K> {
    private final String name;
    private final int maxKeys;
    /** The parent every key's Permit also holds from, or null (see {@link ParentSide}). */
    protected final Semaphore parent;
    /** The keys made and not yet retired (B1). */
    protected final AtomicInteger live = new AtomicInteger();
    /** The family's listeners. */
    protected final FamilyListeners listeners;
    /** Set once, by close. */
    protected volatile boolean closed;

    /**
     * A family, open, with no key.
     *
     * @param name its name
     * @param maxKeys the most keys live at once
     * @param parent the parent, or null
     * @param listeners its first listeners
     */
    protected AbstractKeyedSemaphore(String name, int maxKeys, Semaphore parent, List<SemaphoreListener> listeners) {
        this.name = name;
        this.maxKeys = maxKeys;
        this.parent = parent;
        this.listeners = new FamilyListeners(name, listeners);
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final int maxKeys() {
        return maxKeys;
    }

    @Override
    public int size() {
        // B1: a request refused at the bound counts itself in for an instant before it counts itself out
        return Math.min(live.get(), maxKeys);
    }

    @Override
    public final boolean isClosed() {
        return closed;
    }

    @Override
    public void addListener(SemaphoreListener listener) {
        listeners.add(listener);
    }

    @Override
    public final boolean removeListener(SemaphoreListener listener) {
        return listeners.remove(listener);
    }

    /**
     * Counts a key about to be made (B1).
     *
     * @return true if counted in; false if the family is at its bound (nothing counted)
     */
    protected final boolean countIn() {
        if (live.incrementAndGet() > maxKeys) {
            live.decrementAndGet();
            return false;
        }
        return true;
    }

    /**
     * Refuses a request for a key beyond the bound (B1, B3).
     *
     * @param view the key's semaphore
     * @param permits the permits requested
     * @param op the request, for the message
     * @param timeout its timeout, or null
     * @param report whether to tell the listeners (not for queries)
     * @return the exception to throw
     */
    protected final TooManyKeysException tooManyKeys(Semaphore view, long permits, String op, Duration timeout,
            boolean report) {
        if (report) {
            listeners.rejected(view, permits, Rejection.UNAVAILABLE);
        }
        return new TooManyKeysException(Failures.describe(view.name()) + ": " + what(op, permits, timeout)
                + " refused: keyed semaphore '" + name + "' has " + maxKeys + " live keys" + where() + ", its maxKeys");
    }

    /**
     * Refuses a request because the family is closed (B3).
     *
     * @param view the key's semaphore
     * @param permits the permits requested
     * @param op the request, for the message
     * @param timeout its timeout, or null
     * @param report whether to tell the listeners (not for queries)
     * @return the exception to throw
     */
    protected final SemaphoreClosedException closedFamily(Semaphore view, long permits, String op, Duration timeout,
            boolean report) {
        if (report) {
            listeners.rejected(view, permits, Rejection.CLOSED);
        }
        return Failures.closed(view.name(), what(op, permits, timeout));
    }

    /**
     * Where the keys counted against {@code maxKeys} live, for messages: "" or " in this process".
     *
     * @return the words, with a leading space, or ""
     */
    protected String where() {
        return "";
    }

    /**
     * Refuses a negative request, and one the parent could never grant, before any key is made (B2).
     *
     * @param permits the permits requested
     */
    protected final void checkRequest(long permits) {
        Checks.nonNegative("permits", permits);
        if (parent != null) {
            Checks.request(permits, parent.maxPermits(), parent.name());
        }
    }

    /**
     * A request as messages show it, built only for them.
     *
     * @param op the request
     * @param permits the permits requested
     * @param timeout its timeout, or null
     * @return e.g. {@code acquire(3, PT1S)}
     */
    protected static String what(String op, long permits, Duration timeout) {
        return op + "(" + (op.equals("drainPermits") ? "" : permits) + (timeout == null ? "" : ", " + timeout) + ")";
    }

    // ---------------------------------------------------------------- the requests a key view hands over

    /**
     * A blocking request on a key.
     *
     * @param view the key's semaphore
     * @param permits the permits
     * @param timeout the longest wait, or null for none
     * @param interruptible whether an interrupt ends the wait
     * @return the Permit
     * @throws InterruptedException if interrupted while {@code interruptible}
     * @throws TimeoutException if the timeout passed
     */
    protected abstract P acquire(AbstractKeyView<K, P> view, long permits, Duration timeout, boolean interruptible)
            throws InterruptedException, TimeoutException;

    /**
     * A {@code tryAcquire} on a key.
     *
     * @param view the key's semaphore
     * @param permits the permits
     * @return the Permit, or empty
     */
    protected abstract Optional<Permit> tryAcquire(AbstractKeyView<K, P> view, long permits);

    /**
     * A drain of a key.
     *
     * @param view the key's semaphore
     * @return the Permit
     */
    protected abstract P drainPermits(AbstractKeyView<K, P> view);

    /**
     * An async request on a key.
     *
     * @param view the key's semaphore
     * @param permits the permits
     * @param timeout the longest wait, or null for none
     * @return the future Permit
     */
    protected abstract CompletableFuture<Permit> acquireAsync(AbstractKeyView<K, P> view, long permits,
            Duration timeout);

    /**
     * Waits until the key holds nothing.
     *
     * @param view the key's semaphore
     * @throws InterruptedException if interrupted
     */
    protected abstract void awaitIdle(AbstractKeyView<K, P> view) throws InterruptedException;

    /**
     * Completes when the key holds nothing.
     *
     * @param view the key's semaphore
     * @return the future
     */
    protected abstract CompletableFuture<Void> awaitIdleAsync(AbstractKeyView<K, P> view);
}
