package dev.sema.redis;

import dev.sema.Fairness;
import dev.sema.Semaphore;
import dev.sema.internal.Checks;
import dev.sema.internal.PartitionSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeoutException;

/**
 * A {@link Semaphore} whose state lives in Redis and is shared by every process that builds the same
 * name: the limit, the ceiling, the permits held, the FIFO queue and whether it is closed. Obtain one
 * from {@link RedisSemaphores#semaphore(String)}.
 *
 * {@snippet :
 * try (RedisSemaphores redis = RedisSemaphores.connect("redis://127.0.0.1:6379")) {
 *     RedisSemaphore api = redis.semaphore("partner-api").permits(10).build();
 *     try (Permit p = api.acquire()) {
 *         // at most 10 of these run at once, across every process
 *     }
 * }
 * }
 *
 * <p>The contract is {@link Semaphore}'s, across processes, with the differences listed here.
 *
 * <h2>Fairness</h2>
 * Always {@link Fairness#FIFO}, across processes: requests are served strictly in the order Redis
 * received them; the head is served as soon as it fits and nobody overtakes it. A request whose
 * process stopped renewing it (crashed, or lost Redis for longer than the waiter time-to-live, the
 * lease but at most 10 s) is removed, and a waiter whose entry was lost (a restart without
 * persistence) queues again, at the back.
 *
 * <h2>State</h2>
 * The builder's {@code permits} and {@code maxPermits} only create a semaphore that does not exist yet;
 * once it exists, the values stored in Redis win, and {@link #permits()}, {@link #availablePermits()},
 * {@link #queueLength()} and {@link #isClosed()} each read them with one round trip (which also ends
 * expired leases, so the counts include permits that came back that way). {@link #maxPermits()} is fixed
 * once the semaphore exists: the handle learns it when it is built and answers without a round trip.
 * If the semaphore's keys disappear (a restart without persistence, a deleted key), the next operation
 * creates it again from the builder's values, open, with nothing held (unless the builder said
 * {@link Builder#createIfMissing(boolean) createIfMissing(false)}, in which case operations throw
 * {@link RedisSemaphoreException}); holders of lost grants learn it through
 * {@link RedisPermit#leaseLost()}. {@code toString()} never reads Redis: it shows the counts of the last read,
 * with how long ago that was.
 *
 * <h2>Partitions</h2>
 * A semaphore built with {@link Builder#partition} has the partitions of API.md §11a, with the local engine's
 * rules, kept by Redis for the whole fleet: guaranteed shares first, then priorities, inside the one limit, which
 * all partitions of all processes together never exceed. {@link #partition(String)} returns a view, itself a
 * {@code RedisSemaphore} named {@code "parent/partition"}: its acquires queue in the partition's own FIFO queue
 * in Redis, its {@code availablePermits()} is what a request of the partition could take now and its
 * {@code queueLength()} its own queue (one round trip each, as for the parent); its permits, leases and fencing
 * tokens are the semaphore's, renewed with the handle's, and a permit goes back to its own partition whatever is
 * done with it (a split, a partial release; a merge takes only a permit of the same partition of the same
 * handle). Resizing and closing belong to the parent; closing it closes every partition, for every process. The
 * partitions are stored when the semaphore is created and the stored ones win, as the limit does (see
 * {@link Builder#partition}). The handle's own acquires are requests of no partition, served last. The handle's
 * listeners see a partition's requests with the view as the semaphore.
 *
 * <h2>Typed permits</h2>
 * The blocking acquires ({@link #acquire()}, {@link #acquire(long)}, {@link #acquire(long, Duration)},
 * {@link #acquireUninterruptibly(long)}) and {@link #drainPermits()} return {@link RedisPermit}, so the fencing
 * token needs no cast. {@code tryAcquire} and {@code acquireAsync} still return {@code Optional<Permit>} and
 * {@code CompletableFuture<Permit>}: Java's generics are invariant, so {@code Optional<RedisPermit>} cannot
 * override {@code Optional<Permit>}; their permits are {@code RedisPermit}s all the same
 * ({@code tryAcquire().map(RedisPermit.class::cast)}, {@code thenApply(RedisPermit.class::cast)}).
 *
 * <h2>Round trips</h2>
 * An uncontended acquire is one round trip to Redis, a release is one, and so is every other operation
 * (a resize, a query, a {@code Permit} split or merge): none waits for permits, but each waits for its
 * reply, at most the command timeout (see {@link RedisSemaphores}). In particular, a request of 0 permits
 * takes a round trip (to learn whether the semaphore is closed). Once a handle knows the semaphore is
 * closed (it closed it, or a reply or message said so), its acquires fail at once, without a round trip,
 * and an {@code acquireAsync} returns a future already failed.
 * {@link #queueLength()} counts the requests queued in Redis, including those of a crashed process until
 * their time-to-live ends. {@link dev.sema.Permit#merge(dev.sema.Permit)} accepts only permits of the same
 * handle: a permit of another handle, even on the same name, is refused as belonging to another semaphore.
 *
 * <h2>Leases</h2>
 * Every grant has a lease, {@link #lease()}, judged by the Redis server's clock only: the process
 * renews it while the permit is open, and a crashed holder's permits come back when it ends. See
 * {@link RedisPermit}.
 *
 * <h2>Late grants</h2>
 * This process judges, with {@code System.nanoTime()}, when a lease could have ended in Redis: the lease,
 * less a tenth, after the request that set it was sent. A grant that reaches the process after that
 * instant (a wake-up message or a reply held up by a network partition, a stalled process, a slow
 * {@link Builder#replicas WAIT}) is never handed over as it is, since Redis may already have given its
 * permits to another process:
 * <ul>
 *   <li>A queued acquire asks Redis again under the same request id: if Redis still holds the grant, it
 *       renews the lease and the {@code Permit} is handed over with a fresh one; if Redis ended it, the
 *       request queues again, at the back, still bound by its timeout. The caller only sees a longer wait.
 *   <li>A {@code tryAcquire}, or an acquire with a timeout of zero, confirms the same way once; if the
 *       confirmation comes back late too, the grant is given back and the call fails with
 *       {@link RedisSemaphoreException}.
 *   <li>A grant whose lease could have ended while it waited for replicas is given back, and the acquire
 *       fails with {@link RedisSemaphoreException}.
 * </ul>
 *
 * <h2>Cancellation</h2>
 * As in {@link Semaphore}: a timed-out, interrupted or cancelled request is withdrawn in Redis; a grant
 * that raced with the withdrawal is released by Redis in the same step, so no permit is lost. If Redis
 * cannot be reached to withdraw it, the request is removed when its liveness runs out (and a grant that
 * nobody claims, when its lease ends).
 *
 * <h2>Interruption</h2>
 * As in {@link Semaphore}. The other operations (release, resize, queries) each wait for one reply from
 * Redis, at most the command timeout, and are not interruptible.
 *
 * <h2>Closing</h2>
 * {@link #close()} closes the semaphore in Redis, for every process: the queued acquires of every
 * process fail with {@link dev.sema.SemaphoreClosedException} (they learn it from a message, or from
 * their next renewal at the latest), and later acquires fail too. {@link RedisSemaphores#close()} only
 * ends this process's participation: its own waiters fail, its permits are released, and
 * {@link #isClosed()} reports {@code true} in this process only. {@link #close(Throwable)} closes it the same
 * way; the cause is this handle's own (a {@code Throwable} does not travel through Redis): the
 * {@code SemaphoreClosedException}s of this handle's waiters and later acquires carry it, those of other
 * processes and handles carry none.
 *
 * <h2>Listeners</h2>
 * A {@link dev.sema.SemaphoreListener} sees this process's own requests and give-backs, and the limit
 * changes and the close made through this handle (a {@code forget()} included); other processes' are
 * theirs. A request that fails because Redis could not be reached is reported as
 * {@link dev.sema.Rejection#UNAVAILABLE}. A request whose first reply granted it reports no wait; one that
 * queued reports the time from sending it.
 *
 * <h2>Errors</h2>
 * If Redis cannot be reached, or does not answer within the command timeout, an operation throws (or
 * its future fails with) {@link RedisSemaphoreException}; it never waits for Redis to come back.
 * {@link dev.sema.Permit#close()} never throws.
 *
 * <h2>Lost replies</h2>
 * A command whose reply does not come back in time (Redis stalled, the connection dropped) may still
 * run in Redis later, or not at all. The withdrawal of a timed-out, interrupted or cancelled request, and
 * the release of a closed {@code Permit}, are therefore sent again at every heartbeat (at least once a
 * second) until Redis answers; both are idempotent, so running twice changes nothing. Their permits are
 * back within about a heartbeat of Redis answering again, not when the lease ends. Renewals are sent
 * again at every heartbeat anyway. The scripts are loaded when the client connects and after every
 * reconnect, so a command that Redis runs late does not depend on its script cache. A release of part of
 * a {@code Permit}, a split, a merge or a forget whose reply is lost throws {@link RedisSemaphoreException};
 * if Redis ran it after all, the next renewal finds the grant gone and reports it through
 * {@link RedisPermit#leaseLost()}, and the lease returns what Redis still holds under it.
 *
 * <h2>Memory consistency effects</h2>
 * Actions in a thread before it releases permits happen-before the actions that follow a successful
 * acquire of those permits in the same process. Across processes, Redis orders the release before the
 * grant; what the processes write elsewhere is ordered only by that resource (see fencing tokens in
 * {@link RedisPermit}).
 *
 * <h2>Wake-ups</h2>
 * A release hands the permits to the waiters that fit inside Redis and sends one message to each
 * process that was granted; a lost message is made good by the waiter's next renewal (within a second,
 * or a third of the waiter time-to-live). Futures are completed on virtual threads, never on the
 * client's I/O threads.
 */
