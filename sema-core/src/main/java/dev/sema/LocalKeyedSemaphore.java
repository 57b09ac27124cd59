package dev.sema;

import dev.sema.internal.Checks;
import dev.sema.internal.Failures;
import dev.sema.internal.TwoStepFuture;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToLongFunction;

/**
 * The local {@link KeyedSemaphore}: a map from each live key to its {@link Entry}, an engine of its own (a FIFO
 * {@link LocalSemaphore}) with a count of what keeps it alive. The contract is on {@link KeyedSemaphore}.
 */
final class LocalKeyedSemaphore<K> implements KeyedSemaphore<K> {

    /*
     * Implementation overview
     *
     * Each live key has one Entry in `entries`: its engine, and `refs`, the count of what keeps it alive: the
     * requests in flight on it (from the lookup that found or made it until they end) plus the permits its
     * Permits hold (a grant of n turns its request's 1 into n). DEAD (-1) marks an entry that is gone for good.
     *
     * Invariants (the removal protocol):
     *  K1: an entry is acquired from only by a request that holds one of its refs: the lookup (pin) counts the
     *      request in by a CAS from refs >= 0 to refs + 1, before the request reaches the engine, and counts it
     *      out when the request ends (a grant: refs += n - 1, in the same step as handing the Permit over; a
     *      refusal: refs -= 1).
     *  K2: permits go back to the engine before refs counts them out (KeyedPermit gives back first, then
     *      unhold), and a leak returned by leak detection is counted out after the engine took it back (the
     *      entry's forwarder hears `leaked` then). So refs == 0 implies the engine holds nothing and nobody is
     *      about to acquire from it.
     *  K3: an entry dies by one CAS of refs from 0 to DEAD, made by whoever brought refs to 0; a DEAD entry is
     *      never counted in again (K1's CAS fails) and is removed from the map by identity (remove(key, e)),
     *      by its killer or by any lookup that meets it first.
     *  K4: a new entry enters the map only by putIfAbsent, so the map never holds two entries of one key, and
     *      an entry leaves it only once DEAD (K3). With K1-K2: at any instant, of all the entries a key ever had,
     *      only the one not DEAD may hold permits, and its engine keeps those within the key's limit. That is
     *      the promise: never more than a key's limit held for one key, across removal and re-creation.
     *  K5: `live` counts the entries created and not yet dead: incremented (and checked against maxKeys)
     *      before an entry is made, decremented by its killer, or by its maker when putIfAbsent lost. So at
     *      most maxKeys entries hold memory at once; a race near the bound may refuse a request early, never
     *      let one through beyond it.
     *  K6: close sets `closed` and then closes every entry in the map; a lookup that makes an entry reads
     *      `closed` after publishing it and closes it itself if set. Either way no entry made after close
     *      stays open.
     *  K7: the family's listeners reach an entry through its forwarder (EntryForwarder), registered on the
     *      engine once (a CAS on `forwarding`) when the entry is made while the family has listeners or leak
     *      detection, and on every live entry by addListener after it publishes the new array: an entry made
     *      concurrently either sees the array or is seen by that pass. Without listeners or leak detection an
     *      entry's engine has none, and reads no clock.
     *
     * field              read        write
     * entries            CHM         CHM (putIfAbsent, remove(key, e))
     * Entry.refs         volatile    CAS / getAndAdd
     * Entry.forwarding   volatile    CAS
     * live               atomic      atomic
     * closed             volatile    volatile, once
     * listeners          volatile    synchronized (this), copy on write
     */

    private static final System.Logger LOG = System.getLogger("dev.sema");
    static final long DEAD = -1;

    private final String name;
    private final ToLongFunction<? super K> limits;
    private final long maxPermits;
    private final int maxKeys;
    private final Semaphore parent;
    private final LeakDetection leakDetection;
    private final ConcurrentHashMap<K, Entry<K>> entries = new ConcurrentHashMap<>();
    private final AtomicInteger live = new AtomicInteger();
    private final Set<SemaphoreListener> reported = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private volatile SemaphoreListener[] listeners;

