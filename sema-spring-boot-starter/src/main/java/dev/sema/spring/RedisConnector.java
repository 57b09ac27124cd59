package dev.sema.spring;

import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The starter's way to Redis: the application's {@link RedisSemaphores} bean, or one connected to
 * {@code sema.redis.uri} and owned here; and the {@code redis: true} semaphores and keyed families, opened in Redis
 * now when it can be reached, or else by a background thread that tries again with a growing pause (from
 * {@link #FIRST_PAUSE} to {@link #MAX_PAUSE}) until every one is open. Until then they refuse
 * ({@link DeferredRedisSemaphore}, {@link DeferredRedisKeyedSemaphore}) and the health contributor is DOWN. With {@code sema.redis.fail-fast: true}, a Redis that cannot be reached at startup
 * stops the start instead.
 *
 * <p>Once a semaphore is open, outages are the {@link RedisSemaphores} connection's business: it reconnects by
 * itself, and meanwhile every operation fails at once with {@link RedisSemaphoreException}.
 */
/* Implementation overview
 *
 * R1: `connection` goes from null to a connection once (under `this`) and never changes until close; a connection
 *     made here is closed by close() only.
 * R2: each semaphore in `pending` is opened exactly once: by the startup attempt or by the retry thread, whichever
 *     takes it out of `pending` (under `this`) with a successful build; a failed build puts it back.
 * R3: at most one retry thread runs; it ends when nothing is pending, or at close (interrupted, and it checks
 *     `closed` before opening anything).
 */
final class RedisConnector implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RedisConnector.class.getName());
    static final Duration FIRST_PAUSE = Duration.ofMillis(250);
    static final Duration MAX_PAUSE = Duration.ofSeconds(5);

    /** Redis cannot be reached at {@code sema.redis.uri}: no connection could be made. */
    static final class Unreachable extends RedisSemaphoreException {
        private static final long serialVersionUID = 1L;

        Unreachable(RedisSemaphoreException cause) {
            super(cause.getMessage(), cause);
        }
    }

    /**
     * What stands in for something kept in Redis until it is opened there: a semaphore's handle
     * ({@link DeferredRedisSemaphore}) or a keyed family's ({@link DeferredRedisKeyedSemaphore}).
     *
     * @param <T> what it becomes once opened
     */
    interface Deferred<T> {
        /** Its name: unique among everything the connector opens (a family and a semaphore never share one). */
        String name();

        /** What it is, for the log: {@code "Redis semaphore 'db'"}. */
        default String describe() {
            return "Redis semaphore '" + name() + "'";
        }

        /** Records why the last attempt to open it failed, for its refusals' messages. */
        void failedToOpen(String because);

        /** Makes {@code opened} what it is, once (R2). */
        void open(T opened);
    }

    /**
     * How something is built on a connection: its builder's options.
     *
     * @param <T> what is built
     * @param handle what stands in for it until then
     * @param build builds it on a connection; may throw {@link RedisSemaphoreException}
     */
    record Opening<T>(Deferred<T> handle, Function<RedisSemaphores, ? extends T> build) {
    }

    /** The application's own RedisSemaphores, or {@code null}. */
    private final RedisSemaphores borrowed;
    private final String uri;
    private final Function<String, RedisSemaphores> connect;
    private final boolean failFast;
    private RedisSemaphores connection;
    private boolean owned;
    private final Map<String, Opening<?>> pending = new LinkedHashMap<>();
    private Thread retrying;
    private boolean closed;
    /** Why the last attempt failed, for the semaphores queued behind it and for the log. */
    private String lastFailure = "Redis has not been reached yet";
    /** One attempt at a time, so that a semaphore is never built twice (R2). */
    private final Object attempts = new Object();

    /**
     * @param borrowed the application's own RedisSemaphores, or {@code null} for none
     * @param uri {@code sema.redis.uri}, or {@code null}
     * @param connect how a connection is made from {@code uri}
     * @param failFast whether a Redis unreachable at startup stops the start
     */
    RedisConnector(RedisSemaphores borrowed, String uri, Function<String, RedisSemaphores> connect,
            boolean failFast) {
        this.borrowed = borrowed;
        this.uri = uri;
        this.connect = connect;
        this.failFast = failFast;
    }

    /** {@code sema.redis.uri}, or {@code null}. */
    String uri() {
        return uri;
    }

    /** Whether there is any Redis to keep semaphores in: a bean, or a URI. */
    boolean configured() {
        return uri != null || borrowed != null;
    }

    /**
     * With {@code sema.redis.fail-fast}, connects now, so that a Redis that cannot be reached stops the start even
     * when no semaphore is kept in it yet.
     *
     * @throws Unreachable if it cannot be reached
     */
    void checkAtStartup() {
        if (failFast && uri != null && borrowed == null) {
            connection();
        }
    }

    /**
     * Opens {@code opening}'s semaphore now if Redis can be reached, else leaves it to the retry thread.
     *
     * @throws RedisSemaphoreException if it cannot be opened now and {@code sema.redis.fail-fast} is set
     */
    void open(Opening<?> opening) {
        synchronized (this) {
            pending.put(opening.handle().name(), opening);
            if (retrying != null) {
                // An earlier semaphore found Redis unreachable: one more attempt now would only make the start
                // wait a connect timeout more; the retry thread opens this one with the others.
                opening.handle().failedToOpen(lastFailure);
                return;
            }
        }
        try {
            attempt();
        } catch (RedisSemaphoreException e) {
            if (failFast) {
                synchronized (this) {
                    pending.remove(opening.handle().name());
                }
                throw e;
            }
            failed(e);
            LOG.log(System.Logger.Level.WARNING, () -> opening.handle().describe() + " is not open: "
                    + Settings.redacted(e.getMessage()) + ". It refuses every request until Redis is reached;"
                    + " trying again in the background (sema.redis.fail-fast: true stops the start instead)");
            retryInBackground();
        }
    }

    /** One attempt to connect and open everything pending (R2). */
    private void attempt() {
        synchronized (attempts) { // a platform thread's monitor: the startup thread or the retry thread
            attemptSerially();
        }
    }

    private void attemptSerially() {
        List<Opening<?>> todo;
        synchronized (this) {
            if (closed) {
                return;
            }
            todo = new ArrayList<>(pending.values());
        }
        RedisSemaphores c;
        try {
            c = connection();
        } catch (Unreachable e) {
            for (Opening<?> o : todo) {
                o.handle().failedToOpen(Settings.redacted(e.getMessage()));
            }
            throw e;
        }
        RedisSemaphoreException failed = null;
        for (Opening<?> o : todo) {
            try {
                openOn(c, o);
            } catch (RedisSemaphoreException e) {
                o.handle().failedToOpen(Settings.redacted(e.getMessage()));
                failed = failed == null ? e : failed;
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    /** Builds {@code o} on {@code c} and opens its handle, unless someone else did (R2) or the connector closed. */
    private <T> void openOn(RedisSemaphores c, Opening<T> o) {
        T opened = o.build().apply(c);
        boolean mine;
        synchronized (this) {
            mine = !closed && pending.remove(o.handle().name(), o);
        }
        if (mine) {
            o.handle().open(opened);
        }
    }

    /** The connection (R1), made now from the URI if there is none yet. */
    private RedisSemaphores connection() {
        if (borrowed != null) {
            return borrowed;
        }
        synchronized (this) {
            if (connection != null) {
                return connection;
            }
        }
        RedisSemaphores made;
        try {
            made = connect.apply(uri); // outside the lock: it may take the connect timeout
        } catch (RedisSemaphoreException e) {
            throw new Unreachable(e);
        }
        synchronized (this) {
            if (connection == null && !closed) {
                connection = made;
                owned = true;
                return made;
            }
        }
        made.close();
        synchronized (this) {
            if (connection == null) {
                throw new RedisSemaphoreException("the starter's Redis connection is closed", null);
            }
            return connection;
        }
    }

    private synchronized void retryInBackground() {
        if (retrying != null || closed) {
            return;
        }
        retrying = Thread.ofPlatform().daemon().name("sema-redis-connect").start(this::retryUntilOpen);
    }

    private void retryUntilOpen() {
        long pause = FIRST_PAUSE.toMillis();
        try {
            while (true) {
                Thread.sleep(pause);
                synchronized (this) {
                    if (closed || pending.isEmpty()) {
                        retrying = null;
                        return;
                    }
                }
                try {
                    attempt();
                    if (pending().isEmpty()) {
                        LOG.log(System.Logger.Level.INFO, "Redis reached: every Redis semaphore is open");
                    }
                } catch (RedisSemaphoreException e) {
                    failed(e);
                    pause = Math.min(pause * 2, MAX_PAUSE.toMillis());
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "opening the Redis semaphores failed; trying again", e);
                    pause = MAX_PAUSE.toMillis();
                }
            }
        } catch (InterruptedException e) {
            synchronized (this) {
                retrying = null;
            }
        }
    }

    /**
     * Keeps why the attempt failed; logs it when the reason changes (an outage, then Redis reached but a semaphore
     * refused, say a key of another type under its name), so that a refusal that lasts is explained in the log.
     */
    private void failed(RedisSemaphoreException e) {
        String why = Settings.redacted(e.getMessage());
        boolean again;
        synchronized (this) {
            if (why.equals(lastFailure)) {
                return;
            }
            lastFailure = why;
            again = retrying != null;
        }
        if (again) {
            LOG.log(System.Logger.Level.WARNING, () -> "Redis semaphores " + pending() + " are still not open: " + why
                    + "; trying again");
        }
    }

    /** The semaphores not open yet, by name. */
    synchronized List<String> pending() {
        return List.copyOf(pending.keySet());
    }

    /** Stops trying, and closes the connection made here: this process's permits go back, its waiters fail. */
    @Override
    public void close() {
        RedisSemaphores c;
        Thread t;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            c = owned ? connection : null;
            t = retrying;
        }
        if (t != null) {
            t.interrupt();
        }
        if (c != null) {
            c.close();
        }
    }

    @Override
    public synchronized String toString() {
        return "RedisConnector[" + (uri != null ? Settings.redacted(uri) : "the application's RedisSemaphores")
                + (connection != null || borrowed != null ? ", connected" : ", not connected")
                + (pending.isEmpty() ? "" : ", pending " + pending.keySet()) + "]";
    }
}
