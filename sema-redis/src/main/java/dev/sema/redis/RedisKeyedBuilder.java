package dev.sema.redis;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Builds a {@link KeyedSemaphore} on Redis (API.md §11b); obtained from {@link RedisSemaphores#keyed(String)}.
 * Each setter checks its own argument at once, and a refused argument changes nothing.
 *
 * {@snippet :
 * KeyedSemaphore<String> exports = redis.keyed("exports")
 *         .permits(5)                           // each tenant's limit, across every process
 *         .maxKeys(10_000)                      // tenants live in this process at once, at most
 *         .expireWhenIdle(Duration.ofMinutes(10))
 *         .build();
 * try (Permit p = exports.get(tenantId).acquire()) {
 *     // ...
 * }
 * }
 *
 * <p>The semaphore of key {@code k} is the {@link RedisSemaphore} named {@code "<family>:<k>"}: every process
 * that builds the same family shares each key's limit, which Redis enforces as for any {@code RedisSemaphore}
 * (the stored limit wins, API.md §6). In this process a key's handle is opened on its first request (one round
 * trip to subscribe to its wake-ups and one to read or create it) and let go of as soon as it holds nothing and
 * has no request in flight, without closing the semaphore for anyone; in Redis an idle key disappears after
 * {@link #expireWhenIdle}. See {@link KeyedSemaphore} for the contract, with these differences:
 * <ul>
 *   <li>{@link KeyedSemaphore#maxKeys()} bounds the keys live <em>in this process</em>; {@code size()} counts
 *       them. Other processes have bounds of their own.
 *   <li>{@code get(key)} is a {@link RedisSemaphore} view named {@code "<family>:<key>"} whose permits are
 *       {@link RedisPermit}s (the key's fencing token and lease). Its queries ({@code permits()},
 *       {@code availablePermits()}, {@code queueLength()}) read Redis, opening the key's handle for the read if
 *       it is not live here. A key must be non-empty and contain no brace: {@code get} refuses it.
 *   <li>{@link KeyedSemaphore#close()} ends this process's use of the family only, as
 *       {@link RedisSemaphores#close()} does for a handle: this process's waiters fail with
 *       {@link dev.sema.SemaphoreClosedException}, its permits are given back in Redis, later requests fail;
 *       the keys' semaphores stay open for every other process.
 *   <li>A request for a key not live here first opens its handle: a timeout does not bound that (the command
 *       timeout does); an interrupt while another request opens it is answered at once.
 * </ul>
 */
public final class RedisKeyedBuilder {
    /** The idle expiry when the builder sets none: 10 minutes. */
    public static final Duration DEFAULT_IDLE_EXPIRY = Duration.ofMinutes(10);

    private final RedisSemaphores owner;
    private final String family;
    private long permits = -1;
    private Duration lease = RedisSemaphore.DEFAULT_LEASE;
    private int maxKeys = 100_000;
    private Duration expireWhenIdle = DEFAULT_IDLE_EXPIRY;
    private Semaphore parent;
    private int replicas;
    private Duration replicasTimeout = Duration.ZERO;
    private final List<SemaphoreListener> listeners = new ArrayList<>();

    RedisKeyedBuilder(RedisSemaphores owner, String family) {
        this.owner = owner;
        this.family = family;
    }

    /**
     * Sets every key's limit, with which a key's semaphore is created in Redis when it does not exist (the stored
     * limit wins when it does).
     *
     * @param permits {@code 0 <= permits <= MAX_PERMITS}
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public RedisKeyedBuilder permits(long permits) {
        this.permits = Checks.count("permits", permits);
        return this;
    }

    /**
     * Sets the lease of every key's grants (default {@link RedisSemaphore#DEFAULT_LEASE}).
     *
     * @param lease between {@link RedisSemaphore#MIN_LEASE} and {@link RedisSemaphore#MAX_LEASE}
     * @return this builder
     * @throws NullPointerException if {@code lease} is {@code null}
     * @throws IllegalArgumentException if out of range
     */
    public RedisKeyedBuilder lease(Duration lease) {
        Objects.requireNonNull(lease, "lease");
        if (lease.compareTo(RedisSemaphore.MIN_LEASE) < 0 || lease.compareTo(RedisSemaphore.MAX_LEASE) > 0) {
            throw new IllegalArgumentException("lease (" + lease + ") must be between " + RedisSemaphore.MIN_LEASE
                    + " and " + RedisSemaphore.MAX_LEASE);
        }
        this.lease = lease;
        return this;
    }

    /**
     * Sets the most keys that may be live in this process at once (default 100,000): each live key holds a
     * handle, with its wake-up subscription and renewals.
     *
     * @param maxKeys at least 1
     * @return this builder
     * @throws IllegalArgumentException if below 1
     */
    public RedisKeyedBuilder maxKeys(int maxKeys) {
        if (maxKeys < 1) {
            throw new IllegalArgumentException("maxKeys (" + maxKeys + ") must be at least 1");
        }
        this.maxKeys = maxKeys;
        return this;
    }

    /**
     * Sets how long a key's semaphore stays in Redis once nobody holds or waits on it (default
     * {@link #DEFAULT_IDLE_EXPIRY}), as {@link RedisSemaphore.Builder#expireWhenIdle} does; stored when the key's
     * semaphore is created.
     *
     * @param idle between {@link RedisSemaphore#MIN_IDLE_EXPIRY} and {@link RedisSemaphore#MAX_IDLE_EXPIRY}
     * @return this builder
     * @throws NullPointerException if {@code idle} is {@code null}
     * @throws IllegalArgumentException if out of range
     */
    public RedisKeyedBuilder expireWhenIdle(Duration idle) {
        Objects.requireNonNull(idle, "expireWhenIdle");
        if (idle.compareTo(RedisSemaphore.MIN_IDLE_EXPIRY) < 0 || idle.compareTo(RedisSemaphore.MAX_IDLE_EXPIRY) > 0) {
            throw new IllegalArgumentException("expireWhenIdle (" + idle + ") must be between "
                    + RedisSemaphore.MIN_IDLE_EXPIRY + " and " + RedisSemaphore.MAX_IDLE_EXPIRY);
        }
        this.expireWhenIdle = idle;
        return this;
    }

    /**
     * Acknowledges each key's grants only once {@code n} replicas have them, as
     * {@link RedisSemaphore.Builder#replicas} does for one semaphore (default: at once): a failover then cannot
     * lose a grant its holder was told of.
     * @param n how many replicas, at least 1
     * @param timeout how long to wait for them: positive, at most {@link RedisSemaphore#MAX_REPLICAS_TIMEOUT},
     *        and less than the connection's command timeout (checked by {@link #build()})
     * @return this builder
     * @throws NullPointerException if {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code n < 1} or {@code timeout} is out of range
     */
    public RedisKeyedBuilder replicas(int n, Duration timeout) {
        RedisSemaphore.Builder.checkReplicas(n, timeout);
        this.replicas = n;
        this.replicasTimeout = timeout;
        return this;
    }

    /**
     * Makes every key's permits also hold as many of {@code parent}'s (none by default), as
     * {@link KeyedSemaphore.Builder#parent} does: any semaphore, local or Redis.
     *
     * @param parent the parent semaphore
     * @return this builder
     * @throws NullPointerException if {@code parent} is {@code null}
     */
    public RedisKeyedBuilder parent(Semaphore parent) {
        this.parent = Objects.requireNonNull(parent, "parent");
        return this;
    }

    /**
     * Adds a listener of every key's events in this process, called with the key's view as the semaphore;
     * repeatable, in order.
     *
     * @param listener the listener
     * @return this builder
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    public RedisKeyedBuilder listener(SemaphoreListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
        return this;
    }

    /**
     * Builds the family; nothing is read from Redis until a key's first request.
     *
     * @return the family, with no key live
     * @throws IllegalStateException if no limit was set
     * @throws IllegalArgumentException if the {@code replicas} timeout is not less than the connection's command
     *         timeout
     * @throws dev.sema.SemaphoreClosedException if the {@link RedisSemaphores} is closed
     */
    public KeyedSemaphore<String> build() {
        if (permits < 0) {
            throw new IllegalStateException("keyed semaphore '" + family + "' needs each key's limit: permits(n)");
        }
        if (owner.isClosed()) {
            throw new dev.sema.SemaphoreClosedException("RedisSemaphores " + owner.clientId + " is closed: keyed"
                    + " semaphore '" + family + "' refused");
        }
        if (replicas > 0) {
            RedisSemaphore.Builder.checkReplicas(owner, replicas, replicasTimeout);
        }
        return new RedisKeyedSemaphore(owner, family, permits, lease, maxKeys, expireWhenIdle, replicas,
                replicasTimeout, parent, List.copyOf(listeners));
    }
}
