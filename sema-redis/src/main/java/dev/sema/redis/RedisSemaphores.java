package dev.sema.redis;

import dev.sema.KeyedSemaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.internal.Timeouts;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisChannelWriter;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.RedisClusterURIUtil;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.pubsub.RedisClusterPubSubAdapter;
import io.lettuce.core.cluster.pubsub.StatefulRedisClusterPubSubConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.CommandExpiryWriter;
import io.lettuce.core.protocol.DefaultEndpoint;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.net.SocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.WeakHashMap;
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
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * This process's connection to the semaphores kept in one Redis, standalone or Redis Cluster: one command
 * connection shared by every semaphore (Lettuce multiplexes it), one pub/sub connection for wake-ups, one
 * timer thread for lease renewals and timeouts, and virtual threads to complete futures on.
 *
 * {@snippet :
 * try (RedisSemaphores redis = RedisSemaphores.connect("redis://127.0.0.1:6379")) {
 *     RedisSemaphore jobs = redis.semaphore("jobs").permits(4).lease(Duration.ofSeconds(10)).build();
 *     jobs.withPermits(1, () -> runJob());
 * }
 * }
 *
 * <h2>Redis Cluster</h2>
 * {@link #connectCluster(String)} (or {@link #using(RedisClusterClient)}) works with Redis Cluster, through
 * Lettuce's cluster client. Every key of a semaphore has the hash tag {@code {name}}, so one semaphore
 * lives in one hash slot, on one master, and each operation is still one script on that master;
 * different semaphores spread over the masters. The scripts are loaded on each master by the first
 * operation that lands there (EVALSHA, then EVAL on NOSCRIPT, which Lettuce routes to the same master).
 * Wake-up messages use sharded pub/sub ({@code SSUBSCRIBE}/{@code SPUBLISH}) when every master runs Redis
 * 7 or newer at connect time, so that a message stays on its semaphore's shard instead of being broadcast
 * over the cluster bus; otherwise plain {@code PUBLISH}, which Redis Cluster delivers on every node. A
 * handle whose shard subscription ends (its slot moved to another master, or its master failed)
 * subscribes again; meanwhile its waiters learn of their grants from their heartbeats, within a second.
 * A semaphore built with {@code replicas(n, timeout)} cannot send WAIT on the cluster connection, which
 * would send it to any node: its grants are confirmed, and its renewals run, on the connection to its slot's
 * master (R1, {@link #onMaster}).
 *
 * <h2>Timeouts and Redis outages</h2>
 * Every command waits at most the command timeout: the URI's {@code timeout} parameter, but at most
 * 10 seconds (a borrowed client's own timeout, at most 10 seconds). A client made by {@link #connect(String)}
 * or {@link #connectCluster(String)} rejects commands at once while it is disconnected, so an acquire while
 * Redis is down fails at once with {@link RedisSemaphoreException} instead of waiting; the connection
 * itself reconnects in the background, trying again at most a second after a failed attempt (a
 * borrowed client keeps its own reconnect delay: Lettuce's default grows to 30 s). Lettuce re-sends a command that was in flight when a connection
 * dropped: every script is idempotent per request id, so a re-sent acquire, release or renewal changes
 * nothing twice. A connection that brings no reply at all for a command timeout while commands wait for
 * one (Redis stalled, or a half-open connection whose peer is gone without a word, which TCP alone may not
 * notice for many minutes) is closed and opened again (W1; standalone and Sentinel connections, not those
 * of a cluster client, which Lettuce manages per node).
 *
 * <h2>Closing</h2>
 * {@link #close()} ends this process's participation only (see {@link RedisSemaphore}).
 */
public final class RedisSemaphores implements AutoCloseable {

    /** The longest any command is waited for. */
    static final Duration MAX_COMMAND_TIMEOUT = Duration.ofSeconds(10);

    /**
     * The longest wait between two reconnect attempts of a client made here: the delay doubles from 1 ms up to
     * this. Lettuce's default grows to 30 s, so after an outage of some seconds (a primary killed, its replica
     * promoted) the client came back up to as long again after Redis did, every waiter, renewal and release of
     * the process stalled meanwhile; the permits of its lapsed leases stayed counted until some process ran a
     * script on them again.
     */
    static final Duration MAX_RECONNECT_DELAY = Duration.ofSeconds(1);

    private static final System.Logger LOG = System.getLogger(RedisSemaphores.class.getName());

    private final AbstractRedisClient client;
    private final boolean ownsClient;
    private final StatefulConnection<String, String> connection;
    private final RedisScriptingAsyncCommands<String, String> commands;
    private final StatefulRedisPubSubConnection<String, String> pubsub;
    /** Whether wake-ups use sharded pub/sub (Redis Cluster 7+): then the handle ids end in 's' (see common.lua). */
    private final boolean sharded;
    private final ConcurrentHashMap<String, LettuceSemaphore> byChannel = new ConcurrentHashMap<>();
    private final Set<LettuceSemaphore> semaphores = ConcurrentHashMap.newKeySet();
    private final AtomicLong counter = new AtomicLong();
    private final AtomicLong handles = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    /**
     * R2: the connection events of each connection a WAIT was sent on (see {@link #links}), by identity; weak,
     * as a cluster client may replace its node connections.
     */
    private final Map<Object, AtomicLong> links = new WeakHashMap<>();
    /** R1: guards {@link #slotsReading}; private, as this object is the caller's to lock if it likes. */
    private final Object slotsLock = new Object();
    /** R1: the reading of the cluster's slot map in flight, if any (guarded by slotsLock). */
    private CompletableFuture<Void> slotsReading;
    /** For tests: runs just before each WAIT is sent. */
    volatile Runnable beforeWait;
    /** For tests: runs just before a grant is renewed for its WAIT (LettuceSemaphore L7). */
    volatile Runnable beforeTouch;

    /** Identifies this process's participation; part of every request id and wake-up channel. */
    final String clientId = UUID.randomUUID().toString().replace("-", "");
    final Duration commandTimeout;
    final ScheduledThreadPoolExecutor timer;
    final ExecutorService callbacks;
    /** W1: when the command connection last brought a reply, and when it was last closed for want of one. */
    private volatile long lastReply = System.nanoTime();
    private final AtomicLong lastReset = new AtomicLong(System.nanoTime());
    /** For tests: ignore the server ending a shard subscription, as if it were lost without notice. */
    volatile boolean ignoreShardUnsubscribe;

    private RedisSemaphores(AbstractRedisClient client, boolean ownsClient, Duration commandTimeout,
            StatefulConnection<String, String> connection, RedisScriptingAsyncCommands<String, String> commands,
            StatefulRedisPubSubConnection<String, String> pubsub, boolean sharded) {
        this.client = client;
        this.ownsClient = ownsClient;
        this.commandTimeout = commandTimeout;
        this.connection = connection;
        this.commands = commands;
        this.pubsub = pubsub;
        this.sharded = sharded;
        if (pubsub instanceof StatefulRedisClusterPubSubConnection<String, String> cluster) {
            // Messages of every node, those of shard subscriptions included, reach the cluster listeners.
            cluster.addListener(new RedisClusterPubSubAdapter<>() {
                @Override
                public void message(RedisClusterNode node, String channel, String message) {
                    onMessage(channel, message);
                }

                @Override
                public void smessage(RedisClusterNode node, String channel, String message) {
                    onMessage(channel, message);
                }

                @Override
                public void sunsubscribed(RedisClusterNode node, String channel, long count) {
                    if (!ignoreShardUnsubscribe) {
                        subscribeAgain(channel); // the server ended it: the slot moved to another master
                    }
                }
            });
        } else {
            pubsub.addListener(new RedisPubSubAdapter<>() {
                @Override
                public void message(String channel, String message) {
                    onMessage(channel, message);
                }
            });
        }
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "sema-redis-timer");
            t.setDaemon(true);
            return t;
        });
        this.timer.setRemoveOnCancelPolicy(true);
        this.callbacks = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("sema-redis-", 0).factory());
        // Scripts are loaded now and after every reconnect (a restarted Redis has none), so that no first
        // call of a kind depends on Redis's script cache: a CANCEL or RELEASE whose reply is lost still runs.
        client.addListener(reconnected);
        loadScripts();
    }

    private final RedisConnectionStateListener reconnected = new RedisConnectionStateListener() {
        @Override
        public void onRedisConnected(RedisChannelHandler<?, ?> channel, SocketAddress address) {
            changed(channel); // R2
            if (!closed.get()) {
                loadScripts();
            }
        }

        @Override
        public void onRedisDisconnected(RedisChannelHandler<?, ?> connection) {
            changed(connection); // R2
        }
    };

    private void changed(RedisChannelHandler<?, ?> connection) {
        AtomicLong c;
        synchronized (links) {
            c = links.get(connection);
        }
        if (c != null) {
            c.incrementAndGet();
        }
    }

    /**
     * R2: how many times {@code node} (the command connection when null) connected or disconnected since it was
     * first asked about; see {@link #waitForReplicas}.
     */
    long links(StatefulRedisConnection<String, String> node) {
        Object on = node != null ? node : connection;
        synchronized (links) {
            return links.computeIfAbsent(on, k -> new AtomicLong()).get();
        }
    }

    /** Loads every script (SCRIPT LOAD, on every master of a cluster); a failure leaves EVAL as the fallback. */
    void loadScripts() {
        for (Script script : Script.values()) {
            try {
                commands.scriptLoad(script.source()).whenComplete((sha, e) -> {
                    if (e != null) {
                        LOG.log(System.Logger.Level.DEBUG, () -> "SCRIPT LOAD " + script + " failed; EVAL is the"
                                + " fallback", e);
                    }
                });
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "SCRIPT LOAD " + script + " failed", e);
            }
        }
    }

    private static RedisSemaphores standalone(RedisClient client, boolean ownsClient, Duration commandTimeout) {
        StatefulRedisConnection<String, String> c = null;
        try {
            c = client.connect(StringCodec.UTF8);
            StatefulRedisPubSubConnection<String, String> p = client.connectPubSub(StringCodec.UTF8);
            return new RedisSemaphores(client, ownsClient, commandTimeout, c, c.async(), p, false);
        } catch (RuntimeException e) {
            if (c != null) {
                c.closeAsync();
            }
            throw new RedisSemaphoreException("cannot connect to Redis: " + e.getMessage(), e);
        }
    }

    private static RedisSemaphores cluster(RedisClusterClient client, boolean ownsClient, Duration commandTimeout) {
        StatefulRedisClusterConnection<String, String> c = null;
        try {
            c = client.connect(StringCodec.UTF8);
            boolean sharded = everyMasterHasShardedPubSub(c, commandTimeout);
            StatefulRedisClusterPubSubConnection<String, String> p = client.connectPubSub(StringCodec.UTF8);
            return new RedisSemaphores(client, ownsClient, commandTimeout, c, c.async(), p, sharded);
        } catch (RuntimeException e) {
            if (c != null) {
                c.closeAsync();
            }
            throw new RedisSemaphoreException("cannot connect to Redis Cluster: " + e.getMessage(), e);
        }
    }

    /** Whether every master of the cluster runs Redis 7 or newer (SSUBSCRIBE, SPUBLISH). */
    private static boolean everyMasterHasShardedPubSub(StatefulRedisClusterConnection<String, String> c,
            Duration timeout) {
        try {
            boolean any = false;
            for (RedisClusterNode node : c.getPartitions()) {
                if (!node.getRole().isUpstream()) {
                    continue;
                }
                String info = c.getConnectionAsync(node.getNodeId())
                        .thenCompose(n -> n.async().info("server").toCompletableFuture())
                        .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                if (majorVersion(info) < 7) {
                    return false;
                }
                any = true;
            }
            return any;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot read the Redis version of every cluster master; wake-ups"
                    + " use PUBLISH: " + e);
            return false;
        }
    }

    /** The major version in an {@code INFO server} reply, or 0 if it is not there. */
    static int majorVersion(String info) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                String v = line.substring("redis_version:".length()).trim();
                int dot = v.indexOf('.');
                try {
                    return Integer.parseInt(dot < 0 ? v : v.substring(0, dot));
                } catch (NumberFormatException e) {
                    return 0;
                }
            }
        }
        return 0;
    }

    private void onMessage(String channel, String message) {
        LettuceSemaphore s = byChannel.get(channel);
        if (s != null) {
            execute(() -> s.onMessage(message));
        }
    }

    /**
     * Subscribes again to a handle's shard channel, while the handle is open: when the server ended the
     * subscription, and when a heartbeat found a grant whose message did not arrive (the subscription may
     * be on a node that failed). SSUBSCRIBE goes to the slot's current master; subscribing where the
     * channel is already subscribed changes nothing. Retried every second while it fails.
     */
    void subscribeAgain(String channel) {
        if (!sharded || closed.get() || !byChannel.containsKey(channel)) {
            return;
        }
        try {
            pubsub.async().ssubscribe(channel).whenComplete((v, e) -> {
                if (e != null) {
                    LOG.log(System.Logger.Level.DEBUG, () -> "subscribing again to " + channel + " failed; retrying"
                            + " (meanwhile waiters learn of grants from their heartbeats)", e);
                    try {
                        timer.schedule(() -> subscribeAgain(channel), 1, TimeUnit.SECONDS);
                    } catch (RejectedExecutionException closing) {
                        // closed meanwhile
                    }
                }
            });
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "subscribing again to " + channel + " failed", e);
        }
    }

    /**
     * Connects to the (standalone) Redis at {@code redisUri} with a client of its own, which
     * {@link #close()} shuts down: a Redis URI, or a Sentinel one, with which the client asks the sentinels
     * for the primary and follows a failover (see {@link RedisSemaphore.Builder#replicas} for what a
     * failover can cost). For Redis Cluster, use {@link #connectCluster(String)}.
     *
     * @param redisUri a Redis URI, e.g. {@code "redis://127.0.0.1:6379"} or
     *        {@code "redis://127.0.0.1:6379?timeout=2s"}, or Lettuce's Sentinel form
     *        {@code "redis-sentinel://host:port[,host:port]/[db]#masterName"}
     * @return the connection
     * @throws NullPointerException if {@code redisUri} is {@code null}
     * @throws IllegalArgumentException if {@code redisUri} is not a valid Redis URI
     * @throws RedisSemaphoreException if Redis cannot be reached
     */
    public static RedisSemaphores connect(String redisUri) {
        Objects.requireNonNull(redisUri, "redisUri");
        RedisURI uri = RedisURI.create(redisUri);
        Duration timeout = min(uri.getTimeout(), MAX_COMMAND_TIMEOUT);
        RedisClient client = RedisClient.create(ownResources(), uri);
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(timeout))
                .build());
        try {
            return standalone(client, true, timeout);
        } catch (RuntimeException e) {
            shutdown(client);
            throw e;
        }
    }

    /**
     * Connects to the Redis Cluster that the nodes in {@code redisUri} belong to, with a cluster client of
     * its own, which {@link #close()} shuts down. The client follows redirections and refreshes its view
     * of the cluster when a slot moves or a node fails.
     *
     * @param redisUri one or more nodes of the cluster, comma-separated, e.g.
     *        {@code "redis://10.0.0.1:7000,10.0.0.2:7000"} or {@code "redis://10.0.0.1:7000?timeout=2s"}
     * @return the connection
     * @throws NullPointerException if {@code redisUri} is {@code null}
     * @throws IllegalArgumentException if {@code redisUri} is not a valid Redis URI
     * @throws RedisSemaphoreException if the cluster cannot be reached
     */
    public static RedisSemaphores connectCluster(String redisUri) {
        Objects.requireNonNull(redisUri, "redisUri");
        List<RedisURI> seeds = RedisClusterURIUtil.toRedisURIs(URI.create(redisUri));
        Duration timeout = MAX_COMMAND_TIMEOUT;
        for (RedisURI seed : seeds) {
            timeout = min(seed.getTimeout(), timeout);
        }
        RedisClusterClient client = RedisClusterClient.create(ownResources(), seeds);
        client.setOptions(ClusterClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(timeout))
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .enablePeriodicRefresh(Duration.ofMinutes(1))
                        .build())
                .build());
        try {
            return cluster(client, true, timeout);
        } catch (RuntimeException e) {
            shutdown(client);
            throw e;
        }
    }

    /** The resources of a client made here: Lettuce's defaults, but reconnect attempts at most 1 s apart. */
    private static ClientResources ownResources() {
        return ClientResources.builder()
                .reconnectDelay(() -> Delay.exponential(Duration.ofMillis(1), MAX_RECONNECT_DELAY, 2,
                        TimeUnit.MILLISECONDS))
                .build();
    }

    /**
     * Shuts down a client made here, then its resources, which it does not own (they were given to it), and
     * waits for them as the client's own shutdown would have.
     */
    private static void shutdown(AbstractRedisClient client) {
        ClientResources resources = client.getResources();
        try {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        } finally {
            try {
                // A Netty future, which this module does not read: waited for as the JDK future it also is.
                Object stopping = resources.shutdown(0, 2, TimeUnit.SECONDS);
                ((java.util.concurrent.Future<?>) stopping).get(3, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                LOG.log(System.Logger.Level.DEBUG, "the client's resources did not shut down in time", e);
            }
        }
    }

    /**
     * Uses an existing client, which stays the caller's: {@link #close()} closes only the two
     * connections made here, never the client. The client's options apply (for instance whether
     * commands are queued while disconnected). The command timeout is the client's: the fixed timeout of its
     * {@code TimeoutOptions} when it sets one, else its default timeout (a client made from a URI takes the
     * URI's {@code timeout}), at most 10 seconds. So is its reconnect delay (Lettuce's default grows to 30 s).
     *
     * @param client a client whose default URI points at the Redis to use
     * @return the connection
     * @throws NullPointerException if {@code client} is {@code null}
     * @throws RedisSemaphoreException if Redis cannot be reached
     */
    public static RedisSemaphores using(RedisClient client) {
        Objects.requireNonNull(client, "client");
        return standalone(client, false, commandTimeoutOf(client));
    }

    /**
     * Uses an existing Redis Cluster client, which stays the caller's: {@link #close()} closes only the
     * two connections made here, never the client. The client's options apply (topology refresh,
     * behaviour while disconnected). The command timeout is the client's: the fixed timeout of its
     * {@code TimeoutOptions} when it sets one, else its default timeout (that of its first URI), at most 10
     * seconds. So is its reconnect delay (Lettuce's default grows to 30 s).
     *
     * @param client a cluster client whose URIs point at nodes of the cluster to use
     * @return the connection
     * @throws NullPointerException if {@code client} is {@code null}
     * @throws RedisSemaphoreException if the cluster cannot be reached
     */
    public static RedisSemaphores using(RedisClusterClient client) {
        Objects.requireNonNull(client, "client");
        return cluster(client, false, commandTimeoutOf(client));
    }

    /**
     * The command timeout of a borrowed client, which this connection's own deadlines must agree with (a
     * reply is not waited for longer than the client waits, and a {@code replicas} timeout must be shorter):
     * the fixed timeout of its {@link TimeoutOptions} when it sets one, else its default timeout (a client
     * made from a URI takes the URI's {@code timeout}), at most {@link #MAX_COMMAND_TIMEOUT}.
     */
    @SuppressWarnings("deprecation") // getDefaultTimeout: the timeout the client's connections use, as no other API tells
    static Duration commandTimeoutOf(AbstractRedisClient client) {
        Duration timeout = client.getDefaultTimeout();
        TimeoutOptions options = client.getOptions() == null ? null : client.getOptions().getTimeoutOptions();
        if (options != null && options.isTimeoutCommands() && options.getSource() != null) {
            try {
                long t = options.getSource().getTimeout(null);
                if (t > 0) {
                    timeout = Duration.ofNanos(options.getSource().getTimeUnit().toNanos(t));
                }
            } catch (RuntimeException perCommand) {
                // a source that needs the command to decide: the default timeout stands
            }
        }
        return timeout == null || timeout.isZero() || timeout.isNegative() ? MAX_COMMAND_TIMEOUT
                : min(timeout, MAX_COMMAND_TIMEOUT);
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
     * Starts building a {@link KeyedSemaphore} whose keys are Redis semaphores shared by every process (API.md
     * §11b): the semaphore of key {@code k} is the {@link RedisSemaphore} named {@code family + ":" + k}, whose
     * keys {@code sem:{family:k}:*} spread over a cluster's hash slots, key by key. See {@link RedisKeyedBuilder}.
     *
     * @param family the family's name: non-blank, without braces
     * @return a builder
     * @throws NullPointerException if {@code family} is {@code null}
     * @throws IllegalArgumentException if {@code family} is blank or contains a brace
     */
    public RedisKeyedBuilder keyed(String family) {
        Objects.requireNonNull(family, "family");
        if (family.isBlank() || family.indexOf('{') >= 0 || family.indexOf('}') >= 0) {
            throw new IllegalArgumentException("keyed semaphore family '" + family
                    + "' must be non-blank and must not contain braces (they delimit the cluster hash tag)");
        }
        return new RedisKeyedBuilder(this, family);
    }

    /**
     * Lets go of a handle without closing its semaphore for anyone else: it leaves (its waiters fail, its grants
     * are released, its renewals stop; a keyed family drops a key's handle only once it has neither) and stops
     * hearing wake-ups. Idempotent.
     */
    void drop(LettuceSemaphore s) {
        if (!semaphores.remove(s)) {
            return;
        }
        byChannel.remove(s.channel());
        if (!closed.get()) {
            try {
                RedisFuture<?> done = sharded ? pubsub.async().sunsubscribe(s.channel())
                        : pubsub.async().unsubscribe(s.channel());
                done.whenComplete((v, e) -> {
                    if (e != null) {
                        LOG.log(System.Logger.Level.DEBUG, () -> "unsubscribing from " + s.channel() + " failed", e);
                    }
                });
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> "unsubscribing from " + s.channel() + " failed", e);
            }
        }
        s.leave();
    }

    /** How many handles this process has open, for tests. */
    int handlesForTests() {
        return semaphores.size();
    }

    /**
     * Ends this process's participation: fails this process's waiters with
     * {@link SemaphoreClosedException}, releases the permits it still holds and sends again the releases whose
     * reply was lost (best effort, waiting at most one command timeout: the leases of those that cannot be
     * released end by themselves), stops renewals and closes the connections, and
     * the client if it was made by {@link #connect(String)} or {@link #connectCluster(String)}. The
     * semaphores stay open for every other process. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<CompletableFuture<Void>> sent = new ArrayList<>();
        for (LettuceSemaphore s : semaphores) {
            try {
                sent.add(s.leaving(null));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "leaving " + s.name() + " failed", e);
            }
        }
        // One command timeout for every handle's last releases, not one each: with Redis down, the leases end them.
        try {
            CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new))
                    .get(commandTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.DEBUG, "some releases failed on closing; their leases will end them", e);
        }
        timer.shutdownNow();
        client.removeListener(reconnected);
        CompletableFuture.allOf(pubsub.closeAsync(), connection.closeAsync()).join();
        if (ownsClient) {
            shutdown(client);
        }
        callbacks.shutdown();
    }

    /** The client, for tests. */
    AbstractRedisClient client() {
        return client;
    }

    @Override
    public String toString() {
        return "RedisSemaphores[client=" + clientId + (client instanceof RedisClusterClient ? ", cluster" : "")
                + (sharded ? ", sharded pub/sub" : "") + ", semaphores=" + semaphores.size()
                + (closed.get() ? ", closed" : "") + "]";
    }

    // ---------------------------------------------------------------- for the semaphores

    /**
     * Tells whether {@link #close()} was called: this process no longer takes part.
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return closed.get();
    }

    /** For tests: the wake-up connection, to make messages get lost. */
    StatefulRedisPubSubConnection<String, String> pubsub() {
        return pubsub;
    }

    /** Whether wake-ups use sharded pub/sub. */
    boolean sharded() {
        return sharded;
    }

    RedisSemaphore open(String name, LettuceSemaphore.Options options) {
        if (closed.get()) {
            throw new SemaphoreClosedException("RedisSemaphores " + clientId + " is closed: semaphore '" + name
                    + "' refused");
        }
        String handleId = clientId + "." + handles.incrementAndGet() + (sharded ? "s" : "");
        LettuceSemaphore s = new LettuceSemaphore(this, name, handleId, options);
        byChannel.put(s.channel(), s);
        semaphores.add(s);
        try {
            RedisFuture<Void> subscribed = sharded ? pubsub.async().ssubscribe(s.channel())
                    : pubsub.async().subscribe(s.channel());
            await(subscribed.toCompletableFuture(), "subscribing to " + s.channel());
            s.start();
        } catch (RuntimeException e) {
            byChannel.remove(s.channel());
            semaphores.remove(s);
            s.leave();
            throw e;
        }
        return s;
    }

    /** The counter part of a request or grant id (see LettuceSemaphore.nextId), unique in this process. */
    String nextCount() {
        return Long.toString(counter.incrementAndGet(), 36);
    }

    /**
     * Runs {@code script} (EVALSHA, EVAL on NOSCRIPT); the future completes on a virtual thread, within
     * the command timeout, or with {@code direct} on the I/O thread that read the reply, with no timeout of
     * its own: only for a caller that waits for it with a timeout (see Protocol.forBlockingCallers).
     */
    CompletableFuture<List<Object>> eval(Script script, String[] keys, String[] args, boolean direct) {
        return eval(script, keys, args, direct, null);
    }

    /**
     * Runs {@code script} as {@link #eval(Script, String[], String[], boolean)} does, on {@code node} when it is
     * not null: one master's connection of a cluster (see {@link #onMaster}), where a MOVED or ASK reply is
     * not followed but fails the call (the script did not run).
     */
    CompletableFuture<List<Object>> eval(Script script, String[] keys, String[] args, boolean direct,
            StatefulRedisConnection<String, String> node) {
        RedisScriptingAsyncCommands<String, String> commands = node == null ? this.commands : node.async();
        CompletableFuture<List<Object>> result = new CompletableFuture<>();
        long sent = System.nanoTime();
        try {
            RedisFuture<List<Object>> first = commands.evalsha(script.sha(), ScriptOutputType.MULTI, keys, args);
            first.whenComplete((value, failure) -> {
                if (failure != null && unwrap(failure) instanceof RedisNoScriptException) {
                    replied();
                    try {
                        RedisFuture<List<Object>> second = commands.eval(script.source(), ScriptOutputType.MULTI,
                                keys, args);
                        second.whenComplete((v, f) -> deliver(result, v, f, direct, sent));
                    } catch (RuntimeException e) {
                        deliver(result, null, e, direct, sent);
                    }
                } else {
                    deliver(result, value, failure, direct, sent);
                }
            });
        } catch (RuntimeException e) {
            deliver(result, null, e, direct, sent);
        }
        if (!direct) {
            failAfter(result, commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(200), () -> {
                noReply(sent);
                return new TimeoutException("no reply within " + commandTimeout);
            });
        }
        return result;
    }

    /** W1: a reply came back on the command connection. */
    private void replied() {
        lastReply = System.nanoTime();
    }

    /**
     * W1: a command sent at {@code sent} got no reply within the command timeout. If nothing at all came back
     * on the connection since then, the connection is stalled or half-open (its peer gone without a word):
     * it is closed, and Lettuce connects again. At most once per command timeout.
     */
    private void noReply(long sent) {
        long now = System.nanoTime();
        long last = lastReset.get();
        if (lastReply - sent >= 0 || now - last < commandTimeout.toNanos() || closed.get()
                || !lastReset.compareAndSet(last, now)) {
            return;
        }
        if (connection instanceof RedisChannelHandler<?, ?> handler) {
            RedisChannelWriter writer = handler.getChannelWriter();
            while (writer instanceof CommandExpiryWriter expiry) {
                writer = expiry.getDelegate();
            }
            if (writer instanceof DefaultEndpoint endpoint) {
                LOG.log(System.Logger.Level.WARNING, "no reply from Redis for " + commandTimeout + " while commands"
                        + " waited: the connection is closed and opened again (stalled, or half-open)");
                endpoint.disconnect();
            }
        }
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
            Timeouts.failAfter(future, nanos, failure, timer, this::execute);
        } catch (RejectedExecutionException closing) {
            // leaving: the connection is closed, so every command fails at once anyway
        }
    }

    /** Whether this is a Redis Cluster connection: scripts that WAIT must follow run through {@link #onMaster}. */
    boolean isCluster() {
        return connection instanceof StatefulRedisClusterConnection;
    }

    /**
     * R1 (Redis Cluster): runs {@code work} with the connection to the master that the client's slot map gives for
     * {@code key}'s slot. A script sent there runs on that master or not at all: a MOVED or ASK reply fails it,
     * as the connection does not follow it, so a WAIT sent after it on the same connection covers its writes (a
     * WAIT on the cluster connection would go to any node, where this client's writes may be none). When the slot
     * map names no master, its master cannot be reached, or {@code work} fails with MOVED or ASK (the slot moved,
     * a failover), the slot map is read again (one reading shared by the callers of the moment) and {@code work}
     * runs once more, on the master it names then. The result completes on a virtual thread.
     */
    <T> CompletableFuture<T> onMaster(String key, Function<StatefulRedisConnection<String, String>,
            CompletableFuture<T>> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        onMaster(key, work, true, result);
        return result;
    }

    private <T> void onMaster(String key, Function<StatefulRedisConnection<String, String>, CompletableFuture<T>> work,
            boolean first, CompletableFuture<T> result) {
        master(key).whenComplete((node, unreachable) -> {
            if (unreachable != null) {
                if (first) {
                    rereadSlots().whenComplete((x, e) -> onMaster(key, work, false, result));
                } else {
                    execute(() -> result.completeExceptionally(asRuntime("reaching the master of " + key,
                            unreachable)));
                }
                return;
            }
            CompletableFuture<T> done;
            try {
                done = work.apply(node);
            } catch (RuntimeException e) {
                done = CompletableFuture.failedFuture(e);
            }
            done.whenComplete((value, failure) -> {
                if (failure != null && first && redirected(failure)) {
                    rereadSlots().whenComplete((x, e) -> onMaster(key, work, false, result));
                    return;
                }
                execute(() -> {
                    if (failure != null) {
                        result.completeExceptionally(unwrap(failure));
                    } else {
                        result.complete(value);
                    }
                });
            });
        });
    }

    /** Reads the cluster's slot map again, or joins the reading in flight. */
    private CompletableFuture<Void> rereadSlots() {
        synchronized (slotsLock) {
            CompletableFuture<Void> r = slotsReading;
            if (r == null || r.isDone()) {
                try {
                    r = ((RedisClusterClient) client).refreshPartitionsAsync().toCompletableFuture();
                } catch (RuntimeException e) {
                    r = CompletableFuture.failedFuture(e);
                }
                slotsReading = r;
            }
            return r;
        }
    }

    /**
     * The connection to the master of {@code key}'s slot in the slot map (Lettuce's own, for that host and port);
     * never throws: a failure fails the future.
     */
    private CompletableFuture<StatefulRedisConnection<String, String>> master(String key) {
        try {
            StatefulRedisClusterConnection<String, String> cluster =
                    (StatefulRedisClusterConnection<String, String>) connection;
            int slot = SlotHash.getSlot(key);
            RedisClusterNode master = cluster.getPartitions().getMasterBySlot(slot);
            if (master == null) {
                return CompletableFuture.failedFuture(new RedisSemaphoreException("no master serves slot " + slot
                        + " of " + key + " in the cluster's slot map", null));
            }
            RedisURI uri = master.getUri();
            return cluster.getConnectionAsync(uri.getHost(), uri.getPort());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Whether a command was refused with MOVED or ASK: it did not run. */
    static boolean redirected(Throwable failure) {
        Throwable c = unwrap(failure);
        String m = c instanceof RedisCommandExecutionException ? c.getMessage() : null;
        return m != null && (m.startsWith("MOVED ") || m.startsWith("ASK "));
    }

    /**
     * WAIT: how many replicas have every write made so far on {@code node} (the command connection when null),
     * waiting up to {@code timeoutMillis} for {@code replicas} of them; completes on a virtual thread.
     *
     * <p>R2: WAIT counts the writes of the socket it arrives on, and a socket that Lettuce opened again after
     * the write (a dropped connection, the command re-sent or buffered) may have made none of them (from Redis
     * 7.2 on, only a command that replicated something moves a socket's WAIT offset): it would answer at once.
     * And a node connection that was closed meanwhile hands what it buffered to the cluster connection, which
     * sends a WAIT to any node. So the answer counts only if the connection neither dropped nor connected since
     * {@code links} ({@link #links} read before the write was sent) and is still open; otherwise the WAIT fails.
     */
    CompletableFuture<Long> waitForReplicas(StatefulRedisConnection<String, String> node, int replicas,
            long timeoutMillis, long links) {
        CompletableFuture<Long> result = new CompletableFuture<>();
        try {
            Runnable hook = beforeWait;
            if (hook != null) {
                hook.run();
            }
            @SuppressWarnings("unchecked")
            StatefulRedisConnection<String, String> on = node != null ? node
                    : (StatefulRedisConnection<String, String>) connection;
            on.async().waitForReplication(replicas, timeoutMillis)
                    .whenComplete((n, failure) -> execute(() -> {
                        if (failure != null) {
                            result.completeExceptionally(unwrap(failure));
                        } else if (links(node) != links || !on.isOpen()) {
                            result.completeExceptionally(new RedisSemaphoreException("a connection to Redis dropped,"
                                    + " reconnected or closed between the write and its WAIT, which then cannot tell how"
                                    + " many replicas have it", null));
                        } else {
                            result.complete(n);
                        }
                    }));
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return result;
    }

    private void deliver(CompletableFuture<List<Object>> result, List<Object> value, Throwable failure,
            boolean direct, long sent) {
        if (failure == null) {
            replied();
        } else if (unwrap(failure) instanceof RedisCommandTimeoutException) {
            noReply(sent);
        }
        Runnable complete = () -> {
            if (failure != null) {
                result.completeExceptionally(unwrap(failure));
            } else {
                result.complete(value);
            }
        };
        if (direct) {
            complete.run();
        } else {
            execute(complete);
        }
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
