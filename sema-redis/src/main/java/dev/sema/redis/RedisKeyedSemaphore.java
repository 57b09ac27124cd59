package dev.sema.redis;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.TooManyKeysException;
import dev.sema.internal.AbstractKeyView;
import dev.sema.internal.AbstractKeyedSemaphore;
import dev.sema.internal.Failures;
import dev.sema.internal.FamilyListeners;
import dev.sema.internal.ParentSide;
import dev.sema.internal.Timeouts;
import dev.sema.internal.TwoStepFuture;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The Redis {@link KeyedSemaphore} (API.md §11b): each key's semaphore is the {@link RedisSemaphore} named
 * {@code family:key}, whose limit Redis keeps for the whole fleet; this process keeps a map from each key live
 * here to its {@link Entry}, which owns the key's handle while something uses it. The contract is on
 * {@link KeyedSemaphore} and {@link RedisKeyedBuilder}.
 */
final class RedisKeyedSemaphore extends AbstractKeyedSemaphore<String, RedisPermit> {

    /*
     * Implementation overview
     *
     * The per-key limit is not this class's to keep: Redis keeps it across every handle and process (the
     * RedisSemaphore's own invariants). What this class keeps is the lifetime of this process's handles, with
     * the removal protocol of LocalKeyedSemaphore (K1-K6 there), so that a handle is never let go of while a
     * request is between its lookup and its acquire, nor while it holds permits.
     *
     * Each key live here has one Entry in `entries`: `ready`, the future of its handle (opened by the request
     * that made the entry), and `refs`, the count of what keeps it alive: the requests in flight on it (from
     * the lookup that found or made it until they end) plus the permits its Permits hold. DEAD (-1) marks an
     * entry that is gone for good.
     *
     * Invariants:
     *  R1: a handle is asked only by a request that holds one of its entry's refs: the lookup (pin) counts the
     *      request in by a CAS from refs >= 0 to refs + 1, before it waits for `ready`, and counts it out when
     *      the request ends (a grant: refs += n - 1 in the step that makes the Permit; a refusal: refs -= 1).
     *  R2: a Permit gives its permits back to the handle (RELEASE in Redis) before counting them out of refs
     *      (RedisKeyedPermit), so refs == 0 implies the handle holds nothing and nobody is about to use it.
     *  R3: an entry dies by one CAS of refs from 0 to DEAD, made by whoever brought refs to 0; a DEAD entry is
     *      never counted in again (R1's CAS fails); it is removed from the map by identity, and its handle is
     *      dropped (RedisSemaphores.drop: it leaves and unsubscribes; the semaphore stays open in Redis) once
     *      `ready` is complete: by R1-R2 it then has no waiter and no grant, but may have a release whose reply
     *      was lost, which it sends as it leaves (LettuceSemaphore's L11).
     *  R4: a new entry enters the map only by putIfAbsent, so this process has at most one entry, and so one
     *      handle in use, per key; an entry leaves the map once DEAD (R3), or at once when its handle could not
     *      be opened (`ready` failed: it never had a handle, so it never holds permits).
     *  R5: `live` counts the entries made and not yet dead, checked against maxKeys before an entry is made
     *      (AbstractKeyedSemaphore's B1, LocalKeyedSemaphore's K4): at most maxKeys handles in use here; a race
     *      near the bound may refuse a request early, never let one through beyond it.
     *  R6: close sets `closed`, then makes every entry in the map leave once its handle is ready; a lookup that
     *      makes an entry reads `closed` after publishing it and refuses its request if set. Either way no
     *      handle opened after close serves a request (LocalKeyedSemaphore's K5). Close waits one command timeout
     *      for all the keys' last releases together (LettuceSemaphore's L11), not one each: what Redis did not
     *      answer by then, the leases end.
     *  R7: every handle gets a forwarder of the family's listeners (FamilyListeners) when it is opened, which
     *      reads the family's listeners at each event: a listener added later sees every key's later events.
     *
     * Whoever makes an entry opens its handle: a blocking request in its own thread, an async one on a virtual
     * thread, so that acquireAsync never waits for Redis. Others wait for `ready`.
     *
     * field              read        write
     * entries            CHM         CHM (putIfAbsent, remove(key, e))
     * Entry.refs         volatile    CAS / getAndAdd
     * Entry.ready        future      completed once, by the entry's maker
     * live               atomic      atomic                  (AbstractKeyedSemaphore, as the two below)
     * closed             volatile    volatile, once
     * listeners          FamilyListeners (copy on write)
     */

