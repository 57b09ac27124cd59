package dev.sema;

import dev.sema.internal.AbstractKeyView;
import dev.sema.internal.AbstractKeyedSemaphore;
import dev.sema.internal.ParentSide;
import dev.sema.internal.TwoStepFuture;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import java.util.function.ToLongFunction;

/**
 * The local {@link KeyedSemaphore}: a map from each live key to its {@link Entry}, an engine of its own (a FIFO
 * {@link LocalSemaphore}) with a count of what keeps it alive. The contract is on {@link KeyedSemaphore}.
 */
final class LocalKeyedSemaphore<K> extends AbstractKeyedSemaphore<K, Permit> {

    /*
     * Implementation overview
     *
     * Each live key has one Entry in `entries`: the key's engine (a FIFO LocalSemaphore) and its view. A key's
     * engine is retired by closing it, and closing is what every request for it checks, with the same CAS that
     * grants: no count of users is kept beside the engine's own state word.
     *
     * Invariants (the removal protocol):
     *  K1: an entry leaves `entries` only once its engine is closed (remove(key, e) by identity, by whoever
     *      closed it or by a lookup that meets it closed), and a new entry enters only by putIfAbsent: the map
     *      never holds two entries of one key.
     *  K2: while the family is open, a key's engine is closed only by tryCloseIdle, one CAS on its state word
     *      from a state in which nothing is held and nobody waits (no QUEUED, IDLE or other flag). A grant is a
     *      CAS on that word too, so a request that looked the entry up before it was retired finds it closed when
     *      it reaches the engine (SemaphoreClosedException while the family is open), looks the key up again and
     *      retries; it never takes a retired engine's permits. With K1: of all the entries a key ever had, only
     *      the one in the map may hold permits, and its engine keeps them within the key's limit. That is the
     *      promise: never more than a key's limit held for one key, across removal and re-creation.
     *  K3: whatever may leave a key's engine idle tries to retire it at once: a release, a forget or a leak
     *      returned (after the engine took the permits back), and a request that ended without permits (refused,
     *      timed out, cancelled, interrupted, or granted none). So an idle key keeps no entry, and costs nothing.
     *  K4: `live` counts the entries made and not yet retired (AbstractKeyedSemaphore's B1): incremented (and
     *      checked against maxKeys) before an entry is made, decremented by whoever retired it (once: the CAS of
     *      K2, or after the family closed, the remove that took it out), or by its maker when putIfAbsent lost. So
     *      at most maxKeys entries hold memory at once; a race near the bound may refuse a request early, never
     *      let one through beyond it.
     *  K5: close sets `closed` and then closes every entry's engine; a lookup that makes an entry reads `closed`
     *      after publishing it and closes it itself if set. A request refused by a closed engine while `closed` is
     *      set fails (the family is closed); while it is clear, it retries (K2). After close, an entry is taken out
     *      when it becomes idle, so the map empties as the last permits come back.
     *  K6: the family's listeners (FamilyListeners) reach an entry through its forwarder, registered on the
     *      engine once (a CAS on `forwarding`) when the entry is made while the family has listeners or leak
     *      detection, and on every live entry by addListener after it publishes the new array: an entry made
     *      concurrently either sees the array or is seen by that pass. Without listeners or leak detection an
     *      entry's engine has none, and reads no clock. A retired engine's refusals (K2's retries) are not told.
     *  K7: get returns the view of the entry the map holds (made with it, so a live key's view costs no allocation),
     *      and a request through a view with an entry, without a parent, first takes its permits by that entry's
     *      engine's lock-free CAS (LocalSemaphore.tryTakeFast: permits free, nobody queued, not closed). The same
     *      CAS decides it against a retirement (K2), so a retired entry's engine never grants, whoever kept its
     *      view: the request then takes the usual way (lookup, and the engine's own acquire). An interrupted
     *      thread, a request of no permits, or one beyond the ceiling always takes the usual way, so that it is
     *      refused, or retires the key (K3), as there. Either way its Permit is made at one place
     *      (LocalSemaphore.permitFor), so a request on a live key costs a plain semaphore's, and one map lookup.
     *
     * field              read        write
     * entries            CHM         CHM (putIfAbsent, remove(key, e))
     * Entry.forwarding   volatile    CAS
     * live               atomic      atomic                  (AbstractKeyedSemaphore, as the two below)
     * closed             volatile    volatile, once
     * listeners          FamilyListeners (copy on write)
     */

