package dev.sema.spring;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.internal.AbstractKeyView;
import dev.sema.internal.AbstractKeyedSemaphore;
import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;

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
 * F2: every listener added here hears every event of the family from the moment it is added: a forwarder of this
 *     handle's listeners (FamilyListeners) is added to the family before `delegate` is published (no request through
 *     this handle reaches the family unheard), and tells them of each event with this handle's view of the key.
 * F3: `closed` is set under `lock`; an open that finds it set closes the family at once, so that no request is
 *     served by a family opened after the registry closed (a request that finds it set and no delegate is refused
 *     as closed).
 *
 * What every keyed family keeps alike (the listeners, what a key's semaphore refuses) is AbstractKeyedSemaphore's and
 * AbstractKeyView's.
 *
 * field      | read          | written              | guard
 * delegate   | volatile      | once, volatile       | lock
 * closed     | volatile      | once, volatile       | lock (AbstractKeyedSemaphore's field)
 * listeners  | FamilyListeners (copy on write)
 */
final class DeferredRedisKeyedSemaphore extends AbstractKeyedSemaphore<Object, RedisPermit>
        implements RedisConnector.Deferred<KeyedSemaphore<String>> {
    private final long permits;
    private final Duration lease;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile KeyedSemaphore<String> delegate;
    /** Why it is not open yet, for the messages; replaced by every failed attempt. */
    private volatile String notOpenBecause = "Redis has not been reached yet";

    /**
     * @param name the family's name
     * @param permits each key's configured limit
     * @param maxKeys the most keys live in this process at once
     * @param lease each key's configured lease
     */
    DeferredRedisKeyedSemaphore(String name, long permits, int maxKeys, Duration lease) {
        super(name, maxKeys, null, List.of());
        this.permits = permits;
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
        return delegate != null ? null : "keyed semaphore '" + name() + "' is not open yet (" + notOpenBecause + ")";
    }

    @Override
    public String describe() {
        return "Redis keyed semaphore '" + name() + "'";
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
                throw new IllegalStateException("keyed semaphore '" + name() + "' is open already");
            }
            // F2: before any request can reach it through this handle; its views become this handle's
            opened.addListener(listeners.forwarder(this::as));
            delegate = opened;
            lateForClose = closed;
        } finally {
            lock.unlock();
        }
        if (lateForClose) {
            opened.close(); // F3
        }
    }

    /** This handle's view of the key whose Redis family's view is {@code s} ({@code "<family>:<key>"}). */
    private Semaphore as(Semaphore s) {
        String n = s.name();
        return n.startsWith(name() + ":") ? new KeyView(n.substring(name().length() + 1)) : s;
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
            throw new IllegalArgumentException("key '" + k + "' of keyed semaphore '" + name() + "' " + invalid
                    + ": a key of a family on Redis must be non-empty and contain no brace");
        }
        return new KeyView(k);
    }

    @Override
    public int size() {
        KeyedSemaphore<String> d = delegate;
        return d == null ? 0 : d.size();
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
    public String toString() {
        KeyedSemaphore<String> d = delegate;
        return d != null ? d.toString() : "RedisKeyedSemaphore[" + name() + ", not open: " + notOpenBecause + "]";
    }

    // ---------------------------------------------------------------- requests, for the views

    /** The Redis family's view of the key, for an acquire: a refusal, with its event, while there is none. */
    private RedisSemaphore forAcquire(AbstractKeyView<Object, RedisPermit> view, String what, long n) {
        KeyedSemaphore<String> d = delegate;
        if (d != null) {
            return (RedisSemaphore) d.get((String) view.key());
        }
        checkRequest(n);
        if (closed) {
            listeners.rejected(view, n, Rejection.CLOSED);
            throw new SemaphoreClosedException("semaphore '" + view.name() + "': " + what + " refused: keyed"
                    + " semaphore '" + name() + "' is closed in this process");
        }
        listeners.rejected(view, n, Rejection.UNAVAILABLE);
        throw notOpen(view, what);
    }

    /** The Redis family's view of the key, for anything else. */
    private RedisSemaphore open(AbstractKeyView<Object, RedisPermit> view, String what) {
        KeyedSemaphore<String> d = delegate;
        if (d == null) {
            throw notOpen(view, what);
        }
        return (RedisSemaphore) d.get((String) view.key());
    }

    private RedisSemaphoreException notOpen(Semaphore view, String what) {
        return new RedisSemaphoreException("semaphore '" + view.name() + "': " + what + " failed: keyed semaphore '"
                + name() + "' is not open yet (" + notOpenBecause + ")", null);
    }

    @Override
    protected RedisPermit acquire(AbstractKeyView<Object, RedisPermit> view, long n, Duration timeout,
            boolean interruptible) throws InterruptedException, TimeoutException {
        RedisSemaphore target = forAcquire(view, what(interruptible ? "acquire" : "acquireUninterruptibly", n,
                timeout), n);
        if (timeout != null) {
            return target.acquire(n, timeout);
        }
        return interruptible ? target.acquire(n) : target.acquireUninterruptibly(n);
    }

    @Override
    protected Optional<Permit> tryAcquire(AbstractKeyView<Object, RedisPermit> view, long n) {
        return forAcquire(view, what("tryAcquire", n, null), n).tryAcquire(n);
    }

    @Override
    protected RedisPermit drainPermits(AbstractKeyView<Object, RedisPermit> view) {
        return forAcquire(view, what("drainPermits", 0, null), 0).drainPermits();
    }

    @Override
    protected CompletableFuture<Permit> acquireAsync(AbstractKeyView<Object, RedisPermit> view, long n,
            Duration timeout) {
        RedisSemaphore target;
        try {
            target = forAcquire(view, what("acquireAsync", n, timeout), n);
        } catch (RedisSemaphoreException | SemaphoreClosedException refused) {
            return CompletableFuture.failedFuture(refused);
        }
        return timeout == null ? target.acquireAsync(n) : target.acquireAsync(n, timeout);
    }

    @Override
    protected void awaitIdle(AbstractKeyView<Object, RedisPermit> view) throws InterruptedException {
        open(view, "awaitIdle()").awaitIdle();
    }

    @Override
    protected CompletableFuture<Void> awaitIdleAsync(AbstractKeyView<Object, RedisPermit> view) {
        KeyedSemaphore<String> d = delegate;
        return d != null ? d.get((String) view.key()).awaitIdleAsync()
                : CompletableFuture.failedFuture(notOpen(view, "awaitIdleAsync()"));
    }

    // ---------------------------------------------------------------- one key

    /**
     * The semaphore of one key: the Redis family's view of it, found at each call (F1), or a refusal. What it refuses
     * and what makes two equal is AbstractKeyView's.
     */
    private final class KeyView extends AbstractKeyView<Object, RedisPermit> implements RedisSemaphore {
        private final String viewName;

        KeyView(String key) {
            super(DeferredRedisKeyedSemaphore.this, key);
            this.viewName = DeferredRedisKeyedSemaphore.this.name() + ":" + key;
        }

        private String keyName() {
            return (String) key();
        }

        @Override
        public long permits() {
            return open(this, "permits()").permits();
        }

        /** The configured limit until the family is open (a key's ceiling is its limit), then the stored one. */
        @Override
        public long maxPermits() {
            KeyedSemaphore<String> d = delegate;
            return d == null ? permits : d.get(keyName()).maxPermits();
        }

        @Override
        public long availablePermits() {
            return open(this, "availablePermits()").availablePermits();
        }

        @Override
        public int queueLength() {
            return open(this, "queueLength()").queueLength();
        }

        @Override
        public RedisSemaphore partition(String partition) {
            Objects.requireNonNull(partition, "name");
            throw new IllegalArgumentException("semaphore '" + viewName + "' has no partition '" + partition + "';"
                    + " the keys of keyed semaphore '" + DeferredRedisKeyedSemaphore.this.name() + "' have no"
                    + " partitions");
        }

        @Override
        public Duration lease() {
            return lease;
        }

        @Override
        public String name() {
            return viewName;
        }

        @Override
        public String toString() {
            KeyedSemaphore<String> d = delegate;
            return d != null ? d.get(keyName()).toString() : "RedisSemaphore[" + viewName + ", not open: "
                    + notOpenBecause + "]";
        }
    }
}