public interface RedisSemaphore extends Semaphore {

    /** The lease used when the builder sets none: 30 seconds, renewed every 10. */
    Duration DEFAULT_LEASE = Duration.ofSeconds(30);

    /** The shortest lease a builder accepts: 100 ms. */
    Duration MIN_LEASE = Duration.ofMillis(100);

    /** The longest lease a builder accepts: 1 day. */
    Duration MAX_LEASE = Duration.ofDays(1);

    /** The shortest idle expiry a builder accepts: 1 second. */
    Duration MIN_IDLE_EXPIRY = Duration.ofSeconds(1);

    /** The longest idle expiry a builder accepts: 365 days. */
    Duration MAX_IDLE_EXPIRY = Duration.ofDays(365);

    /** The longest wait for replicas a builder accepts: 5 seconds. */
    Duration MAX_REPLICAS_TIMEOUT = Duration.ofSeconds(5);

    /**
     * Returns the lease of the grants made through this object.
     *
     * @return the lease duration
     */
    Duration lease();

    /**
     * As {@link Semaphore#acquire()}; the permit is a {@link RedisPermit}, with its fencing token.
     *
     * @return the permit
     * @throws InterruptedException if interrupted on entry or while waiting
     * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed, or this process's
     *         {@link RedisSemaphores} is closed
     * @throws RedisSemaphoreException if Redis cannot be reached or does not answer in time
     * @throws IllegalArgumentException if the ceiling is 0
     */
    @Override
    default RedisPermit acquire() throws InterruptedException {
        return acquire(1);
    }

