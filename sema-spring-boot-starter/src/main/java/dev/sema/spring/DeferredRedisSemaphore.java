package dev.sema.spring;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Checks;
import dev.sema.internal.Partitioned;
import dev.sema.internal.Partitioned.PartitionState;
import dev.sema.internal.StateSource;
import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The registry's handle on a {@code redis: true} semaphore: the {@link RedisSemaphore} itself once it has been
 * opened in Redis, and until then a stand-in that refuses, so that an application starts while Redis is
 * unreachable ({@code sema.redis.fail-fast: false}, the default) and its semaphores work from the moment
 * {@link RedisConnector} reaches Redis.
 *
 * <p>While it is not open, every acquire fails as an acquire on a Redis semaphore whose Redis is down does: with
 * {@link RedisSemaphoreException} (a blocking or trying call throws it, an {@code acquireAsync} future fails with it)
 * and a {@code rejected(UNAVAILABLE)} event; the counts, resizing and {@code close} throw it too.
 * {@link #maxPermits()} is the configured ceiling, so that requests are checked against it as they will be later
 * (a semaphore that already exists in Redis keeps its stored ceiling, which wins once it is open).
 *
 * <p>Listeners are the handle's own: whoever registers on it sees events with it as their {@code semaphore},
 * before and after it opens (an {@link dev.sema.AdaptiveLimit} compares that argument with the semaphore it
 * controls).
 *
 * <p>A semaphore configured with partitions (API.md §11a) has a stand-in for each configured partition's view,
 * made with it and the same whether it is open or not, so that what the configuration resolves at startup
 * ({@code @WithPermits(partition)}, {@code sema.web}'s partitions, the meters) holds on to objects that work
 * from the moment Redis is reached. Until then {@link #partitionNames()} is the configured partitions; once
 * open, the partitions stored in Redis, which win, as the stored limit does (a configured partition Redis does
 * not have stays refusing, naming the stored ones).
 */
/* Implementation overview
 *
 * D1: `delegate` goes from null to the opened RedisSemaphore once, under `lock`, and never changes again; every
 *     call reads it once, so a call runs wholly on the stand-in or wholly on the delegate.
 * D2: every listener added here hears every event of the delegate exactly once from the moment it is added:
 *     `forwarder` is registered on the delegate before `delegate` is published (so no call through this handle
 *     reaches the delegate unheard), and it calls the listeners in `listeners` in the order added, with this
 *     handle as `semaphore`.
 * D3: the open actions (`whenOpen`) run once, after `delegate` is published, outside `lock`, in the order given;
 *     one added after the open runs at once on the caller's thread.
 * D4: a partition's stand-in (`parent` != null) has no listeners or views of its own: its events go to the
 *     parent's listeners with the stand-in as the semaphore, the forwarder translating the delegate's view into
 *     it (a partition stored in Redis but not configured is reported with the delegate's view). The parent opens
 *     each of its views before publishing its own delegate, so a caller that reaches the parent's delegate finds
 *     every view open as well, or refusing for good because Redis lacks that partition.
 *
 * field      | read          | written              | guard
 * delegate   | volatile      | once, volatile       | lock
 * listeners  | copy-on-write | copy-on-write        | -
 * onOpen     | under lock    | under lock           | lock
 */
final class DeferredRedisSemaphore implements RedisSemaphore, StateSource, Partitioned,
        RedisConnector.Deferred<RedisSemaphore> {
    private static final System.Logger LOG = System.getLogger(DeferredRedisSemaphore.class.getName());

    private final String name;
    private final long maxPermits;
    private final Duration lease;
    /** The semaphore whose partition this stands in for (D4), or null. */
    private final DeferredRedisSemaphore parent;
    /** The configured partitions' stand-ins, in priority order (D4); empty for a partition's. */
    private final Map<String, DeferredRedisSemaphore> views;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile RedisSemaphore delegate;
    private final CopyOnWriteArrayList<SemaphoreListener> listeners = new CopyOnWriteArrayList<>();
    private final Set<SemaphoreListener> complained = ConcurrentHashMap.newKeySet();
    private final SemaphoreListener forwarder = new Forwarder();
    private List<Consumer<RedisSemaphore>> onOpen = new ArrayList<>();
    /** Why it is not open yet, for the messages; replaced by every failed attempt. */
    private volatile String notOpenBecause = "Redis has not been reached yet";

    /**
     * @param name the semaphore's name
     * @param maxPermits its configured ceiling
     * @param lease its configured lease
     */
    DeferredRedisSemaphore(String name, long maxPermits, Duration lease) {
        this(name, maxPermits, lease, List.of());
    }

    /**
     * @param name the semaphore's name
     * @param maxPermits its configured ceiling
     * @param lease its configured lease
     * @param partitions its configured partitions, in priority order
     */
    DeferredRedisSemaphore(String name, long maxPermits, Duration lease, List<String> partitions) {
        this.name = name;
        this.maxPermits = maxPermits;
        this.lease = lease;
        this.parent = null;
        Map<String, DeferredRedisSemaphore> v = new LinkedHashMap<>();
        for (String p : partitions) {
            v.put(p, new DeferredRedisSemaphore(this, p));
        }
        this.views = Collections.unmodifiableMap(v);
    }

    private DeferredRedisSemaphore(DeferredRedisSemaphore parent, String partition) {
        this.name = parent.name + "/" + partition;
        this.maxPermits = parent.maxPermits;
        this.lease = parent.lease;
        this.parent = parent;
        this.views = Map.of();
    }

    /** Whether the semaphore has been opened in Redis. */
    boolean isOpen() {
        return delegate != null;
    }

    /** Records why the last attempt to open it failed, for the refusals' messages. */
    @Override
    public void failedToOpen(String because) {
        notOpenBecause = because;
        for (DeferredRedisSemaphore v : views.values()) {
            v.notOpenBecause = because;
        }
    }

    /**
     * Makes {@code opened} the semaphore this handle is (D1), hands it the listeners (D2), then runs the open
     * actions (D3).
     */
    @Override
    public void open(RedisSemaphore opened) {
        List<Consumer<RedisSemaphore>> actions;
        lock.lock();
        try {
            if (delegate != null) {
                throw new IllegalStateException("semaphore '" + name + "' is open already");
            }
            // D2: the forwarder hears the delegate before any caller can reach it through this handle, so that no
            // acquire's event is lost between the publication and the registration.
            opened.addListener(forwarder);
            openViews(opened); // D4: before the parent is published
            delegate = opened;
            actions = onOpen;
            onOpen = null;
        } finally {
            lock.unlock();
        }
        for (Consumer<RedisSemaphore> action : actions) {
            runOpenAction(action, opened);
        }
    }

    /** Opens each configured partition's stand-in on the view Redis has, or leaves it refusing, saying why (D4). */
    private void openViews(RedisSemaphore opened) {
        for (Map.Entry<String, DeferredRedisSemaphore> e : views.entrySet()) {
            DeferredRedisSemaphore view = e.getValue();
            try {
                RedisSemaphore d = opened.partition(e.getKey());
                view.lock.lock();
                try {
                    view.delegate = d;
                } finally {
                    view.lock.unlock();
                }
            } catch (IllegalArgumentException missing) {
                view.notOpenBecause = "the semaphore stored in Redis has no partition '" + e.getKey() + "': it has "
                        + (opened.partitionNames().isEmpty() ? "none" : opened.partitionNames())
                        + ", and the stored partitions win";
                LOG.log(System.Logger.Level.WARNING, "semaphore '" + name + "' in Redis has partitions "
                        + opened.partitionNames() + ", not the configured " + views.keySet() + "; requests of"
                        + " partition '" + e.getKey() + "' are refused");
            }
        }
    }

    /** Runs {@code action} with the opened semaphore once it is open: now, if it is (D3). */
    void whenOpen(Consumer<RedisSemaphore> action) {
        RedisSemaphore opened;
        lock.lock();
        try {
            opened = delegate;
            if (opened == null) {
                onOpen.add(action);
                return;
            }
        } finally {
            lock.unlock();
        }
        action.accept(opened);
    }

    private void runOpenAction(Consumer<RedisSemaphore> action, RedisSemaphore opened) {
        try {
            action.accept(opened);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "semaphore '" + name + "' was opened in Redis, but what the"
                    + " configuration attaches to it could not be: " + e.getMessage(), e);
        }
    }

    /** The opened semaphore, or the failure an operation meets while there is none. */
    private RedisSemaphore open(String what) {
        RedisSemaphore d = delegate;
        if (d == null) {
            throw notOpen(what);
        }
        return d;
    }

    private RedisSemaphoreException notOpen(String what) {
        return new RedisSemaphoreException("semaphore '" + name + "': " + what + " failed: it is not open yet ("
                + notOpenBecause + ")", null);
    }

    /** An acquire refused for want of Redis: the event, then the failure to throw. */
    private RedisSemaphoreException refused(String what, long permits) {
        Checks.request(permits, maxPermits, name);
        RedisSemaphoreException failure = notOpen(what);
        tell(l -> l.rejected(this, permits, Rejection.UNAVAILABLE, 0));
        return failure;
    }

    // ---------------------------------------------------------------- acquires

    @Override
    public RedisPermit acquire(long permits) throws InterruptedException {
        RedisSemaphore d = delegate;
        if (d == null) {
            throw refused("acquire(" + permits + ")", permits);
        }
        return d.acquire(permits);
    }

    @Override
    public RedisPermit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        RedisSemaphore d = delegate;
        if (d == null) {
            Objects.requireNonNull(timeout, "timeout");
            throw refused("acquire(" + permits + ", " + timeout + ")", permits);
        }
        return d.acquire(permits, timeout);
    }

    @Override
    public RedisPermit acquireUninterruptibly(long permits) {
        RedisSemaphore d = delegate;
        if (d == null) {
            throw refused("acquireUninterruptibly(" + permits + ")", permits);
        }
        return d.acquireUninterruptibly(permits);
    }

    @Override
    public RedisPermit drainPermits() {
        RedisSemaphore d = delegate;
        if (d == null) {
            throw refused("drainPermits()", 0);
        }
        return d.drainPermits();
    }

    @Override
    public Optional<Permit> tryAcquire(long permits) {
        RedisSemaphore d = delegate;
        if (d == null) {
            throw refused("tryAcquire(" + permits + ")", permits);
        }
        return d.tryAcquire(permits);
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits) {
        RedisSemaphore d = delegate;
        return d != null ? d.acquireAsync(permits)
                : CompletableFuture.failedFuture(refused("acquireAsync(" + permits + ")", permits));
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        RedisSemaphore d = delegate;
        if (d == null) {
            Objects.requireNonNull(timeout, "timeout");
            return CompletableFuture.failedFuture(refused("acquireAsync(" + permits + ", " + timeout + ")", permits));
        }
        return d.acquireAsync(permits, timeout);
    }

    @Override
    public void awaitIdle() throws InterruptedException {
        open("awaitIdle()").awaitIdle();
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        RedisSemaphore d = delegate;
        return d != null ? d.awaitIdleAsync() : CompletableFuture.failedFuture(notOpen("awaitIdleAsync()"));
    }

    // ---------------------------------------------------------------- counts and limits

    @Override
    public State state() {
        RedisSemaphore d = open("reading its state");
        if (d instanceof StateSource source) {
            return source.state();
        }
        return new State(d.permits(), d.maxPermits(), d.availablePermits(), d.queueLength(), d.isClosed(), true);
    }

    @Override
    public long permits() {
        return open("permits()").permits();
    }

    @Override
    public long maxPermits() {
        RedisSemaphore d = delegate;
        return d == null ? maxPermits : d.maxPermits();
    }

    @Override
    public long availablePermits() {
        return open("availablePermits()").availablePermits();
    }

    @Override
    public void setPermits(long limit) {
        open("setPermits(" + limit + ")").setPermits(limit);
    }

    @Override
    public long addPermits(long n) {
        return open("addPermits(" + n + ")").addPermits(n);
    }

    @Override
    public long reducePermits(long n) {
        return open("reducePermits(" + n + ")").reducePermits(n);
    }

    @Override
    public int queueLength() {
        return open("queueLength()").queueLength();
    }

    @Override
    public Fairness fairness() {
        return Fairness.FIFO;
    }

    @Override
    public Duration lease() {
        RedisSemaphore d = delegate;
        return d == null ? lease : d.lease();
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * A configured partition's stand-in, open or not (D4); once open, a partition stored in Redis but not
     * configured is the delegate's own view.
     */
    @Override
    public RedisSemaphore partition(String partition) {
        Objects.requireNonNull(partition, "name");
        DeferredRedisSemaphore view = views.get(partition);
        if (view != null) {
            return view;
        }
        RedisSemaphore d = delegate;
        if (d == null) {
            throw new IllegalArgumentException("semaphore '" + name + "' has no partition '" + partition + "'; "
                    + (parent != null ? "it is a partition of semaphore '" + parent.name + "'"
                            : views.isEmpty() ? "none is configured" : "those configured are " + views.keySet()));
        }
        return d.partition(partition);
    }

    /** The configured partitions until it is open, then those stored in Redis. */
    @Override
    public List<String> partitionNames() {
        RedisSemaphore d = delegate;
        if (d != null) {
            return d.partitionNames();
        }
        return parent != null ? List.of() : List.copyOf(views.keySet());
    }

    @Override
    public List<PartitionState> partitionStates() {
        RedisSemaphore d = open("partitionStates()");
        return d instanceof Partitioned p ? p.partitionStates() : List.of();
    }

    // ---------------------------------------------------------------- close

    @Override
    public void close() {
        open("close()").close();
    }

    @Override
    public void close(Throwable cause) {
        Objects.requireNonNull(cause, "cause");
        open("close(cause)").close(cause);
    }

    @Override
    public boolean isClosed() {
        return open("isClosed()").isClosed();
    }

    // ---------------------------------------------------------------- listeners (D2)

    @Override
    public void addListener(SemaphoreListener listener) {
        Objects.requireNonNull(listener, "listener");
        if (parent != null) {
            throw new UnsupportedOperationException("semaphore '" + name + "' is a partition: its listeners are those"
                    + " of semaphore '" + parent.name + "', which see its events with it as the semaphore; register"
                    + " there");
        }
        listeners.add(listener);
    }

    @Override
    public boolean removeListener(SemaphoreListener listener) {
        return listeners.remove(listener);
    }

    /** Tells every listener of this handle, in the order added; one that throws is logged once and stops no other. */
    private void tell(Consumer<SemaphoreListener> event) {
        DeferredRedisSemaphore owner = parent != null ? parent : this;
        for (SemaphoreListener l : owner.listeners) {
            try {
                event.accept(l);
            } catch (RuntimeException e) {
                if (owner.complained.add(l)) {
                    LOG.log(System.Logger.Level.WARNING, "listener " + l + " of semaphore '" + owner.name + "' threw; it is"
                            + " told of later events all the same (this is logged once per listener)", e);
                }
            }
        }
    }

    /**
     * Tells this handle's listeners of the delegate's events, with this handle as the semaphore, or a configured
     * partition's stand-in for its view's (D4).
     */
    private final class Forwarder implements SemaphoreListener {
        private Semaphore as(Semaphore s) {
            if (s == delegate || views.isEmpty() || !s.name().startsWith(name + "/")) {
                return DeferredRedisSemaphore.this;
            }
            DeferredRedisSemaphore view = views.get(s.name().substring(name.length() + 1));
            return view != null ? view : s;
        }

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            Semaphore as = as(s);
            tell(l -> l.acquired(as, permits, waitNanos));
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            Semaphore as = as(s);
            tell(l -> l.rejected(as, permits, why, waitNanos));
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            Semaphore as = as(s);
            tell(l -> l.released(as, permits, heldNanos));
        }

        @Override
        public void leaked(Semaphore s, long permits) {
            Semaphore as = as(s);
            tell(l -> l.leaked(as, permits));
        }

        @Override
        public void limitChanged(Semaphore s, long oldLimit, long newLimit) {
            tell(l -> l.limitChanged(DeferredRedisSemaphore.this, oldLimit, newLimit));
        }

        @Override
        public void closed(Semaphore s) {
            Semaphore as = as(s);
            tell(l -> l.closed(as));
        }
    }

    @Override
    public String toString() {
        RedisSemaphore d = delegate;
        return d != null ? d.toString() : "RedisSemaphore[" + name + ", not open: " + notOpenBecause + "]";
    }
}
