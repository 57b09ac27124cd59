package dev.sema.redis;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import dev.sema.internal.AbstractSemaphore;
import dev.sema.internal.Checks;
import dev.sema.internal.Failures;
import dev.sema.internal.Listeners;
import dev.sema.internal.Outcome;
import dev.sema.internal.PartitionSpec;
import dev.sema.internal.Partitioned;
import dev.sema.internal.StateSource;
import dev.sema.internal.Timeouts;
import dev.sema.internal.WaitEvent;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The {@link RedisSemaphore} handle: the state is in Redis (see the scripts, whose shared head
 * {@code common.lua} states the server-side invariants); this object tracks only this process's own
 * waiters and grants and turns replies and wake-up messages into outcomes. The scripts are called through
 * {@link Protocol} (typed replies), and grants are renewed by {@link Heartbeat}.
 *
 * <p>A partitioned semaphore (API.md §11a) is one handle and one view per partition: each view is a
 * LettuceSemaphore of its own (its name, its listeners, which are the handle's, its requests' slot) that
 * shares the handle's connection state: the maps of waiters and grants, the heartbeat, the wake-up channel,
 * the protocol, and whether it is closed or left. The partition rules themselves are kept in Redis
 * (partitions.lua).
 */
final class LettuceSemaphore extends AbstractSemaphore implements RedisSemaphore, StateSource, Partitioned {

    /*
     * Implementation overview
     *
     * Redis holds the truth (keys sem:{name}:meta, holders, leases, queue; see
     * common.lua). Every change is one script, atomic in Redis, idempotent per request id.
     *
     * Local state:
     *   waiting  request id -> Pending: this handle's queued requests whose outcome is not yet known here.
     *   held     grant id -> LettucePermit: this handle's live grants, renewed by the Heartbeat.
     *   cancelsDue, releasesDue  ids of CANCELs and whole-grant RELEASEs that got no reply (L6, L11).
     *
     * Invariants:
     *  L1: a Pending's outcome is decided by one CAS (Pending.decide / withdraw); whoever withdraws sends
     *      CANCEL, which Redis runs after the request's ACQUIRE (same connection, so same order) and which
     *      releases a grant that raced with it. A grant reaching a decided-withdrawn Pending is ignored.
     *      A caller's future is completed from outside only after its request was withdrawn
     *      (GivingUpFuture), so its dependents never find the request still in `waiting`.
     *  L2: a Pending stays in `waiting` until its permit is in `held`. Every way a Pending leaves
     *      `waiting` undecided-for-a-grant either sends its CANCEL (withdraw, a failed request, leave) or
     *      follows a reply that Redis cannot grant it (closed, too large, an idle wait), so a wake-up
     *      message for an id in neither map is settled already: it is ignored, not cancelled again.
     *  L3: a permit's local lease deadline is never later than Redis's: it is measured from when the
     *      request that set Redis's deadline was sent (for a pushed grant, from the last request that
     *      still found the waiter queued, which was before the grant; the heartbeat renews waiters every
     *      tick, so that estimate is at most a tick early, and the grant is renewed on the usual schedule
     *      from it, with no extra RENEW).
     *  L4: a permit is renewed under the grant id Redis knows: ops that rotate the id (release of part,
     *      split, merge) bump the permit's epoch, and renewal results for an older epoch are ignored.
     *  L5: every acquire request that ends passes ended() once, with its outcome: the one place where
     *      outcomes are reported to the listeners (dev.sema.internal.Listeners).
     *  L6: a CANCEL or a whole-grant RELEASE whose outcome is unknown (no reply in time, a dropped
     *      connection) is kept in cancelsDue/releasesDue and sent again by the Heartbeat until Redis
     *      answers, and by leave() (L11); both scripts are idempotent per id, so a second run changes nothing.
     *  L7: with replicas(n, timeout), no grant reaches a caller before WAIT reports n replicas have it;
     *      one that does not get there in time is given back (discard) and the request fails. The WAIT
     *      follows a renewal of the grant on its own socket (replicated()), since it counts only that
     *      socket's writes. A renewal extends the permits' deadlines only once WAIT reports n replicas have
     *      it (Heartbeat H6).
     *  L8: a blocking acquire's first ACQUIRE reply is handled by the calling thread itself (no hop to
     *      another thread): it completes on the I/O thread, and the caller runs acquireReply for it. A
     *      caller that stops waiting for it first (interrupt, its own timeout) hands it to a virtual
     *      thread instead, so every reply is handled exactly once, before or after the caller gave up.
     *  L9: no permit reaches a caller after its local lease deadline (L3) has passed: by then Redis may
     *      have ended the grant and handed its permits to another process. A grant that arrives that late
     *      (a message or reply held up by a partition, a stall, a WAIT for replicas) is confirmed first:
     *      its ACQUIRE is sent again with the same id, which renews the grant if Redis still holds it (the
     *      permit then starts from that request) and queues the request again, at the back, if Redis
     *      ended it. A try-acquire confirms once and gives the grant back if the confirmation is late too;
     *      a grant that outlived its deadline while waiting for replicas (L7) is given back and the request
     *      fails. Once handed over, a permit's leaseLost() completes at its deadline unless a renewal
     *      moved it first (Heartbeat H5), not at the next tick.
     *  L10: a partition's view shares its handle's state (root): every Pending and LettucePermit names the
     *      view it was made by, and whatever decides a request or reports about a permit (a reply, a
     *      wake-up, the heartbeat, close, leave) goes through that view, so its listeners see the view
     *      (Listeners R4) and its messages name it.
     *  L11: a handle that leaves (RedisSemaphores.close, a keyed family's close or its drop of an idle key)
     *      sends, before it goes, what no heartbeat will send after it: a CANCEL for every waiter it fails, a
     *      RELEASE for every grant it holds, and every CANCEL and RELEASE still due (L6). It waits for the
     *      replies within one command timeout (RedisSemaphores.close: one for all its handles), never longer:
     *      with Redis down, the leases and the waiters' time-to-live end what got no answer. leave() sets
     *      `left` before it reads `waiting`, `held` and the due sets, and whatever adds to them reads `left`
     *      after (start, releaseQuietly, due): so a request started, a permit emptied or a command failed
     *      while the handle leaves is sent by leave() or by its own thread, never by neither. A command sent
     *      by both (or by a tick still running) is a resend, which changes nothing (L6).
     *  L12: a wake-up message is trusted (handed over with L3's estimate as its base) only for a request
     *      that was never queued again under its id. Once its ACQUIRE is sent again with the same id (the
     *      heartbeat found the waiter gone, H3; a late grant is confirmed, L9), a wake-up for that id may
     *      belong to an earlier grant that Redis has since ended (reaped at its lease's end), held up in the
     *      pub/sub connection; the later request's time says nothing about when that grant's lease was set.
     *      Such a wake-up is confirmed like a late grant (L9): ACQUIRE sent again with the same id renews the
     *      grant if Redis holds it (the permit starts from that request) or finds the request queued. The
     *      flag is set before the ACQUIRE is sent and read after the base, so a base moved by the later
     *      request is never used for a wake-up. Only requests queued again pay the extra round trip.
     *
     * Threads: replies and messages are handled on virtual threads (RedisSemaphores.execute), ticks on the
     * timer thread; neither blocks on Redis except LettucePermit ops, which hold only that permit's lock.
     * leave() waits for its replies (L11), at most a command timeout, in the thread that makes it leave.
     *
     * field         read        write
     * waiting/held  any         ConcurrentHashMap (a view's are its handle's, L10)
     * ceiling, left, knownClosed: the handle's (root), for its views too
     * protocol      volatile    volatile, by start(): the partitions stored in Redis decide which scripts
     * partitions    volatile    volatile, by start(), before the views are made and the handle is returned
     * ceiling       volatile    volatile, from any reply that reports it (fixed once created)
     * knownClosed   volatile    volatile, set once: this handle closed it or saw it closed
     * closeCause    volatile    volatile, in AbstractSemaphore (A2): set once, before knownClosed, by the close
     *                           that closed it
     * left          volatile    volatile, set once by leave(), before it reads the maps and the due sets (L11)
     * cancelsDue,   any         ConcurrentHashMap key sets: added to by a command that got no reply (due),
     *   releasesDue             removed from when Redis answers a resend (L6); sent by the Heartbeat and leave()
     */