    /**
     * Test hook, read when a family is built: a family built while it is set is a deliberately broken copy, whose
     * lookup does not count its request in, so that an entry may die and be replaced between a request's lookup
     * and its acquire (K1 broken); its grants are counted in afterwards. The tests show that this is caught.
     */
    static volatile boolean pinAfterAcquireForTests;
    /** {@link #pinAfterAcquireForTests} as it was when this family was built. */
    private final boolean pinLate = pinAfterAcquireForTests;

    LocalKeyedSemaphore(String name, ToLongFunction<? super K> limits, long maxPermits, int maxKeys, Semaphore parent,
            LeakDetection leakDetection, List<SemaphoreListener> listeners) {
        this.name = name;
        this.limits = limits;
        this.maxPermits = maxPermits;
        this.maxKeys = maxKeys;
        this.parent = parent;
        this.leakDetection = leakDetection;
        this.listeners = listeners.isEmpty() ? null : listeners.toArray(SemaphoreListener[]::new);
    }

    // ---------------------------------------------------------------- the family

    @Override
    public Semaphore get(K key) {
        return new KeyView<>(this, Objects.requireNonNull(key, "key"));
    }

    @Override
    public int size() {
        return live.get();
    }

    @Override
    public int maxKeys() {
        return maxKeys;
    }

    @Override
    public String name() {
        return name;
    }

    Semaphore parent() {
        return parent;
    }

    @Override
    public synchronized void addListener(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        SemaphoreListener[] now = listeners;
        SemaphoreListener[] next = now == null ? new SemaphoreListener[1] : Arrays.copyOf(now, now.length + 1);
        next[next.length - 1] = listener;
        listeners = next;
        for (Entry<K> e : entries.values()) { // K7: after the array is published
            forward(e);
        }
    }