    private final ToLongFunction<? super K> limits;
    private final long maxPermits;
    private final LeakDetection leakDetection;
    private final ConcurrentHashMap<K, Entry<K>> entries = new ConcurrentHashMap<>();

    /**
     * Test hook, read when a family is built: a family built while it is set is a deliberately broken copy, which
     * takes an idle key out of the map without closing its engine (K2 broken), so that a request that looked the
     * key up before may still be granted by the old engine while a new one serves others. The tests show that
     * this is caught.
     */
    static volatile boolean removeWithoutClosingForTests;
    /** {@link #removeWithoutClosingForTests} as it was when this family was built. */
    private final boolean broken = removeWithoutClosingForTests;

    LocalKeyedSemaphore(String name, ToLongFunction<? super K> limits, long maxPermits, int maxKeys, Semaphore parent,
            LeakDetection leakDetection, List<SemaphoreListener> listeners) {
        super(name, maxKeys, parent, listeners);
        this.limits = limits;
        this.maxPermits = maxPermits;
        this.leakDetection = leakDetection;
    }

    // ---------------------------------------------------------------- the family

    @Override
    public Semaphore get(K key) {
        Entry<K> e = entries.get(Objects.requireNonNull(key, "key"));
        return e != null ? e.view : new KeyView<>(this, key, null); // K7
    }

    @Override
    public void addListener(SemaphoreListener listener) {
        super.addListener(listener);
        for (Entry<K> e : entries.values()) { // K6: after the array is published
            forward(e);
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Entry<K> e : entries.values()) { // K5
            e.engine.close();
            released(e);
        }
    }