    private static final System.Logger LOG = System.getLogger(LettuceSemaphore.class.getName());
    /** L11: how soon a command of leave()'s that was refused at once is sent again. */
    private static final long LEAVE_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final RedisSemaphores owner;
    private final String handleId;
    private final String channel;
    private final Duration lease;
    private final String leaseMs;
    private final String waiterTtlMs;
    private final long leaseNanos;
    private final long marginNanos;
    private final long tickNanos;
    private volatile Protocol protocol;
    /** The same calls for a thread that waits for the reply: completed on the I/O thread, no hop. */
    private volatile Protocol blocking;
    private final Heartbeat heartbeat;
    /** L7: a grant is handed over only once this many replicas have it (0: at once). */
    private final int replicas;
    private final Duration replicasTimeout;
    /** What a missing semaphore is created with (the handle's; its views' are never used). */
    private final Options options;

    /** The handle: this, or for a partition's view the handle it is a view of (L10). */
    private final LettuceSemaphore root;
    /**
     * The slot of this object's requests on a partitioned semaphore (p_acquire.lua): a view's partition index;
     * -1 for the handle's own requests (of no partition), which the scripts place after every stored partition.
     */
    private final int slot;
    /** The partitions stored in Redis, which win over the builder's (null: none); the handle's only. */
    private volatile PartitionSpec partitions;
    /** The views, in priority order; empty for a view and when not partitioned. */
    private volatile LettuceSemaphore[] views = new LettuceSemaphore[0];

    final ConcurrentHashMap<String, Pending<?>> waiting;
    final ConcurrentHashMap<String, LettucePermit> held;
    /** CANCELs and whole-grant RELEASEs whose reply was lost (L6): the Heartbeat sends them again. */
    final Set<String> cancelsDue;
    final Set<String> releasesDue;

    private volatile long ceiling;
    /** The last read of the semaphore's counts, and when it came (for toString). */
    private volatile Read last;

    private record Read(Protocol.Status status, long at) {
    }
    private volatile boolean left;
    /** Why this handle left, for its refusals: this process's RedisSemaphores closed, or a keyed family's close. */
    private volatile String leftBecause = "this process's RedisSemaphores is closed";
    private volatile boolean knownClosed;
    /** The cause this handle closed the semaphore with, or null; written once, before knownClosed. */
    private volatile ScheduledFuture<?> ticker;
    /** How many replicas a grant or a renewal must reach (0: none): L7, Heartbeat's H6. */
    int replicas() {
        return replicas;
    }

    long replicasTimeoutMillis() {
        return Math.max(1, replicasTimeout.toMillis());
    }

    /** For tests: stops sending renewals, as a process that hangs would (local deadlines still apply). */
    volatile boolean renewalsSuspended;
    /**
     * For the chaos run's deliberately broken build and its test only: hands late grants over as they are,
     * breaking L9, so that the history checker can show it catches what that lets through.
     */
    static volatile boolean lateGrantsUnchecked;

    /**
     * What a builder chose: see {@link RedisSemaphore.Builder}.
     *
     * @param permits the limit to create the semaphore with
     * @param ceiling the ceiling to create it with
     * @param lease the lease of this handle's grants
     * @param create whether to create it when missing
     * @param expireWhenIdle its idle expiry when created ({@code ZERO}: never)
     * @param replicas how many replicas must have a grant before it is acknowledged (0: none)
     * @param replicasTimeout how long to wait for them
     * @param partitions the partitions to create it with (null: none)
     */
    record Options(long permits, long ceiling, Duration lease, boolean create, Duration expireWhenIdle, int replicas,
            Duration replicasTimeout, PartitionSpec partitions) {
    }

    LettuceSemaphore(RedisSemaphores owner, String name, String handleId, Options o) {
        super(name);
        this.owner = owner;
        this.handleId = handleId;
        this.channel = "sem:{" + name + "}:wake:" + handleId;
        this.lease = o.lease();
        long leaseMillis = lease.toMillis();
        long ttlMillis = Math.min(leaseMillis, 10_000);
        this.leaseMs = Long.toString(leaseMillis);
        this.waiterTtlMs = Long.toString(ttlMillis);
        this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        this.marginNanos = leaseNanos / 10;
        this.tickNanos = Math.min(TimeUnit.SECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(ttlMillis) / 3);
        this.ceiling = o.ceiling();
        this.replicas = o.replicas();
        this.replicasTimeout = o.replicasTimeout();
        this.options = o;
        this.root = this;
        this.slot = -1;
        this.waiting = new ConcurrentHashMap<>();
        this.held = new ConcurrentHashMap<>();
        this.cancelsDue = ConcurrentHashMap.newKeySet();
        this.releasesDue = ConcurrentHashMap.newKeySet();
        useLayout(o.partitions());
        this.heartbeat = new Heartbeat(this, leaseNanos, marginNanos, leaseNanos / 3, tickNanos);
    }

