package dev.sema.internal;

import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

/**
 * The listeners of a keyed semaphore (API.md §11b), local or on Redis: registered on the family, told of every key's
 * events with the key's semaphore as the semaphore. The families report to them in two ways: a refusal made before
 * any key's semaphore was asked ({@link #rejected}), and everything else through one {@link #forwarder} per key's
 * semaphore.
 *
 * <p>Rules kept here:
 * <ul>
 * <li>F1: the array is replaced, never changed in place (copy on write, under this object's monitor), and read once
 *     per event, so an event goes to the listeners registered when it started, and a listener added later sees
 *     every key's later events, whichever forwarder reports them.</li>
 * <li>F2: listeners are called in the order added, each inside its own try/catch: one that throws is logged once
 *     ({@code WARNING}) and never stops the others or reaches the caller (as {@link Listeners}' R2).</li>
 * <li>F3: a key's semaphore being closed is not the family's close: forwarders tell no {@code closed} event, and a
 *     family that retires idle keys by closing them hides the refusals those retirements cause (the request looks
 *     the key up again, so it was not refused).</li>
 * </ul>
 */
public final class FamilyListeners {
    private static final System.Logger LOG = System.getLogger("dev.sema");

    private final String family;
    /** Null while none is registered; replaced, never changed (F1). */
    private volatile SemaphoreListener[] all;
    /** Listeners that threw and were logged once (F2). */
    private final Set<SemaphoreListener> reported = ConcurrentHashMap.newKeySet();

    /**
     * The listeners of keyed semaphore {@code family}.
     *
     * @param family the family's name, for the log
     * @param initial registered at once, in this order
     */
    public FamilyListeners(String family, List<SemaphoreListener> initial) {
        this.family = family;
        this.all = initial.isEmpty() ? null : initial.toArray(SemaphoreListener[]::new);
    }

    /**
     * Whether any listener is registered.
     *
     * @return true while at least one is
     */
    public boolean any() {
        return all != null;
    }

    /**
     * Adds a listener, called after those added before it; it sees every key's events from now on.
     *
     * @param listener the listener
     */
    public synchronized void add(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        SemaphoreListener[] now = all;
        SemaphoreListener[] next = now == null ? new SemaphoreListener[1] : Arrays.copyOf(now, now.length + 1);
        next[next.length - 1] = listener;
        all = next;
    }

    /**
     * Removes the first registration of {@code listener}.
     *
     * @param listener the listener
     * @return whether it was registered
     */
    public synchronized boolean remove(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        SemaphoreListener[] now = all;
        for (int i = 0; now != null && i < now.length; i++) {
            if (now[i] == listener) {
                SemaphoreListener[] next = null;
                if (now.length > 1) {
                    next = new SemaphoreListener[now.length - 1];
                    System.arraycopy(now, 0, next, 0, i);
                    System.arraycopy(now, i + 1, next, i, now.length - i - 1);
                }
                all = next;
                return true;
            }
        }
        return false;
    }

    /**
     * Tells of a request the family refused before any key's semaphore was asked (too many keys, or closed).
     *
     * @param key the key's semaphore
     * @param permits the permits requested
     * @param why why it was refused
     */
    public void rejected(Semaphore key, long permits, Rejection why) {
        SemaphoreListener[] ls = all;
        if (ls != null) {
            for (SemaphoreListener l : ls) {
                try {
                    l.rejected(key, permits, why, 0);
                } catch (Throwable t) {
                    failed(l, t);
                }
            }
        }
    }

    /**
     * A listener to register on one key's semaphore, which tells the family's listeners of its events with
     * {@code key} as the semaphore.
     *
     * @param key the key's semaphore as the family's users see it
     * @param retiring true while a {@link Rejection#CLOSED} refusal of this semaphore is a retirement to hide (F3);
     *        null if it never is
     * @param afterLeak run after leaked permits were told of (the key's semaphore took them back, so the key may
     *        be idle); null if nothing
     * @return the forwarder
     */
    public SemaphoreListener forwarder(Semaphore key, BooleanSupplier retiring, Runnable afterLeak) {
        return new Forwarder(s -> key, retiring, afterLeak);
    }

    /**
     * A listener to register on a family that stands for another (a family opened later, say): it tells these
     * listeners of that family's events with {@code as(its key's semaphore)} as the semaphore.
     *
     * @param as the key's semaphore as this family's users see it, for the other family's
     * @return the forwarder
     */
    public SemaphoreListener forwarder(UnaryOperator<Semaphore> as) {
        return new Forwarder(as, null, null);
    }

    /** A listener that threw: logged once, told of later events all the same (F2). */
    private void failed(SemaphoreListener l, Throwable t) {
        if (reported.add(l)) {
            LOG.log(System.Logger.Level.WARNING, "listener " + l + " of keyed semaphore '" + family + "' threw; it is"
                    + " told of later events all the same (this is logged once per listener)", t);
        }
    }

    /** One key's semaphore's events (or a family's), told with the key's semaphore as the family's users see it. */
    private final class Forwarder implements SemaphoreListener {
        private final UnaryOperator<Semaphore> as;
        private final BooleanSupplier retiring;
        private final Runnable afterLeak;

        Forwarder(UnaryOperator<Semaphore> as, BooleanSupplier retiring, Runnable afterLeak) {
            this.as = as;
            this.retiring = retiring;
            this.afterLeak = afterLeak;
        }

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            SemaphoreListener[] ls = all;
            if (ls != null) {
                Semaphore key = as.apply(s);
                for (SemaphoreListener l : ls) {
                    try {
                        l.acquired(key, permits, waitNanos);
                    } catch (Throwable t) {
                        failed(l, t);
                    }
                }
            }
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            if (why == Rejection.CLOSED && retiring != null && retiring.getAsBoolean()) {
                return; // F3
            }
            SemaphoreListener[] ls = all;
            if (ls != null) {
                Semaphore key = as.apply(s);
                for (SemaphoreListener l : ls) {
                    try {
                        l.rejected(key, permits, why, waitNanos);
                    } catch (Throwable t) {
                        failed(l, t);
                    }
                }
            }
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            SemaphoreListener[] ls = all;
            if (ls != null) {
                Semaphore key = as.apply(s);
                for (SemaphoreListener l : ls) {
                    try {
                        l.released(key, permits, heldNanos);
                    } catch (Throwable t) {
                        failed(l, t);
                    }
                }
            }
        }

        @Override
        public void leaked(Semaphore s, long permits) {
            SemaphoreListener[] ls = all;
            if (ls != null) {
                Semaphore key = as.apply(s);
                for (SemaphoreListener l : ls) {
                    try {
                        l.leaked(key, permits);
                    } catch (Throwable t) {
                        failed(l, t);
                    }
                }
            }
            if (afterLeak != null) {
                afterLeak.run();
            }
        }

        @Override
        public void closed(Semaphore s) {
            // F3: one close of the family, not one per key
        }
    }
}
