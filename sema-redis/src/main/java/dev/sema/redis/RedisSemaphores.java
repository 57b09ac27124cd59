package dev.sema.redis;

import dev.sema.SemaphoreClosedException;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * This process's connection to the semaphores kept in one Redis: one command connection shared by every
 * semaphore (Lettuce multiplexes it), one pub/sub connection for wake-ups, one timer thread for lease
 * renewals and timeouts, and virtual threads to complete futures on.
 *
 * {@snippet :
 * try (RedisSemaphores redis = RedisSemaphores.connect("redis://127.0.0.1:6379")) {
 *     RedisSemaphore jobs = redis.semaphore("jobs").permits(4).lease(Duration.ofSeconds(10)).build();
 *     jobs.withPermits(1, () -> runJob());
 * }
 * }
 *
 * <h2>Timeouts and Redis outages</h2>
 * Every command waits at most the command timeout: the URI's {@code timeout} parameter, but at most
 * 10 seconds (and 10 seconds for a borrowed client). A client made by {@link #connect(String)} rejects
 * commands at once while it is disconnected, so an acquire while Redis is down fails at once with
 * {@link RedisSemaphoreException} instead of waiting; the connection itself reconnects in the
 * background. Lettuce re-sends a command that was in flight when a connection dropped: every script is
 * idempotent per request id, so a re-sent acquire, release or renewal changes nothing twice.
 *
 * <h2>Closing</h2>
 * {@link #close()} ends this process's participation only (see {@link RedisSemaphore}).
 */
public final class RedisSemaphores implements AutoCloseable {

    /** The longest any command is waited for. */
    static final Duration MAX_COMMAND_TIMEOUT = Duration.ofSeconds(10);

    private static final System.Logger LOG = System.getLogger(RedisSemaphores.class.getName());

    private final RedisClient client;
    private final boolean ownsClient;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisAsyncCommands<String, String> commands;
    private final StatefulRedisPubSubConnection<String, String> pubsub;
    private final ConcurrentHashMap<String, LettuceSemaphore> byChannel = new ConcurrentHashMap<>();
    private final Set<LettuceSemaphore> semaphores = ConcurrentHashMap.newKeySet();
    private final AtomicLong counter = new AtomicLong();
    private final AtomicLong handles = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Identifies this process's participation; part of every request id and wake-up channel. */
    final String clientId = UUID.randomUUID().toString().replace("-", "");
    final Duration commandTimeout;
    final ScheduledThreadPoolExecutor timer;
    final ExecutorService callbacks;

    private RedisSemaphores(RedisClient client, boolean ownsClient, Duration commandTimeout) {
        this.client = client;
        this.ownsClient = ownsClient;
        this.commandTimeout = commandTimeout;
        StatefulRedisConnection<String, String> c = null;
        StatefulRedisPubSubConnection<String, String> p = null;
        try {
            c = client.connect(StringCodec.UTF8);
            p = client.connectPubSub(StringCodec.UTF8);
        } catch (RuntimeException e) {
            if (c != null) {
                c.closeAsync();
            }
            throw new RedisSemaphoreException("cannot connect to Redis: " + e.getMessage(), e);
        }
        this.connection = c;
        this.commands = c.async();
        this.pubsub = p;
        p.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                LettuceSemaphore s = byChannel.get(channel);
                if (s != null) {
                    execute(() -> s.onMessage(message));
                }
            }
        });
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "sema-redis-timer");
            t.setDaemon(true);
            return t;
        });
        this.timer.setRemoveOnCancelPolicy(true);
        this.callbacks = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("sema-redis-", 0).factory());
    }

    /**
     * Connects to the Redis at {@code redisUri} with a client of its own, which {@link #close()} shuts
     * down.
     *
     * @param redisUri a Redis URI, e.g. {@code "redis://127.0.0.1:6379"} or
     *        {@code "redis://127.0.0.1:6379?timeout=2s"}
     * @return the connection
     * @throws NullPointerException if {@code redisUri} is {@code null}
     * @throws IllegalArgumentException if {@code redisUri} is not a valid Redis URI
     * @throws RedisSemaphoreException if Redis cannot be reached
     */
    public static RedisSemaphores connect(String redisUri) {
        Objects.requireNonNull(redisUri, "redisUri");
        RedisURI uri = RedisURI.create(redisUri);
        Duration timeout = min(uri.getTimeout(), MAX_COMMAND_TIMEOUT);
        RedisClient client = RedisClient.create(uri);
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(timeout))
                .build());
        try {
            return new RedisSemaphores(client, true, timeout);
        } catch (RuntimeException e) {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            throw e;
        }
    }

    /**
     * Uses an existing client, which stays the caller's: {@link #close()} closes only the two
     * connections made here, never the client. The client's options apply (for instance whether
     * commands are queued while disconnected); every command is still waited for at most 10 seconds.
     *
     * @param client a client whose default URI points at the Redis to use
     * @return the connection
     * @throws NullPointerException if {@code client} is {@code null}
     * @throws RedisSemaphoreException if Redis cannot be reached
     */
    public static RedisSemaphores using(RedisClient client) {
        Objects.requireNonNull(client, "client");
        return new RedisSemaphores(client, false, MAX_COMMAND_TIMEOUT);
    }

    /**
     * Starts building a handle on the semaphore {@code name}; every handle of that name, in any process,
     * shares one semaphore. The keys are {@code sem:{name}:*}, all in one cluster hash slot.
     *
     * @param name a non-blank name without braces
     * @return a builder
     * @throws NullPointerException if {@code name} is {@code null}
     * @throws IllegalArgumentException if {@code name} is blank or contains a brace
     */
    public RedisSemaphore.Builder semaphore(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
            throw new IllegalArgumentException("semaphore name '" + name
                    + "' must be non-blank and must not contain braces (they delimit the cluster hash tag)");
        }
        return new RedisSemaphore.Builder(this, name);
    }

    /**
     * Ends this process's participation: fails this process's waiters with
     * {@link SemaphoreClosedException}, releases the permits it still holds (best effort: the leases of
     * those that cannot be released end by themselves), stops renewals and closes the connections, and
     * the client if it was made by {@link #connect(String)}. The semaphores stay open for every other
     * process. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        for (LettuceSemaphore s : semaphores) {
            try {
                s.leave();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "leaving " + s.name() + " failed", e);
            }
        }
        timer.shutdownNow();
        CompletableFuture.allOf(pubsub.closeAsync(), connection.closeAsync()).join();
        if (ownsClient) {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        callbacks.shutdown();
    }

    @Override
    public String toString() {
        return "RedisSemaphores[client=" + clientId + ", semaphores=" + semaphores.size()
                + (closed.get() ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------- for the semaphores

    boolean isClosed() {
        return closed.get();
    }

    /** For tests: the wake-up connection, to make messages get lost. */
    StatefulRedisPubSubConnection<String, String> pubsub() {
        return pubsub;
    }

    RedisSemaphore open(String name, long permits, long ceiling, Duration lease, boolean create) {
        if (closed.get()) {
            throw new SemaphoreClosedException("RedisSemaphores " + clientId + " is closed: semaphore '" + name
                    + "' refused");
        }
        String handleId = clientId + "." + handles.incrementAndGet();
        LettuceSemaphore s = new LettuceSemaphore(this, name, handleId, permits, ceiling, lease, create);
        byChannel.put(s.channel(), s);
        semaphores.add(s);
        try {
            await(pubsub.async().subscribe(s.channel()).toCompletableFuture(), "subscribing to " + s.channel());
            s.start();
        } catch (RuntimeException e) {
            byChannel.remove(s.channel());
            semaphores.remove(s);
            s.leave();
            throw e;
        }
        return s;
    }

    /** A new request or grant id, unique across processes. */
    String nextId() {
        return clientId + ":" + Long.toString(counter.incrementAndGet(), 36);
    }

    /**
     * Runs {@code script} (EVALSHA, EVAL on NOSCRIPT); the future completes on a virtual thread, within
     * the command timeout.
     */
    CompletableFuture<List<Object>> eval(Script script, String[] keys, String[] args) {
        CompletableFuture<List<Object>> result = new CompletableFuture<>();
        try {
            RedisFuture<List<Object>> first = commands.evalsha(script.sha(), ScriptOutputType.MULTI, keys, args);
            first.whenComplete((value, failure) -> {
                if (failure != null && unwrap(failure) instanceof RedisNoScriptException) {
                    try {
                        RedisFuture<List<Object>> second = commands.eval(script.source(), ScriptOutputType.MULTI,
                                keys, args);
                        second.whenComplete((v, f) -> deliver(result, v, f));
                    } catch (RuntimeException e) {
                        deliver(result, null, e);
                    }
                } else {
                    deliver(result, value, failure);
                }
            });
        } catch (RuntimeException e) {
            deliver(result, null, e);
        }
        failAfter(result, commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(200),
                () -> new TimeoutException("no reply within " + commandTimeout));
        return result;
    }

    /**
     * Fails {@code future} after {@code nanos} unless it completes first; the failure is delivered on a
     * virtual thread, so that continuations never run on the timer thread.
     */
    void failAfter(CompletableFuture<?> future, long nanos, Supplier<? extends Throwable> failure) {
        if (future.isDone()) {
            return;
        }
        try {
            ScheduledFuture<?> task = timer.schedule(() -> execute(() -> future.completeExceptionally(failure.get())),
                    nanos, TimeUnit.NANOSECONDS);
            future.whenComplete((v, f) -> task.cancel(false));
        } catch (RejectedExecutionException closing) {
            // leaving: the connection is closed, so every command fails at once anyway
        }
    }

    private void deliver(CompletableFuture<List<Object>> result, List<Object> value, Throwable failure) {
        execute(() -> {
            if (failure != null) {
                result.completeExceptionally(unwrap(failure));
            } else {
                result.complete(value);
            }
        });
    }

    void execute(Runnable task) {
        try {
            callbacks.execute(task);
        } catch (RejectedExecutionException afterClose) {
            task.run();
        }
    }

    /** Waits for a Redis reply without being interruptible, within the command timeout. */
    <T> T await(CompletableFuture<T> future, String what) {
        boolean interrupted = false;
        try {
            for (;;) {
                try {
                    return future.get(commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(500),
                            TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw asRuntime(what, e.getCause());
                } catch (TimeoutException e) {
                    throw asRuntime(what, e);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    RuntimeException asRuntime(String what, Throwable failure) {
        Throwable c = unwrap(failure);
        if (c instanceof RedisSemaphoreException || c instanceof SemaphoreClosedException
                || c instanceof IllegalArgumentException) {
            return (RuntimeException) c;
        }
        if (c instanceof TimeoutException) {
            return new RedisSemaphoreException(what + ": no reply from Redis within " + commandTimeout, c);
        }
        if (closed.get()) {
            return new SemaphoreClosedException(what + " refused: RedisSemaphores " + clientId + " is closed");
        }
        return new RedisSemaphoreException(what + ": Redis request failed: " + c.getMessage(), c);
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static Duration min(Duration a, Duration b) {
        return a == null || a.compareTo(b) > 0 ? b : a;
    }
}
