package dev.sema.internal;

import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The listeners of one semaphore, and the JFR events that go with them: the one place where both engines
 * report what happened. The engines call the reporting methods after the state change and outside their
 * locks.
 *
 * <p>Rules kept here:
 * <ul>
 * <li>R1: {@link #active()} is one volatile read; it is false while no listener is registered, and then
 *     the engines read no clock and call nothing (JFR events have their own, as cheap, check).</li>
 * <li>R2: listeners are called in the order added, each inside its own try/catch: a listener that throws
 *     is logged once ({@code WARNING}) and never stops the others or reaches the caller.</li>
 * <li>R3: the array is replaced, never changed in place (copy on write, by CAS), so a report runs over
 *     the listeners registered when it started.</li>
 * <li>R4: the listeners of a partition (API.md §11a) are its parent's: a partition's Listeners reports to
 *     the parent's array, with the partition as the semaphore, and takes no registrations of its own. The
 *     parent hands each new array to its partitions under its monitor, after its own CAS, so a partition
 *     never keeps an array older than the parent's once a registration returns.</li>
 * </ul>
 */
public final class Listeners {
    private static final System.Logger LOG = System.getLogger("dev.sema");
    private static final VarHandle ALL;

    static {
        try {
            ALL = MethodHandles.lookup().findVarHandle(Listeners.class, "all", SemaphoreListener[].class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The Rejection of each Outcome (null for GRANTED), looked up by ordinal rather than by name. */
    private static final Rejection[] REJECTIONS = rejections();

    private final Semaphore semaphore;
    /** Null while none is registered (R1); replaced by CAS (R3), or by the parent's hand-over (R4). */
    private volatile SemaphoreListener[] all;
    /** The parent's, for a partition (R4); null otherwise. */
    private final Listeners parent;
    /** A parent's partitions, to hand each new array to (R4); empty otherwise. Guarded by this. */
    private Listeners[] partitions = new Listeners[0];
    /** Listeners that threw and were logged once (R2). */
    private final Set<SemaphoreListener> reported = ConcurrentHashMap.newKeySet();

    /**
     * The listeners of {@code semaphore}, none yet.
     *
     * @param semaphore passed to every call
     */
    public Listeners(Semaphore semaphore) {
        this.semaphore = semaphore;
        this.parent = null;
    }

    /**
     * The listeners of a partition: its parent's (R4).
     *
     * @param partition passed to every call
     * @param parent the parent's listeners
     */
    public Listeners(Semaphore partition, Listeners parent) {
        this.semaphore = partition;
        this.parent = Objects.requireNonNull(parent, "parent");
        synchronized (parent) {
            Listeners[] now = parent.partitions;
            Listeners[] next = Arrays.copyOf(now, now.length + 1);
            next[now.length] = this;
            parent.partitions = next;
            this.all = parent.all;
        }
    }

    /**
     * Whether any listener is registered: the engines' guard before reading a clock or reporting.
     *
     * @return true while at least one is registered
     */
    public boolean active() {
        return all != null;
    }

    /**
     * Adds a listener, called after those added before it.
     *
     * @param listener the listener
     */
    public void add(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        ownRegistrations();
        for (;;) {
            SemaphoreListener[] now = all;
            SemaphoreListener[] next = now == null ? new SemaphoreListener[] {listener}
                    : Arrays.copyOf(now, now.length + 1);
            next[next.length - 1] = listener;
            if (ALL.compareAndSet(this, now, next)) {
                handOver();
                return;
            }
        }
    }

    /** A partition takes no registrations of its own (R4). */
    private void ownRegistrations() {
        if (parent != null) {
            throw new UnsupportedOperationException("semaphore '" + semaphore.name() + "' is a partition: its "
                    + "listeners are those of semaphore '" + parent.semaphore.name() + "', which see its events "
                    + "with it as the semaphore; register there");
        }
    }

    /** Gives the partitions the array now registered (R4). */
    private void handOver() {
        synchronized (this) {
            for (Listeners p : partitions) {
                p.all = all;
            }
        }
    }

    /**
     * Removes the first registration of {@code listener}.
     *
     * @param listener the listener
     * @return whether it was registered
     */
    public boolean remove(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        ownRegistrations();
        for (;;) {
            SemaphoreListener[] now = all;
            int i = indexOf(now, listener);
            if (i < 0) {
                return false;
            }
            SemaphoreListener[] next = null;
            if (now.length > 1) {
                next = new SemaphoreListener[now.length - 1];
                System.arraycopy(now, 0, next, 0, i);
                System.arraycopy(now, i + 1, next, i, now.length - i - 1);
            }
            if (ALL.compareAndSet(this, now, next)) {
                handOver();
                return true;
            }
        }
    }

    private static int indexOf(SemaphoreListener[] array, SemaphoreListener listener) {
        if (array != null) {
            for (int i = 0; i < array.length; i++) {
                if (array[i] == listener) {
                    return i;
                }
            }
        }
        return -1;
    }

    /**
     * A clock reading for a grant or a queued request, taken only while someone listens (R1).
     *
     * @return {@code System.nanoTime()}, or {@link #UNTIMED}
     */
    public long now() {
        return all != null ? System.nanoTime() : UNTIMED;
    }

    /** A time not read because nobody listened then. */
    public static final long UNTIMED = Long.MIN_VALUE;

    /**
     * Nanoseconds since {@code since}, or -1 when it was {@link #UNTIMED}.
     *
     * @param since a reading of {@link #now()}
     * @return the elapsed time, or -1
     */
    public static long since(long since) {
        return since == UNTIMED ? -1 : Math.max(0, System.nanoTime() - since);
    }

    /**
     * An acquire request ended: {@code acquired} for {@link Outcome#GRANTED}, else {@code rejected}.
     * Also ends its JFR wait, if it queued while one was recorded.
     *
     * @param outcome how it ended
     * @param permits the permits requested
     * @param waitNanos 0 when it did not queue, -1 when unknown
     * @param jfr its JFR wait, or null
     */
    public void ended(Outcome outcome, long permits, long waitNanos, WaitEvent jfr) {
        if (jfr != null) {
            jfr.end(outcome);
        }
        SemaphoreListener[] ls = all;
        if (ls == null) {
            return;
        }
        Rejection why = REJECTIONS[outcome.ordinal()];
        for (SemaphoreListener l : ls) {
            try {
                if (why == null) {
                    l.acquired(semaphore, permits, waitNanos);
                } else {
                    l.rejected(semaphore, permits, why, waitNanos);
                }
            } catch (Throwable t) {
                failed(l, t);
            }
        }
    }

    /**
     * Permits went back.
     *
     * @param permits how many, at least 1
     * @param grantedAt when they were granted ({@link #now()} then)
     */
    public void released(long permits, long grantedAt) {
        SemaphoreListener[] ls = all;
        if (ls == null) {
            return;
        }
        long held = since(grantedAt);
        for (SemaphoreListener l : ls) {
            try {
                l.released(semaphore, permits, held);
            } catch (Throwable t) {
                failed(l, t);
            }
        }
    }

    /**
     * Leak detection returned permits.
     *
     * @param permits how many
     * @param acquiredBy the name of the thread that acquired them, or null when not known
     */
    public void leaked(long permits, String acquiredBy) {
        Events.leak(semaphore.name(), permits, acquiredBy);
        SemaphoreListener[] ls = all;
        if (ls == null) {
            return;
        }
        for (SemaphoreListener l : ls) {
            try {
                l.leaked(semaphore, permits);
            } catch (Throwable t) {
                failed(l, t);
            }
        }
    }

    /**
     * The limit changed; nothing is reported when it stayed the same.
     *
     * @param oldLimit before
     * @param newLimit after
     */
    public void limitChanged(long oldLimit, long newLimit) {
        if (oldLimit == newLimit) {
            return;
        }
        Events.limitChange(semaphore.name(), oldLimit, newLimit);
        SemaphoreListener[] ls = all;
        if (ls == null) {
            return;
        }
        for (SemaphoreListener l : ls) {
            try {
                l.limitChanged(semaphore, oldLimit, newLimit);
            } catch (Throwable t) {
                failed(l, t);
            }
        }
    }

    /** The semaphore was closed; the engines call this once, for the first close. */
    public void closed() {
        Events.close(semaphore.name());
        SemaphoreListener[] ls = all;
        if (ls == null) {
            return;
        }
        for (SemaphoreListener l : ls) {
            try {
                l.closed(semaphore);
            } catch (Throwable t) {
                failed(l, t);
            }
        }
    }

    private static Rejection[] rejections() {
        Rejection[] r = new Rejection[Outcome.values().length];
        for (Outcome o : Outcome.values()) {
            r[o.ordinal()] = o == Outcome.GRANTED ? null : Rejection.valueOf(o.name());
        }
        return r;
    }

    private void failed(SemaphoreListener l, Throwable t) {
        if (reported.add(l)) {
            LOG.log(System.Logger.Level.WARNING, "SemaphoreListener " + l + " of semaphore '" + semaphore.name()
                    + "' threw; it stays registered, and later failures of it are not logged", t);
        }
    }
}