    static final long DEAD = -1;

    private final RedisSemaphores owner;
    private final long permits;
    private final Duration lease;
    private final Duration expireWhenIdle;
    /** WAIT after each grant: how many replicas (0: none), and for how long. */
    private final int replicas;
    private final Duration replicasTimeout;
    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

    RedisKeyedSemaphore(RedisSemaphores owner, String name, long permits, Duration lease, int maxKeys,
            Duration expireWhenIdle, int replicas, Duration replicasTimeout, Semaphore parent,
            List<SemaphoreListener> listeners) {
        super(name, maxKeys, parent, listeners);
        this.owner = owner;
        this.permits = permits;
        this.lease = lease;
        this.expireWhenIdle = expireWhenIdle;
        this.replicas = replicas;
        this.replicasTimeout = replicasTimeout;
    }

    // ---------------------------------------------------------------- the family

    /**
     * The key's view, named {@code family:key}.
     *
     * @throws IllegalArgumentException if the key is empty or contains a brace: it would not make a valid Redis
     *         semaphore name
     */
    @Override
    public RedisSemaphore get(String key) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty() || key.indexOf('{') >= 0 || key.indexOf('}') >= 0) {
            throw new IllegalArgumentException("key '" + key + "' of keyed semaphore '" + name() + "' must be non-empty"
                    + " and must not contain braces (they delimit the cluster hash tag of semaphore '" + name() + ":"
                    + key + "')");
        }
        return new RedisKeyView(this, key);
    }

    long permitsPerKey() {
        return permits;
    }

    Duration lease() {
        return lease;
    }

    @Override
    protected String where() {
        return " in this process";
    }

    /**
     * Ends this process's use of the family: every live key's handle leaves (its waiters here fail with
     * {@link SemaphoreClosedException}, its permits are given back in Redis), and later requests fail. The keys'
     * semaphores stay open in Redis for every other process.
     */
    @Override
    public void close() {
        closed = true;
        String because = "keyed semaphore '" + name() + "' is closed in this process";
        List<CompletableFuture<Void>> sent = new ArrayList<>();
        for (Entry e : entries.values()) { // R6
            sent.add(e.ready.thenCompose(h -> h.leaving(because)).exceptionally(t -> null));
        }
        // One command timeout for every key's last releases, not one each: with Redis down, the leases end them.
        try {
            CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new))
                    .get(owner.commandTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // left to the leases (L11 of LettuceSemaphore)
        }
    }

    @Override
    public String toString() {
        return "RedisKeyedSemaphore[" + name() + ", keys=" + size() + "/" + maxKeys() + (closed ? ", closed" : "")
                + "]";
    }

    // ---------------------------------------------------------------- lookup and removal (R1-R6)

    /**
     * The key's entry, counted in for one request (R1), made if there is none, its handle opened by this call
     * ({@code async}: on a virtual thread); refusals are reported first ({@code report}: as events).
     */
    private Entry pin(AbstractKeyView<String, RedisPermit> view, long permits, String op, Duration timeout,
            boolean async, boolean report) {
        checkRequest(permits);
        String key = view.key();
        for (;;) {
            Entry e = entries.get(key);
            if (e != null) {
                if (e.retain()) {
                    return e;
                }
                entries.remove(key, e); // R3: a DEAD entry, removed by whoever meets it first
                continue;
            }
            if (closed) {
                throw closedFamily(view, permits, op, timeout, report);
            }
            if (!countIn()) { // R5
                if (entries.containsKey(key)) {
                    continue; // made meanwhile by another request: use it
                }
                throw tooManyKeys(view, permits, op, timeout, report);
            }
            Entry made = new Entry(this, key, (RedisKeyView) view);
            if (entries.putIfAbsent(key, made) != null) { // R4
                live.decrementAndGet();
                continue;
            }
            if (closed) { // R6: close may not have seen this entry
                SemaphoreClosedException refused = closedFamily(view, permits, op, timeout, report);
                made.ready.completeExceptionally(refused);
                entries.remove(key, made);
                made.unpin();
                throw refused;
            }
            if (async) {
                owner.execute(made::open);
            } else {
                made.open();
            }
            return made;
        }
    }

    /** Called by an entry that died (R3). */
    void died(Entry e) {
        entries.remove(e.key, e);
        live.decrementAndGet();
        e.ready.thenAccept(owner::drop);
    }

    int entriesForTests() {
        return entries.size();
    }

    /** The live entry of a key, or null. */
    Entry peek(String key) {
        Entry e = entries.get(key);
        return e != null && e.refs >= 0 ? e : null;
    }

    // ---------------------------------------------------------------- requests, for the views

    @Override
    protected RedisPermit acquire(AbstractKeyView<String, RedisPermit> view, long permits, Duration timeout,
            boolean interruptible) throws InterruptedException, TimeoutException {
        long deadline = timeout == null ? 0 : Timeouts.deadline(Timeouts.toNanos(timeout));
        if (interruptible && Thread.currentThread().isInterrupted()) {
            throw Failures.interruptedBefore(view.name(), what("acquire", permits, timeout));
        }
        Entry e = pin(view, permits, "acquire", timeout, false, true);
        RedisPermit granted;
        try {
            LettuceSemaphore h = e.handle(interruptible);
            if (timeout != null) {
                granted = h.acquire(permits, ParentSide.remaining(deadline));
            } else if (interruptible) {
                granted = h.acquire(permits);
            } else {
                granted = h.acquireUninterruptibly(permits);
            }
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        return ParentSide.acquire(e.granted(granted, permits), parent, permits, timeout, deadline, interruptible);
    }

    @Override
    protected Optional<Permit> tryAcquire(AbstractKeyView<String, RedisPermit> view, long permits) {
        Entry e;
        try {
            e = pin(view, permits, "tryAcquire", null, false, true);
        } catch (TooManyKeysException full) {
            return Optional.empty();
        }
        Optional<Permit> granted;
        try {
            granted = e.handle().tryAcquire(permits);
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        if (granted.isEmpty()) {
            e.unpin();
            return granted;
        }
        return ParentSide.tryAcquire(e.granted((RedisPermit) granted.get(), permits), parent, permits);
    }

    @Override
    protected RedisPermit drainPermits(AbstractKeyView<String, RedisPermit> view) {
        Entry e = pin(view, 0, "drainPermits", null, false, true);
        RedisPermit drained;
        try {
            drained = e.handle().drainPermits();
        } catch (Throwable t) {
            e.unpin();
            throw t;
        }
        return ParentSide.drain(e.granted(drained, drained.permits()), parent);
    }

    @Override
    protected CompletableFuture<Permit> acquireAsync(AbstractKeyView<String, RedisPermit> view, long permits,
            Duration timeout) {
        long deadline = timeout == null ? 0 : Timeouts.deadline(Timeouts.toNanos(timeout));
        Entry e;
        try {
            e = pin(view, permits, "acquireAsync", timeout, true, true);
        } catch (TooManyKeysException | SemaphoreClosedException refused) {
            return CompletableFuture.failedFuture(refused);
        }
        // Three waits in turn: the handle, the key's permits, the parent's; cancelling `out` stops the one in
        // progress, whose failure gives back what was granted (R1: every path ends in unpin or a Permit).
        TwoStepFuture out = new TwoStepFuture(new CompletableFuture<>());
        e.ready.whenComplete((h, opening) -> {
            if (opening != null) {
                e.unpin();
                out.completeExceptionally(ParentSide.unwrap(opening));
                return;
            }
            CompletableFuture<Permit> first;
            try {
                first = timeout == null ? h.acquireAsync(permits)
                        : h.acquireAsync(permits, ParentSide.remaining(deadline));
            } catch (Throwable t) {
                e.unpin();
                out.completeExceptionally(t);
                return;
            }
            out.next(first);
            first.whenComplete((p, t) -> {
                if (t != null) {
                    e.unpin();
                    out.completeExceptionally(ParentSide.unwrap(t));
                    return;
                }
                ParentSide.acquireAsync(e.granted((RedisPermit) p, permits), parent, permits, timeout, deadline, out);
            });
        });
        return out;
    }

    /** A query of the key's semaphore in Redis, through its handle, opened for the query if not live here. */
    <T> T query(RedisKeyView view, String op, Function<LettuceSemaphore, T> read) {
        Entry e = pin(view, 0, op, null, false, false);
        try {
            return read.apply(e.handle());
        } finally {
            e.unpin();
        }
    }

    @Override
    protected void awaitIdle(AbstractKeyView<String, RedisPermit> view) throws InterruptedException {
        Entry e = pin(view, 0, "awaitIdle", null, false, false);
        try {
            e.handle(true).awaitIdle();
        } finally {
            e.unpin();
        }
    }

    @Override
    protected CompletableFuture<Void> awaitIdleAsync(AbstractKeyView<String, RedisPermit> view) {
        Entry e;
        try {
            e = pin(view, 0, "awaitIdleAsync", null, true, false);
        } catch (RuntimeException refused) {
            return CompletableFuture.failedFuture(refused);
        }
        CompletableFuture<Void> idle = e.ready.thenCompose(LettuceSemaphore::awaitIdleAsync);
        idle.whenComplete((v, t) -> e.unpin());
        return idle;
    }

    // ---------------------------------------------------------------- one key

    /** A key live in this process: its handle and what keeps it alive (R1-R3). */
    static final class Entry {
        private static final VarHandle REFS;

        static {
            try {
                REFS = MethodHandles.lookup().findVarHandle(Entry.class, "refs", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final RedisKeyedSemaphore family;
        final String key;
        final RedisKeyView view;
        /** The key's handle, once its maker opened it; failed if it could not be (R4). */
        final CompletableFuture<LettuceSemaphore> ready = new CompletableFuture<>();
        /** Made by pin with its maker's ref (R1). */
        private volatile long refs = 1;

        Entry(RedisKeyedSemaphore family, String key, RedisKeyView view) {
            this.family = family;
            this.key = key;
            this.view = view;
        }

        /** Opens the key's handle (its maker's job); a failure removes the entry at once (R4). */
        void open() {
            RedisKeyedSemaphore f = family;
            try {
                RedisSemaphore.Builder b = f.owner.semaphore(view.name()).permits(f.permits).lease(f.lease)
                        .expireWhenIdle(f.expireWhenIdle);
                LettuceSemaphore h = (LettuceSemaphore) (f.replicas > 0 ? b.replicas(f.replicas, f.replicasTimeout)
                        : b).build();
                h.addListener(f.listeners.forwarder(view, null, null)); // R7
                ready.complete(h);
            } catch (RuntimeException | Error e) {
                f.entries.remove(key, this); // R4: it never had a handle, so it never holds permits
                ready.completeExceptionally(e);
            }
        }

        /** The handle, waiting for its maker to open it; rethrows why it could not be. */
        LettuceSemaphore handle(boolean interruptible) throws InterruptedException {
            boolean interrupted = false;
            try {
                for (;;) {
                    try {
                        return ready.get();
                    } catch (InterruptedException e) {
                        if (interruptible) {
                            throw e;
                        }
                        interrupted = true;
                    } catch (ExecutionException e) {
                        Throwable c = e.getCause();
                        if (c instanceof RuntimeException r) {
                            throw r;
                        }
                        throw new RedisSemaphoreException("keyed semaphore '" + family.name() + "': the handle of"
                                + " key '" + key + "' could not be opened: " + c, c);
                    }
                }
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /** {@link #handle(boolean)}, waiting through interrupts (the flag is kept). */
        LettuceSemaphore handle() {
            try {
                return handle(false);
            } catch (InterruptedException impossible) {
                throw new AssertionError(impossible);
            }
        }

        /** Counts a request in (R1): false once DEAD. */
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
            unhold(1);
        }

        /** A grant of {@code permits}: the request's ref becomes the permits' (R1), in one step. */
        RedisKeyedPermit granted(RedisPermit p, long permits) {
            if (permits != 1) {
                unhold(1 - permits);
            }
            return new RedisKeyedPermit(this, p, permits);
        }

        /** Counts {@code n} out (a negative n counts in): at 0, the entry dies (R3). */
        void unhold(long n) {
            long r = (long) REFS.getAndAdd(this, -n) - n;
            if (r == 0 && REFS.compareAndSet(this, 0L, DEAD)) {
                family.died(this);
            }
        }

        long refsForTests() {
            return refs;
        }
    }
}