    /**
     * As {@link Semaphore#acquire(long)}; the permit is a {@link RedisPermit}.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @return a permit holding {@code permits}
     * @throws InterruptedException if interrupted on entry or while waiting
     * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed, or this process's
     *         {@link RedisSemaphores} is closed
     * @throws RedisSemaphoreException if Redis cannot be reached or does not answer in time
     * @throws IllegalArgumentException if the request is out of range
     */
    @Override
    RedisPermit acquire(long permits) throws InterruptedException;

    /**
     * As {@link Semaphore#acquire(long, Duration)}; the permit is a {@link RedisPermit}.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @param timeout how long to wait; zero or less only tries once
     * @return a permit holding {@code permits}
     * @throws InterruptedException if interrupted on entry or while waiting
     * @throws TimeoutException if the permits could not be had in time
     * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed, or this process's
     *         {@link RedisSemaphores} is closed
     * @throws RedisSemaphoreException if Redis cannot be reached or does not answer in time
     * @throws IllegalArgumentException if the request is out of range
     * @throws NullPointerException if {@code timeout} is {@code null}
     */
    @Override
    RedisPermit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException;

    /**
     * As {@link Semaphore#acquireUninterruptibly(long)}; the permit is a {@link RedisPermit}. The request
     * keeps its place in the queue in Redis through any interrupt.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @return a permit holding {@code permits}
     * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed, or this process's
     *         {@link RedisSemaphores} is closed
     * @throws RedisSemaphoreException if Redis cannot be reached or does not answer in time
     * @throws IllegalArgumentException if the request is out of range
     */
    @Override
    RedisPermit acquireUninterruptibly(long permits);