    @Override
    public String toString() {
        return "KeyedSemaphore[" + name() + ", keys=" + size() + "/" + maxKeys() + (closed ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------- lookup and removal (K1-K5)

    /** A key's entry, made if there is none; refusals made here are told to the listeners first. */
    private Entry<K> lookup(K key, Semaphore view, long permits, String op, Duration timeout) {
        for (;;) {
            Entry<K> e = entries.get(key);
            if (e != null) {
                if (closed || !e.engine.isClosed()) {
                    return e;
                }
                entries.remove(key, e); // K1: retired (K2), taken out by whoever meets it first
                continue;
            }
            if (closed) {
                throw closedFamily(view, permits, op, timeout, true);
            }
            long limit = limitOf(key);
            if (!countIn()) { // K4
                if (entries.containsKey(key)) {
                    continue; // made meanwhile by another request: use it
                }
                throw tooManyKeys(view, permits, op, timeout, true);
            }
            Entry<K> made = new Entry<>(this, key, limit);
            if (entries.putIfAbsent(key, made) != null) { // K1
                live.decrementAndGet();
                continue;
            }
            if (listeners.any() || leakDetection != LeakDetection.OFF) {
                forward(made); // K6
            }
            if (closed) {
                made.engine.close(); // K5
            }
            return made;
        }
    }

    /** Whether a request refused by its entry's engine as closed should look the key up again (K2, K5). */
    private boolean retired() {
        return !closed;
    }

    /**
     * Retires the entry if its engine is idle (K3): by the CAS of K2 while the family is open; once it is closed,
     * by taking it out of the map when nothing is held and nobody waits.
     */
    void released(Entry<K> e) {
        LocalSemaphore engine = e.engine;
        if (broken) {
            if (!closed && engine.availablePermits() == engine.permits() && engine.queueLength() == 0
                    && entries.remove(e.key, e)) {
                live.decrementAndGet(); // the broken copy: out of the map, its engine still open
            }
            return;
        }
        if (engine.tryCloseIdle()) {
            entries.remove(e.key, e);
            live.decrementAndGet();
        } else if (closed && engine.availablePermits() == engine.permits() && engine.queueLength() == 0
                && entries.remove(e.key, e)) {
            live.decrementAndGet();
        }
    }

    /** The limit of a key about to be made, checked; creates nothing when it fails. */
    private long limitOf(K key) {
        long limit;
        try {
            limit = limits.applyAsLong(key);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("keyed semaphore '" + name() + "': the limit of key " + key
                    + " could not be computed: " + e, e);
        }
        if (limit < 0 || limit > maxPermits) {
            throw new IllegalArgumentException("keyed semaphore '" + name() + "': the limit of key " + key + " is "
                    + limit + ", outside 0.." + maxPermits + " (maxPermits)");
        }
        return limit;
    }

    /** The live entry of a key, or null: for reads that must not make one. */
    Entry<K> peek(K key) {
        Entry<K> e = entries.get(key);
        return e != null && (closed || !e.engine.isClosed()) ? e : null;
    }

    /** The limit a view shows: its live entry's, or what a new entry would get. */
    long limitNow(K key) {
        Entry<K> e = peek(key);
        return e != null ? e.engine.permits() : limitOf(key);
    }

    /** Registers the entry's forwarder on its engine, once (K6). */
    private void forward(Entry<K> e) {
        if (e.startForwarding()) {
            e.engine.addListener(listeners.forwarder(e.view, this::retired, e::released));
        }
    }

    int entriesForTests() {
        return entries.size();
    }

    // ---------------------------------------------------------------- acquires, for the views

    @Override
    protected Permit acquire(AbstractKeyView<K, Permit> view, long permits, Duration timeout, boolean interruptible)
            throws InterruptedException, TimeoutException {
        long deadline = ParentSide.deadline(timeout, parent); // before the key's wait: one budget for both (P3)
        Entry<K> e = ((KeyView<K>) view).entry;
        if (e == null || parent != null || interruptible && Thread.currentThread().isInterrupted()
                || !e.engine.tryTakeFast(permits)) {
            e = acquireEntry(view.key(), permits, timeout, interruptible);
        }
        // K7: one place makes the Permits, whichever way granted, and the same Permit is returned with or without a
        // parent: so the JIT can keep it in registers when the caller's Permit does not escape (Permits made or
        // returned on two ways would merge, and escape).
        KeyedPermit held = new KeyedPermit(e, e.engine.permitFor(permits));
        if (parent != null) {
            ParentSide.acquire(held, parent, permits, timeout, deadline, interruptible);
        }
        return held;
    }

    /**
     * Looks the key up and waits for its permits (K2's retries included): the entry whose engine granted them, no
     * Permit held for them yet (the caller makes it, and so retires the key if it granted none, K3). Not given the
     * view, so that the fast way's need not exist (a new one here is equal to it).
     */
    private Entry<K> acquireEntry(K key, long permits, Duration timeout, boolean interruptible)
            throws InterruptedException, TimeoutException {
        KeyView<K> view = new KeyView<>(this, key, null);
        checkRequest(permits);
        for (;;) {
            Entry<K> e = lookup(key, view, permits, "acquire", timeout);
            try {
                Permit granted;
                if (timeout != null) {
                    granted = e.engine.acquire(permits, timeout);
                } else if (interruptible) {
                    granted = e.engine.acquire(permits);
                } else {
                    granted = e.engine.acquireUninterruptibly(permits);
                }
                ((LocalPermit) granted).getAndClear(); // its permits pass to the Permit the caller makes
                if (permits == 0) {
                    released(e); // K3: granted nothing, so the key may be idle
                }
                return e;
            } catch (SemaphoreClosedException refused) {
                if (!retired()) {
                    throw refused;
                }
            } catch (Throwable t) {
                released(e); // K3
                throw t;
            }
        }
    }

    @Override
    protected Optional<Permit> tryAcquire(AbstractKeyView<K, Permit> view, long permits) {
        Entry<K> hint = ((KeyView<K>) view).entry;
        if (hint != null && parent == null && hint.engine.tryTakeFast(permits)) { // K7
            return Optional.of(new KeyedPermit(hint, hint.engine.permitFor(permits)));
        }
        checkRequest(permits);
        Entry<K> e;
        Optional<Permit> granted;
        for (;;) {
            try {
                e = lookup(view.key(), view, permits, "tryAcquire", null);
            } catch (TooManyKeysException full) {
                return Optional.empty();
            }
            try {
                granted = e.engine.tryAcquire(permits);
                break;
            } catch (SemaphoreClosedException refused) {
                if (!retired()) {
                    throw refused;
                }
            } catch (Throwable t) {
                released(e);
                throw t;
            }
        }
        if (granted.isEmpty()) {
            released(e); // K3: a new entry refused at once
            return granted;
        }
        return ParentSide.tryAcquire(e.granted((LocalPermit) granted.get()), parent, permits);
    }

    @Override
    protected Permit drainPermits(AbstractKeyView<K, Permit> view) {
        Entry<K> e;
        Permit drained;
        for (;;) {
            e = lookup(view.key(), view, 0, "drainPermits", null);
            try {
                drained = e.engine.drainPermits();
                break;
            } catch (SemaphoreClosedException refused) {
                if (!retired()) {
                    throw refused;
                }
            }
        }
        return ParentSide.drain(e.granted((LocalPermit) drained), parent);
    }

    @Override
    protected CompletableFuture<Permit> acquireAsync(AbstractKeyView<K, Permit> view, long permits, Duration timeout) {
        checkRequest(permits);
        long deadline = ParentSide.deadline(timeout, parent);
        Entry<K> e;
        CompletableFuture<Permit> first;
        for (;;) {
            try {
                e = lookup(view.key(), view, permits, "acquireAsync", timeout);
            } catch (TooManyKeysException | SemaphoreClosedException refused) {
                return CompletableFuture.failedFuture(refused);
            }
            try {
                first = timeout == null ? e.engine.acquireAsync(permits) : e.engine.acquireAsync(permits, timeout);
            } catch (Throwable t) {
                released(e);
                throw t;
            }
            // A retired engine refuses at once (K2): look again. Once queued, only the family's close can fail it.
            if (!(first.state() == Future.State.FAILED && first.exceptionNow() instanceof SemaphoreClosedException
                    && retired())) {
                break;
            }
        }
        if (parent == null && first.isDone() && !first.isCompletedExceptionally()) {
            return CompletableFuture.completedFuture(e.granted((LocalPermit) first.join()));
        }
        Entry<K> entry = e;
        TwoStepFuture out = new TwoStepFuture(first);
        first.whenComplete((p, t) -> {
            if (t != null) {
                released(entry); // K3
                out.completeExceptionally(ParentSide.unwrap(t));
                return;
            }
            ParentSide.acquireAsync(entry.granted((LocalPermit) p), parent, permits, timeout, deadline, out);
        });
        return out;
    }

    @Override
    protected void awaitIdle(AbstractKeyView<K, Permit> view) throws InterruptedException {
        Entry<K> e = peek(view.key());
        if (e != null) {
            e.engine.awaitIdle();
        }
    }

    @Override
    protected CompletableFuture<Void> awaitIdleAsync(AbstractKeyView<K, Permit> view) {
        Entry<K> e = peek(view.key());
        return e != null ? e.engine.awaitIdleAsync() : CompletableFuture.completedFuture(null);
    }

    // ---------------------------------------------------------------- one key

    /** A live key: its engine and its view. */
    static final class Entry<K> {
        private static final VarHandle FORWARDING;

        static {
            try {
                FORWARDING = MethodHandles.lookup().findVarHandle(Entry.class, "forwarding", boolean.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final LocalKeyedSemaphore<K> family;
        final K key;
        final KeyView<K> view;
        final LocalSemaphore engine;
        private volatile boolean forwarding;

        Entry(LocalKeyedSemaphore<K> family, K key, long limit) {
            this.family = family;
            this.key = key;
            this.view = new KeyView<>(family, key, this);
            this.engine = new LocalSemaphore(view.name(), limit, limit, Fairness.FIFO, family.leakDetection);
        }

        /** The Permit of a grant of this key; one of no permits leaves the key as it was, idle perhaps (K3). */
        KeyedPermit granted(LocalPermit p) {
            if (p.permits() == 0) {
                family.released(this);
            }
            return new KeyedPermit(this, p);
        }

        /** After permits went back to the engine, or were forgotten or reclaimed (K3). */
        void released() {
            family.released(this);
        }

        boolean startForwarding() {
            return FORWARDING.compareAndSet(this, false, true);
        }
    }
}