    @Override
    public synchronized boolean removeListener(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        SemaphoreListener[] now = listeners;
        if (now == null) {
            return false;
        }
        for (int i = 0; i < now.length; i++) {
            if (now[i] == listener) {
                SemaphoreListener[] next = null;
                if (now.length > 1) {
                    next = new SemaphoreListener[now.length - 1];
                    System.arraycopy(now, 0, next, 0, i);
                    System.arraycopy(now, i + 1, next, i, now.length - i - 1);
                }
                listeners = next;
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() {
        closed = true;
        for (Entry<K> e : entries.values()) { // K6
            e.engine.close();
        }
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "KeyedSemaphore[" + name + ", keys=" + live.get() + "/" + maxKeys + (closed ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------- lookup and removal (K1-K6)

    /** A key's entry, counted in for one request (K1), made if there is none; refusals are reported first. */
    private Entry<K> pin(K key, KeyView<K> view, long permits, String op, Duration timeout) {
        Checks.nonNegative("permits", permits);
        if (parent != null) {
            Checks.request(permits, parent.maxPermits(), parent.name());
        }
        for (;;) {
            Entry<K> e = entries.get(key);
            if (e != null) {
                if (pinLate ? e.refs >= 0 : e.retain()) {
                    return e;
                }
                entries.remove(key, e); // K3: a DEAD entry, removed by whoever meets it first
                continue;
            }
            if (closed) {
                rejected(view, permits, Rejection.CLOSED);
                throw Failures.closed(view.name(), what(op, permits, timeout));
            }
            long limit = limitOf(key);
            if (live.incrementAndGet() > maxKeys) { // K5
                live.decrementAndGet();
                if (entries.containsKey(key)) {
                    continue; // made meanwhile by another request: use it
                }
                rejected(view, permits, Rejection.UNAVAILABLE);
                throw new TooManyKeysException(Failures.describe(view.name()) + ": " + what(op, permits, timeout)
                        + " refused: keyed"
                        + " semaphore '" + name + "' has " + maxKeys + " live keys, its maxKeys");
            }
            Entry<K> made = new Entry<>(this, key, new KeyView<>(this, key), limit, pinLate ? 0 : 1);
            if (entries.putIfAbsent(key, made) != null) { // K4
                live.decrementAndGet();
                continue;
            }
            if (listeners != null || leakDetection != LeakDetection.OFF) {
                forward(made); // K7
            }
            if (closed) {
                made.engine.close(); // K6
            }
            return made;
        }
    }

    /** A request as messages show it, built only for them. */
    private static String what(String op, long permits, Duration timeout) {
        return op + "(" + (op.equals("drainPermits") ? "" : permits) + (timeout == null ? "" : ", " + timeout) + ")";
    }

    /** The limit of a key about to be made, checked; creates nothing when it fails. */
    private long limitOf(K key) {
        long limit;
        try {
            limit = limits.applyAsLong(key);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("keyed semaphore '" + name + "': the limit of key " + key
                    + " could not be computed: " + e, e);
        }
        if (limit < 0 || limit > maxPermits) {
            throw new IllegalArgumentException("keyed semaphore '" + name + "': the limit of key " + key + " is "
                    + limit + ", outside 0.." + maxPermits + " (maxPermits)");
        }
        return limit;
    }

    /** The limit a view shows: its live entry's, or what a new entry would get. */
    long limitNow(K key) {
        Entry<K> e = entries.get(key);
        return e != null && e.refs >= 0 ? e.engine.permits() : limitOf(key);
    }

    /** The live entry of a key, or null: for reads that must not make one. */
    Entry<K> peek(K key) {
        Entry<K> e = entries.get(key);
        return e != null && e.refs >= 0 ? e : null;
    }

    /** Registers the entry's forwarder on its engine, once (K7). */
    private void forward(Entry<K> e) {
        if (e.startForwarding()) {
            e.engine.addListener(new EntryForwarder<>(this, e));
        }
    }

    /** Tells the family's listeners of a refusal made before any engine was asked. */
    private void rejected(KeyView<K> view, long permits, Rejection why) {
        SemaphoreListener[] ls = listeners;
        if (ls != null) {
            for (SemaphoreListener l : ls) {
                try {
                    l.rejected(view, permits, why, 0);
                } catch (Throwable t) {
                    failed(l, t);
                }
            }
        }
    }

    SemaphoreListener[] listeners() {
        return listeners;
    }

    /** A listener that threw: logged once, told of later events all the same. */
    void failed(SemaphoreListener l, Throwable t) {
        if (reported.add(l)) {
            LOG.log(System.Logger.Level.WARNING, "listener " + l + " of keyed semaphore '" + name + "' threw; it is"
                    + " told of later events all the same (this is logged once per listener)", t);
        }
    }

    /** Called by an entry that died (K3). */
    void died(Entry<K> e) {
        entries.remove(e.key, e);
        live.decrementAndGet();
    }

    int entriesForTests() {
        return entries.size();
    }

    // ---------------------------------------------------------------- acquires, for the views

    Permit acquire(KeyView<K> view, long permits, Duration timeout, boolean interruptible)
            throws InterruptedException, TimeoutException {
        long deadline = timeout == null || parent == null ? 0 : deadline(timeout);
        Entry<K> e = pin(view.key(), view, permits, "acquire", timeout);
        Permit granted;
        try {
            if (timeout != null) {
                granted = e.engine.acquire(permits, timeout);
            } else if (interruptible) {
                granted = e.engine.acquire(permits);
            } else {
                granted = e.engine.acquireUninterruptibly(permits);
            }
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        KeyedPermit held = e.granted((LocalPermit) granted, permits);
        if (parent == null) {
            return held;
        }
        try {
            Permit p;
            if (timeout != null) {
                p = parent.acquire(permits, Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            } else if (interruptible) {
                p = parent.acquire(permits);
            } else {
                p = parent.acquireUninterruptibly(permits);
            }
            held.attach(p);
            return held;
        } catch (Throwable t) {
            held.close(); // the key's permits go back when the parent refuses
            throw t;
        }
    }

    Optional<Permit> tryAcquire(KeyView<K> view, long permits) {
        Entry<K> e;
        try {
            e = pin(view.key(), view, permits, "tryAcquire", null);
        } catch (TooManyKeysException full) {
            return Optional.empty();
        }
        Optional<Permit> granted;
        try {
            granted = e.engine.tryAcquire(permits);
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        if (granted.isEmpty()) {
            e.unpin();
            return granted;
        }
        KeyedPermit held = e.granted((LocalPermit) granted.get(), permits);
        if (parent == null) {
            return Optional.of(held);
        }
        Optional<Permit> p;
        try {
            p = parent.tryAcquire(permits);
        } catch (Throwable t) {
            held.close();
            throw t;
        }
        if (p.isEmpty()) {
            held.close();
            return p;
        }
        held.attach(p.get());
        return Optional.of(held);
    }

    Permit drainPermits(KeyView<K> view) {
        Entry<K> e = pin(view.key(), view, 0, "drainPermits", null);
        Permit drained;
        try {
            drained = e.engine.drainPermits();
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        long n = drained.permits();
        KeyedPermit held = e.granted((LocalPermit) drained, n);
        if (parent == null) {
            return held;
        }
        try {
            // Both sides equal: as many of the parent's as it has now, up to the key's; the rest of the key's back.
            Permit p = parent.drainPermits();
            if (p.permits() > n) {
                p.release(p.permits() - n);
            } else if (p.permits() < n) {
                held.release(n - p.permits());
            }
            held.attach(p);
            return held;
        } catch (Throwable t) {
            held.close();
            throw t;
        }
    }

    CompletableFuture<Permit> acquireAsync(KeyView<K> view, long permits, Duration timeout) {
        long deadline = timeout == null || parent == null ? 0 : deadline(timeout);
        Entry<K> e;
        CompletableFuture<Permit> first;
        try {
            e = pin(view.key(), view, permits, "acquireAsync", timeout);
        } catch (TooManyKeysException | SemaphoreClosedException refused) {
            return CompletableFuture.failedFuture(refused);
        }
        try {
            first = timeout == null ? e.engine.acquireAsync(permits) : e.engine.acquireAsync(permits, timeout);
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        if (parent == null && first.isDone() && !first.isCompletedExceptionally()) {
            return CompletableFuture.completedFuture(e.granted((LocalPermit) first.join(), permits));
        }
        TwoStepFuture out = new TwoStepFuture(first);
        first.whenComplete((p, t) -> {
            if (t != null) {
                e.unpin();
                out.completeExceptionally(unwrap(t));
                return;
            }
            KeyedPermit held = e.granted((LocalPermit) p, permits);
            if (parent == null) {
                if (!out.complete(held)) {
                    held.close(); // the caller gave up first
                }
                return;
            }
            CompletableFuture<Permit> second;
            try {
                second = timeout == null ? parent.acquireAsync(permits)
                        : parent.acquireAsync(permits, Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            } catch (Throwable x) {
                held.close();
                out.completeExceptionally(x);
                return;
            }
            out.next(second);
            second.whenComplete((pp, t2) -> {
                if (t2 != null) {
                    held.close();
                    out.completeExceptionally(unwrap(t2));
                    return;
                }
                held.attach(pp);
                if (!out.complete(held)) {
                    held.close();
                }
            });
        });
        return out;
    }

    void awaitIdle(KeyView<K> view) throws InterruptedException {
        Entry<K> e = peek(view.key());
        if (e != null) {
            e.engine.awaitIdle();
        }
    }

    CompletableFuture<Void> awaitIdleAsync(KeyView<K> view) {
        Entry<K> e = peek(view.key());
        return e != null ? e.engine.awaitIdleAsync() : CompletableFuture.completedFuture(null);
    }

    private static long deadline(Duration timeout) {
        long nanos;
        try {
            nanos = timeout.toNanos();
        } catch (ArithmeticException tooLong) {
            nanos = Long.MAX_VALUE / 2;
        }
        return System.nanoTime() + Math.min(nanos, Long.MAX_VALUE / 2);
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    // ---------------------------------------------------------------- one key

    /** A live key: its engine and what keeps it alive (K1-K3). */
    static final class Entry<K> {
        private static final VarHandle REFS;
        private static final VarHandle FORWARDING;

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                REFS = l.findVarHandle(Entry.class, "refs", long.class);
                FORWARDING = l.findVarHandle(Entry.class, "forwarding", boolean.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final LocalKeyedSemaphore<K> family;
        final K key;
        final KeyView<K> view;
        final LocalSemaphore engine;
        private volatile long refs;
        private volatile boolean forwarding;

        Entry(LocalKeyedSemaphore<K> family, K key, KeyView<K> view, long limit, long refs) {
            this.family = family;
            this.key = key;
            this.view = view;
            this.engine = new LocalSemaphore(view.name(), limit, limit, Fairness.FIFO, family.leakDetection);
            this.refs = refs;
        }

        /** Counts a request in (K1): false once DEAD. */
        boolean retain() {
            for (;;) {
                long r = refs;
                if (r < 0) {
                    return false;
                }
                if (REFS.compareAndSet(this, r, r + 1)) {
                    return true;
                }
            }
        }

        /** A request that got nothing counts itself out. */
        void unpin() {
            if (!family.pinLate) {
                unhold(1);
            }
        }

        /** A grant of {@code permits}: the request's ref becomes the permits' (K1), handed over in one step. */
        KeyedPermit granted(LocalPermit p, long permits) {
            if (family.pinLate) {
                REFS.getAndAdd(this, permits); // the broken copy counts in only now, dead or not
            } else if (permits != 1) {
                unhold(1 - permits);
            }
            return new KeyedPermit(this, p);
        }

        /** Counts {@code n} out (a negative n counts in): at 0, the entry dies (K3). */
        void unhold(long n) {
            long r = (long) REFS.getAndAdd(this, -n) - n;
            if (r == 0 && REFS.compareAndSet(this, 0L, DEAD)) {
                family.died(this);
            }
        }

        boolean startForwarding() {
            return FORWARDING.compareAndSet(this, false, true);
        }

        long refsForTests() {
            return refs;
        }
    }

    /** Tells the family's listeners of one entry's events, with the key's view; counts leaks out (K2, K7). */
    private static final class EntryForwarder<K> implements SemaphoreListener {
        private final LocalKeyedSemaphore<K> family;
        private final Entry<K> entry;

        EntryForwarder(LocalKeyedSemaphore<K> family, Entry<K> entry) {
            this.family = family;
            this.entry = entry;
        }

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            SemaphoreListener[] ls = family.listeners;
            if (ls != null) {
                for (SemaphoreListener l : ls) {
                    try {
                        l.acquired(entry.view, permits, waitNanos);
                    } catch (Throwable t) {
                        family.failed(l, t);
                    }
                }
            }
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            SemaphoreListener[] ls = family.listeners;
            if (ls != null) {
                for (SemaphoreListener l : ls) {
                    try {
                        l.rejected(entry.view, permits, why, waitNanos);
                    } catch (Throwable t) {
                        family.failed(l, t);
                    }
                }
            }
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            SemaphoreListener[] ls = family.listeners;
            if (ls != null) {
                for (SemaphoreListener l : ls) {
                    try {
                        l.released(entry.view, permits, heldNanos);
                    } catch (Throwable t) {
                        family.failed(l, t);
                    }
                }
            }
        }

        @Override
        public void leaked(Semaphore s, long permits) {
            SemaphoreListener[] ls = family.listeners;
            if (ls != null) {
                for (SemaphoreListener l : ls) {
                    try {
                        l.leaked(entry.view, permits);
                    } catch (Throwable t) {
                        family.failed(l, t);
                    }
                }
            }
            entry.unhold(permits); // K2: the engine took them back before telling
        }

        @Override
        public void closed(Semaphore s) {
            // one close of the family, not one per key: nothing to tell
        }
    }
}