    /**
     * As {@link Semaphore#acquireUninterruptibly()}; the permit is a {@link RedisPermit}.
     *
     * @return the permit
     * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed, or this process's
     *         {@link RedisSemaphores} is closed
     * @throws RedisSemaphoreException if Redis cannot be reached or does not answer in time
     * @throws IllegalArgumentException if the ceiling is 0
     */
    @Override
    default RedisPermit acquireUninterruptibly() {
        return acquireUninterruptibly(1);
    }

    /**
     * As {@link Semaphore#drainPermits()}, in one round trip: Redis takes every permit available at that
     * instant, across the fleet, as one grant with one lease and one fencing token.
     *
     * @return a permit holding what was available, empty when nothing was
     * @throws dev.sema.SemaphoreClosedException if the semaphore is closed, or this process's
     *         {@link RedisSemaphores} is closed
     * @throws RedisSemaphoreException if Redis cannot be reached or does not answer in time
     */
    @Override
    RedisPermit drainPermits();

    /**
     * As {@link Semaphore#partition(String)}: a view of one of the partitions stored in Redis (see
     * {@link Builder#partition}), itself a {@code RedisSemaphore} named {@code "parent/partition"}, with this
     * handle's lease, connection and renewals; its permits are {@link RedisPermit}s with fencing tokens of the
     * one semaphore.
     *
     * @param name a partition of the semaphore as stored in Redis
     * @return the view
     * @throws IllegalArgumentException if the semaphore has no partition of that name, naming those it has
     * @throws NullPointerException if {@code name} is {@code null}
     */
    @Override
    RedisSemaphore partition(String name);

    /**
     * Builds a {@link RedisSemaphore} handle; obtained from {@link RedisSemaphores#semaphore(String)}.
     * Each setter checks its own argument at once.
     */
    final class Builder {
        private final RedisSemaphores owner;
        private final String name;
        private long permits;
        private long maxPermits = -1;
        private Duration lease = DEFAULT_LEASE;
        private boolean createIfMissing = true;
        private Duration expireWhenIdle = Duration.ZERO;
        private int replicas;
        private Duration replicasTimeout = Duration.ZERO;
        private final List<String> partitionNames = new ArrayList<>();
        private final List<Double> partitionShares = new ArrayList<>();

        Builder(RedisSemaphores owner, String name) {
            this.owner = owner;
            this.name = name;
        }

        /**
         * Sets the limit to create the semaphore with if it does not exist yet (default 0).
         *
         * @param permits {@code 0 <= permits <= MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder permits(long permits) {
            this.permits = Checks.count("permits", permits);
            return this;
        }

        /**
         * Sets the ceiling to create the semaphore with if it does not exist yet (default: the limit).
         *
         * @param maxPermits {@code 0 <= maxPermits <= MAX_PERMITS}, and at least the limit
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder maxPermits(long maxPermits) {
            this.maxPermits = Checks.count("maxPermits", maxPermits);
            return this;
        }

        /**
         * Sets the lease of the grants made through the handle (default {@link #DEFAULT_LEASE}).
         *
         * @param lease between {@link #MIN_LEASE} and {@link #MAX_LEASE}
         * @return this builder
         * @throws NullPointerException if {@code lease} is {@code null}
         * @throws IllegalArgumentException if out of range
         */
        public Builder lease(Duration lease) {
            Objects.requireNonNull(lease, "lease");
            if (lease.compareTo(MIN_LEASE) < 0 || lease.compareTo(MAX_LEASE) > 0) {
                throw new IllegalArgumentException("lease (" + lease + ") must be between " + MIN_LEASE + " and "
                        + MAX_LEASE);
            }
            this.lease = lease;
            return this;
        }