    /** A partition's view of {@code handle} (L10): the handle's state, its own name, listeners and slot. */
    private LettuceSemaphore(LettuceSemaphore handle, int slot, String name) {
        super(name, handle.listeners);
        this.owner = handle.owner;
        this.handleId = handle.handleId;
        this.channel = handle.channel;
        this.lease = handle.lease;
        this.leaseMs = handle.leaseMs;
        this.waiterTtlMs = handle.waiterTtlMs;
        this.leaseNanos = handle.leaseNanos;
        this.marginNanos = handle.marginNanos;
        this.tickNanos = handle.tickNanos;
        this.protocol = handle.protocol;
        this.blocking = handle.blocking;
        this.heartbeat = handle.heartbeat;
        this.replicas = handle.replicas;
        this.replicasTimeout = handle.replicasTimeout;
        this.options = handle.options;
        this.root = handle;
        this.slot = slot;
        this.waiting = handle.waiting;
        this.held = handle.held;
        this.cancelsDue = handle.cancelsDue;
        this.releasesDue = handle.releasesDue;
    }

    /** Makes this handle's calls for a semaphore with {@code spec}'s partitions (null: none). */
    private void useLayout(PartitionSpec spec) {
        Options o = options;
        Protocol p = new Protocol(owner, name, describe(), o.create() ? Long.toString(o.permits()) : "",
                o.create() ? Long.toString(o.ceiling()) : "", o.create() ? Long.toString(o.expireWhenIdle().toMillis()) : "",
                spec);
        partitions = spec;
        protocol = p;
        blocking = p.forBlockingCallers();
    }

    String channel() {
        return channel;
    }

    RedisSemaphores owner() {
        return owner;
    }

    Protocol protocol() {
        return protocol;
    }

    Protocol blocking() {
        return blocking;
    }

    String handleId() {
        return handleId;
    }

    String leaseMs() {
        return leaseMs;
    }

    String waiterTtlMs() {
        return waiterTtlMs;
    }

    boolean hasLeft() {
        return root.left;
    }

    /** The handle this is a view of, or this handle itself. */
    LettuceSemaphore root() {
        return root;
    }

