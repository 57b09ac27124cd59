package dev.sema.spring;

import dev.sema.Fairness;
import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Checks;
import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import java.time.Duration;
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
 * The registry's handle on a {@code redis: true} keyed family ({@code sema.keyed.<name>}): the family that
 * {@code RedisSemaphores.keyed(name)} builds once the starter has reached Redis, and until then a stand-in that
 * refuses, as {@link DeferredRedisSemaphore} is for a semaphore, so that an application starts while Redis is
 * unreachable ({@code sema.redis.fail-fast: false}, the default) and the family works from the moment
 * {@link RedisConnector} reaches Redis.
 *
 * <p>Keys: a Redis family's keys are strings, the same in every process, so a key given here is
 * {@code String.valueOf(key)}: {@code 42} and {@code "42"} are one key. {@link #get} refuses a key that is empty or
 * contains a brace with {@link IllegalArgumentException} naming it, whether the family is open or not, since the
 * Redis family refuses it (it would not make a valid Redis semaphore name).
 *
 * <p>{@link #get} gives a view bound to the key, named {@code "<family>:<key>"} as the Redis family's views are, that
 * finds the family at each call: a view taken before Redis was reached (by {@code @WithPermits}, say) works from the
 * moment it is. While the family is not open, every acquire fails as an acquire on a Redis semaphore whose Redis is
 * down does: with {@link RedisSemaphoreException} (a blocking or trying call throws it, an {@code acquireAsync}
 * future fails with it) and a {@code rejected(UNAVAILABLE)} event; the counts throw it too. {@link #size()} is
 * then 0: no key is live in this process.
 *
 * <p>Listeners are the handle's own: whoever registers on it (the meters) sees every key's events, before and after
 * the family opens, with the key's view from here as their {@code semaphore}.
 */
/* Implementation overview
 *
 * F1: `delegate` goes from null to the opened family once, under `lock`, and never changes again; every call reads
 *     it once, so a call runs wholly on the stand-in or wholly on the family.
 * F2: every listener added here hears every event of the family from the moment it is added: `forwarder` is added to
 *     the family before `delegate` is published (no request through this handle reaches the family unheard), and it
 *     calls the listeners in `listeners` in the order added, with this handle's view of the key as `semaphore`.
 * F3: `closed` is set under `lock`; an open that finds it set closes the family at once, so that no request is
 *     served by a family opened after the registry closed (a request that finds it set and no delegate is refused
 *     as closed).
 *
 * field      | read          | written              | guard
 * delegate   | volatile      | once, volatile       | lock
 * closed     | volatile      | once, volatile       | lock
 * listeners  | copy-on-write | copy-on-write        | -
 */
final class DeferredRedisKeyedSemaphore implements KeyedSemaphore<Object>,
        RedisConnector.Deferred<KeyedSemaphore<String>> {
    private static final System.Logger LOG = System.getLogger(DeferredRedisKeyedSemaphore.class.getName());

    private final String name;
    private final long permits;
    private final int maxKeys;
    private final Duration lease;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile KeyedSemaphore<String> delegate;
    private volatile boolean closed;
    private final CopyOnWriteArrayList<SemaphoreListener> listeners = new CopyOnWriteArrayList<>();
    private final Set<SemaphoreListener> complained = ConcurrentHashMap.newKeySet();
    private final SemaphoreListener forwarder = new Forwarder();
    /** Why it is not open yet, for the messages; replaced by every failed attempt. */
    private volatile String notOpenBecause = "Redis has not been reached yet";

    /**
     * @param name the family's name
     * @param permits each key's configured limit
     * @param maxKeys the most keys live in this process at once
     * @param lease each key's configured lease
     */
    DeferredRedisKeyedSemaphore(String name, long permits, int maxKeys, Duration lease) {
        this.name = name;
        this.permits = permits;
        this.maxKeys = maxKeys;
        this.lease = lease;
    }

    /** The reason a key is no valid key of a Redis family, or {@code null} when it is one. */
    static String invalidKey(String key) {
        if (key.isEmpty()) {
            return "is empty";
        }
        if (key.indexOf('{') >= 0 || key.indexOf('}') >= 0) {
            return "contains a brace (braces delimit the cluster hash tag of a Redis semaphore's name)";
        }
        return null;
    }

    /** Whether the family has been opened in Redis. */
    boolean isOpen() {
        return delegate != null;
    }

    /** Why it is not open, or {@code null} once it is. */
    String notOpen() {
        return delegate != null ? null : "keyed semaphore '" + name + "' is not open yet (" + notOpenBecause + ")";
    }

    @Override
    public String describe() {
        return "Redis keyed semaphore '" + name + "'";
    }

    @Override
    public void failedToOpen(String because) {
        notOpenBecause = because;
    }

    /** Makes {@code opened} the family this handle is (F1), hands it the listeners (F2), or closes it (F3). */
    @Override
    public void open(KeyedSemaphore<String> opened) {
        boolean lateForClose;
        lock.lock();
        try {
            if (delegate != null) {
                throw new IllegalStateException("keyed semaphore '" + name + "' is open already");
            }
            opened.addListener(forwarder); // F2: before any request can reach it through this handle
            delegate = opened;
            lateForClose = closed;
        } finally {
            lock.unlock();
        }
        if (lateForClose) {
            opened.close(); // F3
        }
    }

    // ---------------------------------------------------------------- the family

    /**
     * The view of {@code String.valueOf(key)}.
     *
     * @throws IllegalArgumentException if that is empty or contains a brace, naming the key
     */
    @Override
    public Semaphore get(Object key) {
        Objects.requireNonNull(key, "key");
        String k = String.valueOf(key);
        String invalid = invalidKey(k);
        if (invalid != null) {
            throw new IllegalArgumentException("key '" + k + "' of keyed semaphore '" + name + "' " + invalid
                    + ": a key of a family on Redis must be non-empty and contain no brace");
        }
        return new KeyView(k);
    }

    @Override
    public int size() {
        KeyedSemaphore<String> d = delegate;
        return d == null ? 0 : d.size();
    }

    @Override
    public int maxKeys() {
        return maxKeys;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void addListener(SemaphoreListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public boolean removeListener(SemaphoreListener listener) {
        return listeners.remove(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Ends this process's use of the family, as the Redis family's {@code close()} does: its waiters here fail, its
     * permits go back, later requests fail; the keys' semaphores stay open for every other process.
     */
    @Override
    public void close() {
        KeyedSemaphore<String> d;
        lock.lock();
        try {
            closed = true;
            d = delegate;
        } finally {
            lock.unlock();
        }
        if (d != null) {
            d.close();
        }
    }

    @Override
    public boolean isClosed() {
        KeyedSemaphore<String> d = delegate;
        return closed || d != null && d.isClosed();
    }

    /** Tells every listener, in the order added; one that throws is logged once and stops no other. */
    private void tell(Consumer<SemaphoreListener> event) {
        for (SemaphoreListener l : listeners) {
            try {
                event.accept(l);
            } catch (RuntimeException e) {
                if (complained.add(l)) {
                    LOG.log(System.Logger.Level.WARNING, "listener " + l + " of keyed semaphore '" + name + "' threw;"
                            + " it is told of later events all the same (this is logged once per listener)", e);
                }
            }
        }
    }

    @Override
    public String toString() {
        KeyedSemaphore<String> d = delegate;
        return d != null ? d.toString() : "RedisKeyedSemaphore[" + name + ", not open: " + notOpenBecause + "]";
    }

    /** Tells this handle's listeners of the family's events, with this handle's view of the key (F2). */
    private final class Forwarder implements SemaphoreListener {
        /** The view of the key that the Redis family's view {@code s} ({@code "<family>:<key>"}) is of. */
        private Semaphore as(Semaphore s) {
            String n = s.name();
            return n.startsWith(name + ":") ? new KeyView(n.substring(name.length() + 1)) : s;
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
        public void closed(Semaphore s) {
            Semaphore as = as(s);
            tell(l -> l.closed(as));
        }
    }

    // ---------------------------------------------------------------- one key

    /** The semaphore of one key: the Redis family's view of it, found at each call (F1), or a refusal. */
    private final class KeyView implements RedisSemaphore {
        private final String key;
        private final String viewName;

        KeyView(String key) {
            this.key = key;
            this.viewName = name + ":" + key;
        }

        /** The Redis family's view of the key, for an acquire: a refusal, with its event, while there is none. */
        private RedisSemaphore forAcquire(String what, long n) {
            KeyedSemaphore<String> d = delegate;
            if (d != null) {
                return (RedisSemaphore) d.get(key);
            }
            Checks.nonNegative("permits", n);
            if (closed) {
                tell(l -> l.rejected(this, n, Rejection.CLOSED, 0));
                throw new SemaphoreClosedException("semaphore '" + viewName + "': " + what + " refused: keyed"
                        + " semaphore '" + name + "' is closed in this process");
            }
            tell(l -> l.rejected(this, n, Rejection.UNAVAILABLE, 0));
            throw notOpen(what);
        }

        /** The Redis family's view of the key, for anything else. */
        private RedisSemaphore open(String what) {
            KeyedSemaphore<String> d = delegate;
            if (d == null) {
                throw notOpen(what);
            }
            return (RedisSemaphore) d.get(key);
        }

        private RedisSemaphoreException notOpen(String what) {
            return new RedisSemaphoreException("semaphore '" + viewName + "': " + what + " failed: keyed semaphore '"
                    + name + "' is not open yet (" + notOpenBecause + ")", null);
        }

        @Override
        public RedisPermit acquire(long n) throws InterruptedException {
            return forAcquire("acquire(" + n + ")", n).acquire(n);
        }

        @Override
        public RedisPermit acquire(long n, Duration timeout) throws InterruptedException, TimeoutException {
            Objects.requireNonNull(timeout, "timeout");
            return forAcquire("acquire(" + n + ", " + timeout + ")", n).acquire(n, timeout);
        }

        @Override
        public RedisPermit acquireUninterruptibly(long n) {
            return forAcquire("acquireUninterruptibly(" + n + ")", n).acquireUninterruptibly(n);
        }

        @Override
        public RedisPermit drainPermits() {
            return forAcquire("drainPermits()", 0).drainPermits();
        }

        @Override
        public Optional<Permit> tryAcquire(long n) {
            return forAcquire("tryAcquire(" + n + ")", n).tryAcquire(n);
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long n) {
            RedisSemaphore target;
            try {
                target = forAcquire("acquireAsync(" + n + ")", n);
            } catch (RedisSemaphoreException | SemaphoreClosedException refused) {
                return CompletableFuture.failedFuture(refused);
            }
            return target.acquireAsync(n);
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long n, Duration timeout) {
            Objects.requireNonNull(timeout, "timeout");
            RedisSemaphore target;
            try {
                target = forAcquire("acquireAsync(" + n + ", " + timeout + ")", n);
            } catch (RedisSemaphoreException | SemaphoreClosedException refused) {
                return CompletableFuture.failedFuture(refused);
            }
            return target.acquireAsync(n, timeout);
        }

        @Override
        public void awaitIdle() throws InterruptedException {
            open("awaitIdle()").awaitIdle();
        }

        @Override
        public CompletableFuture<Void> awaitIdleAsync() {
            KeyedSemaphore<String> d = delegate;
            return d != null ? d.get(key).awaitIdleAsync()
                    : CompletableFuture.failedFuture(notOpen("awaitIdleAsync()"));
        }

        @Override
        public long permits() {
            return open("permits()").permits();
        }

        /** The configured limit until the family is open (a key's ceiling is its limit), then the stored one. */
        @Override
        public long maxPermits() {
            KeyedSemaphore<String> d = delegate;
            return d == null ? permits : d.get(key).maxPermits();
        }

        @Override
        public long availablePermits() {
            return open("availablePermits()").availablePermits();
        }

        @Override
        public int queueLength() {
            return open("queueLength()").queueLength();
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
        public void close() {
            throw notHere("close()");
        }

        @Override
        public void close(Throwable cause) {
            throw notHere("close(" + cause + ")");
        }

        private UnsupportedOperationException notHere(String what) {
            return new UnsupportedOperationException(what + " on semaphore '" + viewName + "': every key has the"
                    + " limit of keyed semaphore '" + name + "', which is closed as a whole");
        }

        @Override
        public boolean isClosed() {
            return DeferredRedisKeyedSemaphore.this.isClosed();
        }

        @Override
        public RedisSemaphore partition(String partition) {
            Objects.requireNonNull(partition, "name");
            throw new IllegalArgumentException("semaphore '" + viewName + "' has no partition '" + partition + "';"
                    + " the keys of keyed semaphore '" + name + "' have no partitions");
        }

        @Override
        public Fairness fairness() {
            return Fairness.FIFO;
        }

        @Override
        public Duration lease() {
            return lease;
        }

        @Override
        public void addListener(SemaphoreListener listener) {
            Objects.requireNonNull(listener, "listener");
            throw new UnsupportedOperationException("semaphore '" + viewName + "' is a key of keyed semaphore '"
                    + name + "': its listeners are the family's, which see its events with it as the semaphore;"
                    + " register there");
        }

        @Override
        public boolean removeListener(SemaphoreListener listener) {
            Objects.requireNonNull(listener, "listener");
            return false;
        }

        @Override
        public String name() {
            return viewName;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof KeyView v && v.family() == DeferredRedisKeyedSemaphore.this && v.key.equals(key);
        }

        private DeferredRedisKeyedSemaphore family() {
            return DeferredRedisKeyedSemaphore.this;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(DeferredRedisKeyedSemaphore.this) * 31 + key.hashCode();
        }

        @Override
        public String toString() {
            KeyedSemaphore<String> d = delegate;
            return d != null ? d.get(key).toString() : "RedisSemaphore[" + viewName + ", not open: " + notOpenBecause
                    + "]";
        }
    }
}