        /**
         * Makes the semaphore, when this builder creates it, disappear from Redis once nobody has held or
         * waited on it for {@code idle} (default: never). For per-tenant or per-key semaphores, which would
         * otherwise stay in Redis for good after their last use.
         *
         * <p>Precisely: when an operation on the semaphore ends, every one of its keys is set to expire
         * {@code idle} after the last lease or waiter deadline still ahead (so a held or awaited semaphore
         * lives on while its leases are renewed, and one whose holders all died goes {@code idle} after
         * their leases end). What disappears with it is everything it stored: a limit changed since
         * creation ({@code setPermits}, {@code addPermits}, {@code reducePermits}, {@link dev.sema.Permit#forget()},
         * an {@link dev.sema.AdaptiveLimit}) and a {@code close()}. The next operation or builder finds it
         * missing and creates it afresh from its builder's values (or, with {@code createIfMissing(false)},
         * fails); fencing tokens keep increasing across that, as they are floored by Redis's clock. Handles
         * still open work on the new semaphore (except that one that saw the old one closed keeps refusing). Like {@code permits} and {@code maxPermits}, this is
         * stored when the semaphore is created: a builder for an existing semaphore does not change it. It
         * costs each operation four more commands inside its script (no more round trips).
         *
         * @param idle between {@link #MIN_IDLE_EXPIRY} and {@link #MAX_IDLE_EXPIRY}
         * @return this builder
         * @throws NullPointerException if {@code idle} is {@code null}
         * @throws IllegalArgumentException if out of range
         */
        public Builder expireWhenIdle(Duration idle) {
            Objects.requireNonNull(idle, "expireWhenIdle");
            if (idle.compareTo(MIN_IDLE_EXPIRY) < 0 || idle.compareTo(MAX_IDLE_EXPIRY) > 0) {
                throw new IllegalArgumentException("expireWhenIdle (" + idle + ") must be between " + MIN_IDLE_EXPIRY
                        + " and " + MAX_IDLE_EXPIRY);
            }
            this.expireWhenIdle = idle;
            return this;
        }

        /**
         * Acknowledges a grant only once {@code n} replicas have it (default: at once, as Redis replicates
         * asynchronously). Without it, a failover can lose a grant the old primary acknowledged but had not
         * yet replicated: the promoted replica then counts those permits as free and may grant them again
         * while their first holder still works (fencing tokens stay increasing, so a resource that checks
         * them refuses the older holder). With it, every grant made through this handle is followed by
         * {@code WAIT n timeout} on its connection, after renewing the grant there (WAIT covers the writes of
         * the socket it arrives on only, and the grant may have been made by another process's release, or
         * before a reconnect: a WAIT after a reconnect counts for nothing), and a grant that
         * does not reach {@code n} replicas within {@code timeout} is given back and the acquire fails with
         * {@link RedisSemaphoreException}. Renewals wait alike: a renewal that does not reach {@code n}
         * replicas in time leaves the permits' lease where it was, so a holder never believes in a lease that
         * a promoted replica does not know of ({@code leaseLost()} completes when the last renewal that
         * reached them runs out). The price: two more round trips per grant and one per renewal, plus the
         * replication delay, and while WAIT is pending the commands that share its connection wait behind it:
         * those of every handle of the same {@link RedisSemaphores} (on Redis Cluster, every command of the
         * process to that master). Releases are not waited for (a lost release only delays the permits'
         * return to the end of their lease). On Redis Cluster, where WAIT answers for the node it reaches only,
         * the grant is renewed on the connection to its slot's master and the WAIT follows it there, and
         * renewals run there too; a grant that meets a slot in migration (ASK) fails and is given back.
         *
         * <p>{@code n} replicas protect a grant against a failover that promotes one of the replicas that
         * have it. Sentinel promotes the replica with the most data when a primary dies; but when the old
         * primary stays up (cut off from the Sentinels only, or replaced by a forced failover), a replica that
         * has not yet been told to follow the new primary can still acknowledge its grants and renewals, and
         * then drop them. Only {@code n} equal to the number of replicas closes that window (at the price of
         * refusing every grant while one replica is missing); see docs/RELIABILITY.md.
         *
         * @param n how many replicas, at least 1
         * @param timeout how long to wait for them: positive, at most {@link #MAX_REPLICAS_TIMEOUT}, and
         *        less than the connection's command timeout (checked by {@link #build()})
         * @return this builder
         * @throws NullPointerException if {@code timeout} is {@code null}
         * @throws IllegalArgumentException if {@code n < 1} or {@code timeout} is out of range
         */
        public Builder replicas(int n, Duration timeout) {
            checkReplicas(n, timeout);
            this.replicas = n;
            this.replicasTimeout = timeout;
            return this;
        }