    /**
     * Reads (or creates) the semaphore, takes the partitions stored in Redis as its own (they win over the
     * builder's, like the stored limit), makes the views, then starts the renewal ticks.
     */
    void start() {
        PartitionSpec declared = partitions;
        for (int attempt = 1;; attempt++) {
            try {
                Protocol.Status s = status("build()");
                if (s.partitions() != null) {
                    PartitionSpec stored = StoredPartitions.decode(name, s.partitions());
                    if (!StoredPartitions.same(stored, partitions)) {
                        useLayout(stored); // the same number of partitions: the same keys
                    }
                }
                break;
            } catch (Protocol.LayoutMismatch m) {
                if (attempt == 3) {
                    throw m; // changed under us at every try: give up rather than loop
                }
                useLayout(m.stored.isEmpty() ? null : StoredPartitions.decode(name, m.stored));
            }
        }
        PartitionSpec stored = partitions;
        if (!StoredPartitions.same(declared, stored)) {
            System.Logger.Level level = declared == null ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING;
            LOG.log(level, () -> describe() + " exists in Redis with partitions " + StoredPartitions.describe(stored)
                    + "; this handle was built with " + StoredPartitions.describe(declared)
                    + ": the stored partitions are used, as the stored limit is");
        }
        if (stored != null) {
            LettuceSemaphore[] v = new LettuceSemaphore[stored.size()];
            for (int i = 0; i < v.length; i++) {
                v[i] = new LettuceSemaphore(this, i, name + "/" + stored.names().get(i));
            }
            views = v;
        }
        ticker = owner.timer.scheduleWithFixedDelay(heartbeat::tick, tickNanos, tickNanos, TimeUnit.NANOSECONDS);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public RedisPermit acquire(long permits) throws InterruptedException {
        Checks.request(permits, root.ceiling, name);
        acquireNotInterrupted(permits);
        refuseIfKnownClosed("acquire(" + permits + ")", permits);
        Pending<Permit> p = start(permits, false, true);
        try {
            return (RedisPermit) await(p, false, 0L, null);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public RedisPermit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        Checks.request(permits, root.ceiling, name);
        Objects.requireNonNull(timeout, "timeout");
        acquireNotInterrupted(permits, timeout);
        String what = "acquire(" + permits + ", " + timeout + ")";
        refuseIfKnownClosed(what, permits);
        long nanos = Timeouts.toNanos(timeout);
        if (nanos <= 0) {
            Optional<Permit> p = tryOnce(what, permits, Outcome.TIMEOUT, false);
            if (p.isEmpty()) {
                throw Failures.timedOut(name, permits, timeout);
            }
            return (RedisPermit) p.get();
        }
        long deadline = Timeouts.deadline(nanos);
        Pending<Permit> p = start(permits, false, true);
        return (RedisPermit) await(p, nanos != Timeouts.FOREVER, deadline, timeout);
    }

    @Override
    public RedisPermit acquireUninterruptibly(long permits) {
        Checks.request(permits, root.ceiling, name);
        refuseIfKnownClosed("acquireUninterruptibly(" + permits + ")", permits);
        boolean noted = Thread.interrupted(); // set again however it ends, as an interrupt while waiting
        try {
            Pending<Permit> p = start(permits, false, true);
            for (;;) {
                try {
                    takeFirstReply(p, false, 0L);
                    return (RedisPermit) p.future.get();
                } catch (InterruptedException e) {
                    noted = true; // the request stays queued in its place: wait on
                } catch (ExecutionException e) {
                    throw rethrow(e.getCause());
                }
            }
        } finally {
            if (noted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public RedisPermit drainPermits() {
        refuseIfKnownClosed("drainPermits()", 0);
        return (RedisPermit) tryOnce("drainPermits()", 0, Outcome.UNAVAILABLE, true).orElseThrow();
    }

    @Override
    public Optional<Permit> tryAcquire(long permits) {
        Checks.request(permits, root.ceiling, name);
        String what = "tryAcquire(" + permits + ")";
        refuseIfKnownClosed(what, permits);
        return tryOnce(what, permits, Outcome.UNAVAILABLE, false);
    }

    /**
     * One ACQUIRE that may not queue; {@code refused} is the outcome reported when too few are free. A
     * {@code drain} asks for every permit available (its {@code permits} is 0; the reply says how many).
     */
    private Optional<Permit> tryOnce(String what, long permits, Outcome refused, boolean drain) {
        if (root.left) {
            ended(Outcome.CLOSED, permits);
            throw closedLocally(what);
        }
        String id = nextId();
        for (int attempt = 1;; attempt++) {
            long sent = System.nanoTime();
            Protocol.Acquired a;
            try {
                a = owner.await(blocking.acquire(id, permits, leaseMs, waiterTtlMs, drain ? "drain" : "try", slot),
                        describe() + ": " + what);
                if (drain && a.kind() == Protocol.Acquired.Kind.GRANTED) {
                    permits = Math.max(0, a.permits());
                }
                if (a.kind() == Protocol.Acquired.Kind.GRANTED && permits > 0 && late(sent)) {
                    if (attempt == 1) {
                        continue; // keeps L9: confirm; the same id renews the grant if Redis still holds it
                    }
                    throw lateTwice(what);
                }
            } catch (RuntimeException e) {
                cancelOnServer(id); // the request may still reach Redis: do not let a grant wait for its lease
                ended(outcomeOf(e), permits);
                throw e;
            }
            switch (a.kind()) {
                case GRANTED -> {
                    LettucePermit p = newPermit(permits == 0 ? null : id, permits, a.value(), sent);
                    try {
                        owner.await(replicated(p).thenRun(() -> requireLive(p)), describe() + ": " + what);
                    } catch (RuntimeException e) {
                        p.discard(); // keeps L7 and L9
                        ended(outcomeOf(e), permits);
                        throw e;
                    }
                    ended(Outcome.GRANTED, permits);
                    return Optional.of(p);
                }
                case NOT_AVAILABLE -> {
                    ended(refused, permits);
                    return Optional.empty();
                }
                case CLOSED -> {
                    sawClosed();
                    ended(Outcome.CLOSED, permits);
                    throw closedFailure(what);
                }
                case TOO_LARGE -> throw tooLarge(permits, a.value());
                default -> throw new RedisSemaphoreException(describe() + ": " + what + ": unexpected reply " + a,
                        null);
            }
        }
    }

    /** L9: a try-acquire whose confirmation came back late too; its CANCEL gives the grant back. */
    private RedisSemaphoreException lateTwice(String what) {
        return new RedisSemaphoreException(describe() + ": " + what + ": the grant arrived after its lease could"
                + " have ended, and so did its confirmation; it was given back", null);
    }

    /** L9: fails if the permit's lease may have ended while it waited for replicas (L7). */
    private void requireLive(LettucePermit p) {
        if (p.grantId() != null && System.nanoTime() - p.deadline() >= 0 && !lateGrantsUnchecked) {
            throw new RedisSemaphoreException(describe() + ": the grant's lease could have ended while waiting for "
                    + replicas + " replicas; it was given back", null);
        }
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits) {
        Checks.request(permits, root.ceiling, name);
        CompletableFuture<Permit> refused = refusedIfKnownClosed("acquireAsync(" + permits + ")", permits);
        return refused != null ? refused : this.<Permit>start(permits, false, false).future;
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        Checks.request(permits, root.ceiling, name);
        Objects.requireNonNull(timeout, "timeout");
        String what = "acquireAsync(" + permits + ", " + timeout + ")";
        CompletableFuture<Permit> refused = refusedIfKnownClosed(what, permits);
        if (refused != null) {
            return refused;
        }
        long nanos = Timeouts.toNanos(timeout);
        if (nanos <= 0) {
            return tryOnceAsync(what, permits, timeout);
        }
        Pending<Permit> p = start(permits, false, false);
        if (nanos != Timeouts.FOREVER) {
            owner.failAfter(p.future, nanos, () -> Failures.timedOut(name, permits, timeout));
        }
        return p.future;
    }

    private CompletableFuture<Permit> tryOnceAsync(String what, long permits, Duration timeout) {
        if (root.left) {
            ended(Outcome.CLOSED, permits);
            return CompletableFuture.failedFuture(closedLocally(what));
        }
        CompletableFuture<Permit> result = new CompletableFuture<>();
        tryAsync(nextId(), what, permits, timeout, result, 1);
        return result;
    }

    /** One ACQUIRE of {@link #tryOnceAsync}; a late grant is confirmed once, under the same id (L9). */
    private void tryAsync(String id, String what, long permits, Duration timeout, CompletableFuture<Permit> result,
            int attempt) {
        long sent = System.nanoTime();
        protocol.acquire(id, permits, leaseMs, waiterTtlMs, "try", slot).whenComplete((a, e) -> {
            if (e == null && a.kind() == Protocol.Acquired.Kind.GRANTED && permits > 0 && late(sent)) {
                if (attempt == 1) {
                    tryAsync(id, what, permits, timeout, result, 2);
                    return;
                }
                e = lateTwice(what);
            }
            if (e != null) {
                cancelOnServer(id);
                RuntimeException failure = owner.asRuntime(describe() + ": " + what, e);
                ended(outcomeOf(failure), permits);
                result.completeExceptionally(failure);
                return;
            }
            switch (a.kind()) {
                case GRANTED -> {
                    LettucePermit p = newPermit(permits == 0 ? null : id, permits, a.value(), sent);
                    replicated(p).thenRun(() -> requireLive(p)).whenComplete((ok, notReplicated) -> {
                        if (notReplicated != null) {
                            p.discard(); // keeps L7 and L9
                            RuntimeException failure = owner.asRuntime(describe() + ": " + what, notReplicated);
                            ended(outcomeOf(failure), permits);
                            result.completeExceptionally(failure);
                            return;
                        }
                        ended(Outcome.GRANTED, permits);
                        if (!result.complete(p)) {
                            p.close();
                        }
                    });
                }
                case NOT_AVAILABLE -> {
                    ended(Outcome.TIMEOUT, permits);
                    result.completeExceptionally(Failures.timedOut(name, permits, timeout));
                }
                case CLOSED -> {
                    sawClosed();
                    ended(Outcome.CLOSED, permits);
                    result.completeExceptionally(closedFailure(what));
                }
                case TOO_LARGE -> result.completeExceptionally(tooLarge(permits, a.value()));
                default -> result.completeExceptionally(
                        new RedisSemaphoreException(describe() + ": " + what + ": unexpected reply " + a, null));
            }
        });
    }

    /**
     * Registers and sends a queued request (acquire or awaitIdle); {@code caller}: the calling thread will
     * wait for it and handles the first reply itself (L8).
     */
    private <T> Pending<T> start(long permits, boolean idle, boolean caller) {
        Pending<T> p = new Pending<>(this, nextId(), permits, idle);
        if (root.left) {
            p.decide();
            p.future.completeInternally(null, closedLocally(p.what()));
            if (!idle) {
                ended(Outcome.CLOSED, permits);
            }
            return p;
        }
        if (!idle) {
            p.queuedAt = listeners.now();
            p.jfr = WaitEvent.start(name, permits, waiting.size());
        }
        waiting.put(p.id, p);
        if (caller) {
            p.firstSent = System.nanoTime();
            p.firstReply = blocking.acquire(p.id, p.permits, leaseMs, waiterTtlMs, p.idle ? "idle" : "wait", slot);
        } else {
            sendAcquire(p, false);
        }
        if (root.left) {
            // keeps L11: leave() may have read `waiting` before this request was in it, or cancelled it before
            // its ACQUIRE went out; this CANCEL follows the ACQUIRE on the connection.
            fail(p, closedLocally(p.what()));
            cancelOnServer(p.id);
        }
        return p;
    }

    /**
     * L8: handles a blocking caller's first reply in the calling thread, waiting for it within the command
     * timeout (and the caller's deadline, when {@code timed}). If the caller stops waiting first, the reply
     * goes to a virtual thread, and the interrupt is kept for the caller's own wait to find.
     */
    private void takeFirstReply(Pending<?> p, boolean timed, long deadline) {
        CompletableFuture<Protocol.Acquired> reply = p.firstReply;
        if (reply == null) {
            return;
        }
        p.firstReply = null;
        long sent = p.firstSent;
        long replyDeadline = sent + owner.commandTimeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(200);
        boolean callersDeadlineFirst = timed && deadline - replyDeadline < 0;
        long until = callersDeadlineFirst ? deadline : replyDeadline;
        Protocol.Acquired a = null;
        Throwable failure = null;
        try {
            a = reply.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            failure = e.getCause();
        } catch (TimeoutException e) {
            if (callersDeadlineFirst) {
                handOffFirstReply(p, reply, sent);
                return; // the caller's own wait times out at once and withdraws
            }
            failure = new TimeoutException("no reply within " + owner.commandTimeout);
        } catch (InterruptedException e) {
            handOffFirstReply(p, reply, sent);
            Thread.currentThread().interrupt(); // the caller's own wait is interrupted at once and withdraws
            return;
        }
        acquireReply(p, a, failure, sent, false);
    }

    private void handOffFirstReply(Pending<?> p, CompletableFuture<Protocol.Acquired> reply, long sent) {
        reply.whenComplete((a, e) -> owner.execute(() -> acquireReply(p, a, e, sent, false)));
    }

    /**
     * Sends ACQUIRE for {@code p}. A first request that fails reaches the caller at once (Redis is down at
     * acquire time); a request sent again for a waiter that Redis lost ({@code again}) is retried at the next
     * heartbeat instead, so a waiter rides out a restart or a dropped connection, bounded by its own timeout.
     */
    void sendAcquire(Pending<?> p, boolean again) {
        if (again) {
            p.queueAgain(); // keeps L12: before this request can move queuedSeenAt
        }
        long sent = System.nanoTime();
        protocol.acquire(p.id, p.permits, leaseMs, waiterTtlMs, p.idle ? "idle" : "wait", slot)
                .whenComplete((a, e) -> acquireReply(p, a, e, sent, again));
    }

    private void acquireReply(Pending<?> p, Protocol.Acquired a, Throwable e, long sent, boolean again) {
        if (e != null) {
            if (again && p.isWaiting() && !(RedisSemaphores.unwrap(e) instanceof RedisSemaphoreException)) {
                LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": queueing " + p.id + " again failed;"
                        + " retried at the next heartbeat", e);
                return;
            }
            if (fail(p, owner.asRuntime(describe() + ": " + p.what(), e))) {
                cancelOnServer(p.id);
            }
            return;
        }
        switch (a.kind()) {
            case GRANTED -> granted(p, a.value(), sent);
            case QUEUED -> p.queued(sent);
            case IDLE -> idleReached(p);
            case CLOSED -> {
                sawClosed();
                fail(p, closedFailure(p.what()));
            }
            case TOO_LARGE -> fail(p, tooLarge(p.permits, a.value()));
            default -> {
                if (fail(p, new RedisSemaphoreException(describe() + ": " + p.what() + ": unexpected reply " + a,
                        null))) {
                    cancelOnServer(p.id);
                }
            }
        }
    }

    /**
     * A queued request was granted (by its own reply, a wake-up message, or a renewal); {@code base} is when
     * the request that set the grant's lease in Redis was sent, or an earlier time (L3).
     */
    void granted(Pending<?> p, long token, long base) {
        if (p.permits > 0 && late(base)) {
            // keeps L9: Redis may have ended this grant and served another process. Still undecided, the
            // request asks again under its id: renewed if Redis holds it, queued again if not.
            confirm(p, "arrived after its lease could have ended");
            return;
        }
        if (!p.decide()) {
            return; // keeps L1: withdrawn, and its CANCEL releases this grant in Redis
        }
        LettucePermit permit = newPermit(p.permits == 0 ? null : p.id, p.permits, token, base);
        waiting.remove(p.id, p); // keeps L2: only now that the permit is in `held`
        if (replicas > 0) {
            replicated(permit).thenRun(() -> requireLive(permit)).whenComplete((ok, notReplicated) -> {
                if (notReplicated == null) {
                    handOver(p, permit);
                    return;
                }
                permit.discard(); // keeps L7
                RuntimeException failure = owner.asRuntime(describe() + ": " + p.what(), notReplicated);
                boolean told = p.future.completeInternally(null, failure);
                ended(told ? outcomeOf(failure) : p.future.givenUpAs(), p);
            });
            return;
        }
        handOver(p, permit);
    }

    /**
     * L9, L12: sends the ACQUIRE of a still undecided request again under its id, instead of handing over a
     * grant that may have ended: Redis renews the grant if it holds it, and queues the request if not.
     */
    private void confirm(Pending<?> p, String why) {
        if (p.isWaiting()) {
            LOG.log(System.Logger.Level.INFO, () -> describe() + ": the grant of " + p.id + " " + why
                    + "; confirming it with Redis before handing it over");
            sendAcquire(p, true);
        }
    }

    /** Whether a lease set by a request sent at {@code base} may have ended by now (its local deadline passed). */
    private boolean late(long base) {
        return System.nanoTime() - (base + leaseNanos - marginNanos) >= 0 && !lateGrantsUnchecked;
    }

    /** Completes a decided request with its permit, or gives the permit back if the caller gave up first. */
    @SuppressWarnings("unchecked")
    private void handOver(Pending<?> p, LettucePermit permit) {
        Pending.Future<Permit> f = (Pending.Future<Permit>) p.future;
        if (f.completeInternally(permit, null)) {
            ended(Outcome.GRANTED, p);
        } else {
            // The caller gave up first (cancel, timeout): that is how it ended; the grant goes back unseen.
            ended(f.givenUpAs(), p);
            permit.discard();
        }
    }

    /**
     * L7: completes once {@code replicas} replicas have the grant (at once when none are asked for, or it
     * holds no permits), or fails with a {@link RedisSemaphoreException}. WAIT counts the writes of the socket
     * it is sent on, and the grant may have been written elsewhere: by another process's script (a release
     * that granted it), on another socket (a reconnect since), on another node (a cluster redirect). So the
     * grant is first touched on the connection that WAIT follows (on Redis Cluster, its slot's master's: R1):
     * ACQUIRE sent again for its id, which finds it held and renews its lease; and no connection may drop
     * between the touch and WAIT's answer (R2). A touch that does not find the grant held fails it.
     */
    private CompletableFuture<Void> replicated(LettucePermit permit) {
        if (replicas == 0 || permit.grantId() == null) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Long> acked = owner.isCluster()
                ? owner.onMaster(protocol.key(), node -> touchAndWait(permit, node))
                : touchAndWait(permit, null);
        return acked.thenAccept(n -> {
            if (n < replicas) {
                throw new RedisSemaphoreException(describe() + ": the grant reached " + n + " of the " + replicas
                        + " replicas asked for within " + replicasTimeout + "; it was given back"
                        + (n == 0 ? " (no replica acknowledged it: after a failover the new primary may have none,"
                        + " and every grant is refused until enough replicas join it)" : ""), null);
            }
        });
    }

    /**
     * L7: renews {@code permit}'s grant on {@code node} (the command connection when null), failing unless Redis
     * still holds that very grant, then WAITs there.
     */
    private CompletableFuture<Long> touchAndWait(LettucePermit permit, StatefulRedisConnection<String, String> node) {
        Runnable hook = owner.beforeTouch;
        if (hook != null) {
            hook.run();
        }
        long links = owner.links(node);
        long sent = System.nanoTime();
        Protocol on = node == null ? protocol : protocol.on(node);
        return on.acquire(permit.grantId(), permit.permits(), leaseMs, waiterTtlMs, "try", slot).thenCompose(a -> {
            if (a.kind() != Protocol.Acquired.Kind.GRANTED || a.value() != permit.fencingToken()) {
                // A new grant under the same id (room again) is given back with this one: discard releases the id.
                throw new RedisSemaphoreException(describe() + ": the grant was gone from Redis before it reached the"
                        + " replicas (its lease ran out, or a failover lost it); it was given back", null);
            }
            permit.extend(sent + leaseNanos - marginNanos); // it renewed the lease (L3)
            return owner.waitForReplicas(node, replicas, Math.max(1, replicasTimeout.toMillis()), links);
        });
    }

    private void idleReached(Pending<?> p) {
        if (p.decide()) {
            waiting.remove(p.id, p);
            p.future.completeInternally(null, null);
        }
    }

    /** Fails a request that is still undecided; returns whether it was. */
    boolean fail(Pending<?> p, RuntimeException failure) {
        if (!p.decide()) {
            return false;
        }
        waiting.remove(p.id, p);
        boolean told = p.future.completeInternally(null, failure);
        if (!p.idle) {
            ended(told ? outcomeOf(failure) : p.future.givenUpAs(), p);
        }
        return true;
    }

    /** The caller is completing the future (cancel, timeout, interrupt): withdraw first, in Redis too (L1). */
    boolean withdraw(Pending<?> p) {
        if (!p.withdraw()) {
            return false;
        }
        waiting.remove(p.id, p);
        cancelOnServer(p.id);
        return true;
    }

    /** A withdrawn request's future is complete: report how its caller saw it end (L5). */
    void gaveUp(Pending<?> p, Outcome how) {
        if (!p.idle) {
            ended(how, p);
        }
    }

    /** Withdraws a request in Redis; if the reply is lost, it is sent again until Redis answers (L6, L11). */
    private void cancelOnServer(String id) {
        protocol.cancel(id).whenComplete((r, e) -> {
            if (e != null) {
                due(cancelsDue, id, this::resendCancel);
                LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": CANCEL " + id
                        + " got no reply; sent again at the next heartbeats until Redis answers", e);
            }
        });
    }

    /**
     * Keeps {@code id} due (L6). Added before {@code left} is read, as leave() sets {@code left} before it reads
     * the sets: one of the two sees the other, so a command that failed while the handle left is sent once more
     * by leave() or here (L11), never by neither.
     */
    private void due(Set<String> due, String id, Function<String, CompletableFuture<?>> resend) {
        due.add(id);
        if (root.left) {
            resend.apply(id);
        }
    }

    /** A resend of a lost CANCEL (the Heartbeat's, leave's): it stays due until Redis answers (L6). */
    CompletableFuture<?> resendCancel(String id) {
        return protocol.cancel(id).whenComplete((r, e) -> {
            if (e == null) {
                cancelsDue.remove(id);
            }
        });
    }

    /** A resend of a lost whole-grant RELEASE (the Heartbeat's, leave's): it stays due until Redis answers (L6). */
    CompletableFuture<?> resendRelease(String grantId) {
        return protocol.release(grantId, "", 0).whenComplete((r, e) -> {
            if (e == null) {
                releasesDue.remove(grantId);
            }
        });
    }

    private <T> T await(Pending<T> p, boolean timed, long deadline, Duration timeout)
            throws InterruptedException, TimeoutException {
        takeFirstReply(p, timed, deadline);
        Pending.Future<T> f = p.future;
        try {
            return timed ? f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS) : f.get();
        } catch (InterruptedException e) {
            InterruptedException mine = Failures.interruptedWhile(name, p.waitingFor());
            if (f.completeExceptionally(mine)) {
                throw mine;
            }
            // The outcome was decided first: keep it and the interrupt, never both thrown and granted.
            Thread.currentThread().interrupt();
            return outcome(f);
        } catch (TimeoutException e) {
            TimeoutException mine = Failures.timedOut(name, p.permits, timeout);
            if (f.completeExceptionally(mine)) {
                throw mine;
            }
            return outcome(f);
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        }
    }

    private static <T> T outcome(CompletableFuture<T> f) {
        try {
            return f.join();
        } catch (CompletionException e) {
            throw rethrow(e.getCause());
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new CompletionException(t);
    }

    // ---------------------------------------------------------------- outcomes (L5)

    /** The end of a request sent as a queued one: it waited only if Redis ever answered that it queued. */
    private void ended(Outcome outcome, Pending<?> p) {
        if (!p.everQueued()) {
            ended(outcome, p.permits);
        } else {
            endedAfterQueueing(outcome, p.permits, p.queuedAt, p.jfr);
        }
    }

    /** A request that failed for want of Redis is reported as UNAVAILABLE; one failed by a close as CLOSED. */
    private static Outcome outcomeOf(Throwable failure) {
        return failure instanceof SemaphoreClosedException ? Outcome.CLOSED : Outcome.UNAVAILABLE;
    }

    // ---------------------------------------------------------------- awaitIdle

    @Override
    public void awaitIdle() throws InterruptedException {
        notInterrupted("awaitIdle()");
        Pending<Void> p = start(0, true, true);
        try {
            await(p, false, 0L, null);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        return this.<Void>start(0, true, false).future;
    }

    // ---------------------------------------------------------------- messages

    /** A wake-up message (see {@link Protocol#wakeUps}). */
    void onMessage(String message) {
        for (Protocol.WakeUp w : Protocol.wakeUps(message)) {
            Pending<?> p = waiting.get(w.id());
            switch (w.kind()) {
                case GRANTED -> {
                    if (p != null) {
                        long base = p.queuedSeenAt; // read before queuedAgain(): keeps L12
                        p.queued(base); // a pushed grant: it was queued
                        if (p.permits > 0 && p.queuedAgain()) {
                            // keeps L12: it may be the wake-up of a grant Redis ended before the request was
                            // queued again under the same id
                            p.semaphore.confirm(p, "was pushed after its request was queued again under the same"
                                    + " id");
                        } else {
                            p.semaphore.granted(p, w.token(), base); // L10
                        }
                    }
                    // else settled here already (L2): its grant is held, or its CANCEL was sent
                }
                case CLOSED -> {
                    sawClosed();
                    if (p != null && !p.idle) {
                        p.semaphore.fail(p, p.semaphore.closedFailure(p.what()));
                    }
                }
                case IDLE -> {
                    if (p != null) {
                        p.semaphore.idleReached(p);
                    }
                }
                default -> LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": unknown wake-up " + w);
            }
        }
    }

    // ---------------------------------------------------------------- permits

    LettucePermit newPermit(String grantId, long permits, long token, long sentAt) {
        LettucePermit p = new LettucePermit(this, grantId, permits, token, sentAt + leaseNanos - marginNanos,
                listeners.now());
        if (grantId != null) {
            held.put(grantId, p);
            heartbeat.watch(p.deadline()); // keeps H5 for a grant handed over with little of its lease left
        }
        return p;
    }

    /**
     * A new request or grant id, unique across processes: this handle's id, ':' and a counter. acquire.lua
     * reads a queued request's wake-up channel from it.
     */
    String nextId() {
        return handleId + ":" + owner.nextCount();
    }

    Listeners listeners() {
        return listeners;
    }

    /**
     * Releases a whole grant, never throwing. A release whose reply is lost is sent again at the next
     * heartbeats until Redis answers (L6), and once more when the handle leaves (L11); the lease ends it if
     * neither reaches Redis.
     */
    void releaseQuietly(String grantId) {
        try {
            // Not refused once left, unlike sync(): a permit emptied just before leave() swept `held` is
            // released by nobody else (L11).
            owner.await(blocking.release(grantId, "", 0), describe() + ": release of grant " + grantId);
        } catch (RuntimeException e) {
            due(releasesDue, grantId, this::resendRelease);
            LOG.log(System.Logger.Level.WARNING, () -> describe() + ": could not release grant " + grantId
                    + " now; it is sent again at the next heartbeat or when this handle leaves (and its lease"
                    + " ends it otherwise): " + e.getMessage());
        }
    }

    /** Waits for a reply of this handle's own, within the command timeout; refused once this process left. */
    <T> T sync(String what, CompletableFuture<T> reply) {
        if (root.left) {
            throw closedLocally(what);
        }
        return owner.await(reply, describe() + ": " + what);
    }

    // ---------------------------------------------------------------- resizing

    @Override
    public void setPermits(long limit) {
        notAPartition("setPermits(" + limit + ")");
        Checks.limit(limit, root.ceiling, name);
        Protocol.LimitChange c = sync("setPermits(" + limit + ")", blocking.setLimit("set", limit));
        if (!c.inRange()) {
            root.ceiling = c.max();
            Checks.limit(limit, c.max(), name); // throws: the stored ceiling is lower than this handle knew
        }
        listeners.limitChanged(c.oldLimit(), c.newLimit());
    }

    @Override
    public long addPermits(long n) {
        notAPartition("addPermits(" + n + ")");
        Checks.nonNegative("addPermits: n", n);
        Protocol.LimitChange c = sync("addPermits(" + n + ")", blocking.setLimit("add", Math.min(n, MAX_PERMITS)));
        listeners.limitChanged(c.oldLimit(), c.newLimit());
        return c.newLimit() - c.oldLimit();
    }

    @Override
    public long reducePermits(long n) {
        notAPartition("reducePermits(" + n + ")");
        Checks.nonNegative("reducePermits: n", n);
        Protocol.LimitChange c = sync("reducePermits(" + n + ")",
                blocking.setLimit("reduce", Math.min(n, MAX_PERMITS)));
        listeners.limitChanged(c.oldLimit(), c.newLimit());
        return c.oldLimit() - c.newLimit();
    }

    // ---------------------------------------------------------------- close

    /** Closes it in Redis; the cause, when this call closed it, is this handle's alone (other processes see none). */
    @Override
    protected void closeWith(Throwable cause) {
        notAPartition(cause == null ? "close()" : "close(" + cause + ")");
        if (root.left) {
            return; // this process left: closed here already, and it no longer speaks for the fleet
        }
        boolean closedNow = sync(cause == null ? "close()" : "close(" + cause + ")", blocking.close(handleId));
        if (closedNow && cause != null) {
            keepCloseCause(cause); // before sawClosed(): whoever sees knownClosed sees it (A2)
            for (LettuceSemaphore v : views) {
                v.keepCloseCause(cause); // the partitions close with their parent (API.md §11a)
            }
        }
        sawClosed();
        // Redis removed every queued acquire of every process and told the others; ours are failed here.
        for (Pending<?> p : waiting.values()) {
            if (!p.idle) {
                p.semaphore.fail(p, p.semaphore.closedFailure(p.what())); // L10
            }
        }
        if (closedNow) {
            listeners.closed();
        }
    }

    /** This handle learnt that the semaphore is closed: later acquires fail without a round trip. */
    void sawClosed() {
        root.knownClosed = true;
    }

    @Override
    public boolean isClosed() {
        return root.left || root.knownClosed || status("isClosed()").closed();
    }

    private void refuseIfKnownClosed(String what, long permits) {
        if (root.knownClosed || root.left) {
            ended(Outcome.CLOSED, permits);
            throw root.left ? closedLocally(what) : closedFailure(what);
        }
    }

    private CompletableFuture<Permit> refusedIfKnownClosed(String what, long permits) {
        if (!root.knownClosed && !root.left) {
            return null;
        }
        ended(Outcome.CLOSED, permits);
        return CompletableFuture.failedFuture(root.left ? closedLocally(what) : closedFailure(what));
    }

    /** This process leaves: fail its waiters, release its grants (best effort), stop renewing. */
    void leave() {
        leave(null);
    }

    /**
     * As {@link #leave()}, refusing what comes after with {@code because} (null: this process's RedisSemaphores
     * closed); the semaphore stays open in Redis for every other handle and process. Waits for Redis's replies
     * within the command timeout, no longer: what got no reply by then is left to the leases (L11).
     */
    void leave(String because) {
        awaitLeft(leaving(because));
    }

    /**
     * Starts leaving (see {@link #leave(String)}) without waiting: returns when every command it sends has an
     * answer or failed, so that a process closing many handles waits one command timeout for all of them.
     */
    CompletableFuture<Void> leaving(String because) {
        if (because != null) {
            root.leftBecause = because; // before left: whoever sees left sees why
        }
        root.left = true; // before the sets are read: keeps L11 with due()
        ScheduledFuture<?> t = ticker;
        if (t != null) {
            t.cancel(false);
        }
        long deadline = System.nanoTime() + owner.commandTimeout.toNanos();
        List<CompletableFuture<?>> sent = new ArrayList<>();
        for (Pending<?> p : waiting.values()) {
            if (p.semaphore.fail(p, p.semaphore.closedLocally(p.what()))) { // L10
                sent.add(sendUntil(() -> protocol.cancel(p.id), deadline));
            }
        }
        for (LettucePermit p : held.values()) {
            String id = p.abandon();
            if (id != null) {
                sent.add(sendUntil(() -> protocol.release(id, "", 0), deadline));
            }
        }
        held.clear();
        // L11: what no heartbeat will send again now. A tick that is running may send the same: both scripts
        // are idempotent per id (L6), so the second run changes nothing.
        for (String id : cancelsDue) {
            sent.add(sendUntil(() -> resendCancel(id), deadline));
        }
        for (String id : releasesDue) {
            sent.add(sendUntil(() -> resendRelease(id), deadline));
        }
        return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
    }

    /**
     * L11: sends one of leave()'s commands, and again while it is refused at once, until Redis answers or
     * {@code deadline} (nanoTime) passes. A handle often leaves right after a fault: while the connection is
     * opened again, commands are refused at once (REJECT_COMMANDS), and one try would leave it all to the leases.
     * A command that waits for its reply is not sent again: its own timeout ends after the deadline.
     */
    private CompletableFuture<Void> sendUntil(Supplier<CompletableFuture<?>> send, long deadline) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        sendUntil(send, deadline, done);
        return done;
    }

    private void sendUntil(Supplier<CompletableFuture<?>> send, long deadline, CompletableFuture<Void> done) {
        CompletableFuture<?> reply;
        try {
            reply = send.get();
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((r, e) -> {
            if (e == null) {
                done.complete(null);
                return;
            }
            if (deadline - System.nanoTime() <= LEAVE_RETRY_NANOS) {
                done.completeExceptionally(e);
                return;
            }
            try {
                owner.timer.schedule(() -> owner.execute(() -> sendUntil(send, deadline, done)), LEAVE_RETRY_NANOS,
                        TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException closed) {
                done.completeExceptionally(e); // this process closed its connections: nothing more can be sent
            }
        });
    }

    /** Waits for what {@link #leaving} sent, within the command timeout; never throws. */
    void awaitLeft(CompletableFuture<Void> sent) {
        try {
            sent.get(owner.commandTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": some releases failed on leaving; their leases"
                    + " will end them", e);
        }
    }

    // ---------------------------------------------------------------- queries

    /** Reads the counts (STATUS); {@code what} names the caller's call in a failure. */
    Protocol.Status status(String what) {
        Protocol.Status s = sync(what, blocking.status());
        root.ceiling = s.max();
        root.last = new Read(s, System.nanoTime());
        if (s.closed()) {
            sawClosed();
        }
        return s;
    }

    @Override
    public State state() {
        Protocol.Status s = status("state");
        return new State(s.limit(), s.max(), available(s), queued(s), root.left || s.closed(), true);
    }

    /** A view's: what a request of its partition could take now; the handle's: limit - used (API.md §11a). */
    private long available(Protocol.Status s) {
        return root == this ? s.limit() - s.used() : s.slots().get(slot).capacity();
    }

    /** A view's own queue; the handle's: every queue's. */
    private int queued(Protocol.Status s) {
        return root == this ? s.queued() : s.slots().get(slot).queued();
    }

    @Override
    public long permits() {
        return status("permits()").limit();
    }

    /** The ceiling is fixed when the semaphore is created: known from the build, no round trip. */
    @Override
    public long maxPermits() {
        return root.ceiling;
    }

    @Override
    public long availablePermits() {
        return available(status("availablePermits()"));
    }

    @Override
    public int queueLength() {
        return queued(status("queueLength()"));
    }

    // ---------------------------------------------------------------- partitions (API.md §11a)

    @Override
    public RedisSemaphore partition(String partition) {
        Objects.requireNonNull(partition, "name");
        if (root != this) {
            throw new IllegalArgumentException(describe() + " has no partition '" + partition + "'; it is a partition of "
                    + root.describe());
        }
        PartitionSpec spec = partitions;
        if (spec == null) {
            throw new IllegalArgumentException(describe() + " has no partition '" + partition + "'; it has no partitions"
                    + " (in Redis: the stored partitions are used, whatever a builder declared)");
        }
        int i = spec.indexOf(partition);
        if (i < 0) {
            throw spec.unknown(name, partition);
        }
        return views[i];
    }

    @Override
    public List<String> partitionNames() {
        PartitionSpec spec = partitions;
        return root != this || spec == null ? List.of() : spec.names();
    }

    /** One round trip (STATUS) for every partition's counts; none for a view or an unpartitioned semaphore. */
    @Override
    public List<PartitionState> partitionStates() {
        PartitionSpec spec = partitions;
        if (root != this || spec == null) {
            return List.of();
        }
        List<Protocol.Slot> slots = status("partitionStates()").slots();
        List<PartitionState> out = new ArrayList<>(spec.size());
        for (int i = 0; i < spec.size() && i < slots.size(); i++) {
            Protocol.Slot s = slots.get(i);
            out.add(new PartitionState(spec.names().get(i), spec.share(i), s.held(), s.guarantee(), s.queued()));
        }
        return out;
    }

    /** Resizing and closing belong to the parent (API.md §11a). */
    private void notAPartition(String what) {
        if (root != this) {
            throw new UnsupportedOperationException(what + " on partition '" + name + "': resize or close its parent, "
                    + root.describe());
        }
    }

    /** The views, for tests. */
    List<LettuceSemaphore> views() {
        return Arrays.asList(views);
    }

    @Override
    public Fairness fairness() {
        return Fairness.FIFO;
    }

    @Override
    public Duration lease() {
        return lease;
    }

    /**
     * Names the semaphore and shows the counts of the last read, saying how old they are: toString never
     * reads Redis (a debugger or a log line must not cost a round trip), so they may be stale.
     */
    @Override
    public String toString() {
        Read r = root.last;
        String counts = "";
        if (r != null) {
            Protocol.Status s = r.status();
            counts = ", as read " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - r.at()) + " ms ago: "
                    + Failures.counts(s.limit(), s.limit() - s.used(), s.queued(), s.closed());
        }
        return "RedisSemaphore[name=" + name + ", lease=" + lease + (root.left ? ", left" : "") + counts + "]";
    }

    // ---------------------------------------------------------------- failures

    private IllegalArgumentException tooLarge(long permits, long max) {
        root.ceiling = max;
        return Checks.tooLarge(permits, max, name);
    }

    private SemaphoreClosedException closedLocally(String what) {
        return new SemaphoreClosedException(describe() + ": " + root.leftBecause + ": " + what + " refused");
    }
}