        /**
         * Declares a partition (API.md §11a), as {@link Semaphore.Builder#partition} does, with the same rules
         * across the fleet: repeatable, the order of declaration is the priority (first = highest), a partition
         * is guaranteed {@code floor(share × limit)} permits of the one limit whenever its requests wait, is
         * served before lower partitions' requests beyond their guarantees, and may use whatever nobody with
         * precedence waits for. Get its view with {@link RedisSemaphore#partition(String)}; the semaphore's own
         * acquires are requests of no partition, served last. {@link #build()} checks the declarations as the
         * local builder does (the Redis semaphore is always {@link dev.sema.Fairness#FIFO}).
         *
         * <p>Like {@code permits} and {@code maxPermits}, partitions are stored in Redis when the semaphore is
         * created, and the stored ones win: a builder for a semaphore that exists (built by another process, or
         * earlier) gets the stored partitions, whatever it declares; a declaration that differs, none included
         * when the semaphore has some, or some when it has none, is logged as a warning (a builder that
         * declares none on a partitioned semaphore is logged at {@code DEBUG}: opening one without repeating its
         * declaration is the usual case). {@link Semaphore#partitionNames()} tells which partitions the handle
         * has. A handle whose semaphore disappears (an idle expiry, a restart without persistence) creates it
         * again with the partitions it has. If another builder created it again first, a new handle takes what
         * that one stored; the old handle's operations fail with {@link RedisSemaphoreException} if the
         * semaphore now has no partitions (or has them where it had none), and otherwise its own requests stay
         * of no partition while a view's go to the stored partition of its index (in priority order), failing
         * when there is none.
         *
         * @param name the partition's name: non-empty, unique
         * @param share its share of the limit, in {@code (0, 1]}; the shares add up to at most 1
         * @return this builder
         * @throws NullPointerException if {@code name} is {@code null}
         */
        public Builder partition(String name, double share) {
            partitionNames.add(Objects.requireNonNull(name, "name"));
            partitionShares.add(share);
            return this;
        }

        /**
         * Tells whether a missing semaphore is created from this builder's values (the default), or
         * reported: with {@code false}, {@link #build()} and later operations throw
         * {@link RedisSemaphoreException} while the semaphore does not exist in Redis.
         *
         * @param create whether to create a missing semaphore
         * @return this builder
         */
        public Builder createIfMissing(boolean create) {
            this.createIfMissing = create;
            return this;
        }

        /**
         * Builds the handle: subscribes to its wake-up channel and reads (or creates) the semaphore in
         * Redis, one round trip each.
         *
         * @return the handle
         * @throws IllegalArgumentException if the limit exceeds the ceiling, or the {@code replicas} timeout is
         *         not less than the connection's command timeout, or a partition's name is empty or declared
         *         twice, a share is outside {@code (0, 1]} or the shares add up to more than 1 (naming the
         *         partition and the numbers)
         * @throws RedisSemaphoreException if Redis cannot be reached, or the semaphore is missing and
         *         may not be created, or its keys hold something else
         * @throws dev.sema.SemaphoreClosedException if the {@link RedisSemaphores} is closed
         */
        public RedisSemaphore build() {
            long ceiling = Checks.ceiling(permits, maxPermits);
            PartitionSpec partitions = partitionNames.isEmpty() ? null
                    : PartitionSpec.of(name, partitionNames, partitionShares);
            if (replicas > 0) {
                checkReplicas(owner, replicas, replicasTimeout);
            }
            return owner.open(name, new LettuceSemaphore.Options(permits, ceiling, lease, createIfMissing,
                    expireWhenIdle, replicas, replicasTimeout, partitions));
        }

        /** The checks of {@link #replicas} (and of the keyed builder's): the arguments themselves. */
        static void checkReplicas(int n, Duration timeout) {
            Objects.requireNonNull(timeout, "replicas: timeout");
            if (n < 1) {
                throw new IllegalArgumentException("replicas: n (" + n + ") must be at least 1");
            }
            if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_REPLICAS_TIMEOUT) > 0) {
                throw new IllegalArgumentException("replicas: timeout (" + timeout + ") must be positive and at most "
                        + MAX_REPLICAS_TIMEOUT);
            }
        }

        /** The checks of a build with {@code replicas}: what the connection allows. */
        static void checkReplicas(RedisSemaphores owner, int n, Duration timeout) {
            if (timeout.compareTo(owner.commandTimeout) >= 0) {
                throw new IllegalArgumentException("replicas: timeout (" + timeout + ") must be less than the"
                        + " command timeout (" + owner.commandTimeout + ")");
            }
        }
    }
}
