package dev.sema.redis;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Listeners;
import dev.sema.internal.StateSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The {@link RedisSemaphore} handle: the state is in Redis (see the scripts, whose shared head
 * {@code common.lua} states the server-side invariants); this object tracks only this process's own
 * waiters and grants, renews them, and turns replies and wake-up messages into outcomes.
 */
final class LettuceSemaphore implements RedisSemaphore, StateSource {

    /*
     * Implementation overview
     *
     * Redis holds the truth (keys sem:{name}:meta, holders, leases, queue, waiters, wlive; see
     * common.lua). Every change is one script, atomic in Redis, idempotent per request id.
     *
     * Local state:
     *   waiting  request id -> Pending: this handle's queued requests whose outcome is not yet known here.
     *   held     grant id -> LettucePermit: this handle's live grants, renewed by tick().
     *
     * Invariants:
     *  L1: a Pending's outcome is decided by one CAS (Pending.decide / withdraw); whoever withdraws sends
     *      CANCEL, which Redis runs after the request's ACQUIRE (same connection, so same order) and which
     *      releases a grant that raced with it. A grant reaching a decided-withdrawn Pending is ignored.
     *  L2: a Pending stays in `waiting` until its permit is in `held`, so a wake-up message for an id in
     *      neither map is a grant nobody here will use: it is cancelled (released) at once.
     *  L3: a permit's local lease deadline is never later than Redis's: it is measured from when the
     *      request that set Redis's deadline was sent (for a pushed grant, from the last request that
     *      still found the waiter queued, which was before the grant).
     *  L4: a permit is renewed under the grant id Redis knows: ops that rotate the id (release of part,
     *      split, merge) bump the permit's epoch, and renewal results for an older epoch are ignored.
     *
     * Threads: replies and messages are handled on virtual threads (RedisSemaphores.execute), ticks on the
     * timer thread; neither blocks on Redis except LettucePermit ops, which hold only that permit's lock.
     */

    private static final System.Logger LOG = System.getLogger(LettuceSemaphore.class.getName());

    private final RedisSemaphores owner;
    private final String name;
    private final String handleId;
    private final String[] keys;
    private final String channel;
    private final Duration lease;
    private final String leaseMs;
    private final String waiterTtlMs;
    private final String initLimit;
    private final String initMax;
    private final long leaseNanos;
    private final long marginNanos;
    private final long renewPeriodNanos;
    private final long tickNanos;

    private final Listeners listeners = new Listeners(this);
    final ConcurrentHashMap<String, Pending<?>> waiting = new ConcurrentHashMap<>();
    final ConcurrentHashMap<String, LettucePermit> held = new ConcurrentHashMap<>();

    private final AtomicBoolean renewInFlight = new AtomicBoolean();
    private volatile boolean renewRequested;
    private volatile long ceiling;
    private volatile Status last;
    private volatile boolean left;
    private volatile ScheduledFuture<?> ticker;
    /** For tests: stops sending renewals, as a process that hangs would (local deadlines still apply). */
    volatile boolean renewalsSuspended;

    record Status(long limit, long max, long used, int queued, boolean closed) {
    }

    LettuceSemaphore(RedisSemaphores owner, String name, String handleId, long permits, long ceiling,
            Duration lease, boolean create) {
        this.owner = owner;
        this.name = name;
        this.handleId = handleId;
        String prefix = "sem:{" + name + "}:";
        this.keys = new String[] {prefix + "meta", prefix + "holders", prefix + "leases", prefix + "queue",
                prefix + "waiters", prefix + "wlive"};
        this.channel = prefix + "wake:" + handleId;
        this.lease = lease;
        long leaseMillis = lease.toMillis();
        long ttlMillis = Math.min(leaseMillis, 10_000);
        this.leaseMs = Long.toString(leaseMillis);
        this.waiterTtlMs = Long.toString(ttlMillis);
        this.initLimit = create ? Long.toString(permits) : "";
        this.initMax = create ? Long.toString(ceiling) : "";
        this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        this.marginNanos = leaseNanos / 10;
        this.renewPeriodNanos = leaseNanos / 3;
        this.tickNanos = Math.min(TimeUnit.SECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(ttlMillis) / 3);
        this.ceiling = ceiling;
    }

    String channel() {
        return channel;
    }

    RedisSemaphores owner() {
        return owner;
    }

    /** Reads (or creates) the semaphore, then starts the renewal ticks. */
    void start() {
        status();
        ticker = owner.timer.scheduleWithFixedDelay(this::tick, tickNanos, tickNanos, TimeUnit.NANOSECONDS);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Permit acquire(long permits) throws InterruptedException {
        checkRequest(permits);
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquire(" + permits + ") on " + describe());
        }
        Pending<Permit> p = start(permits, false);
        try {
            return await(p, false, 0L, null);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        checkRequest(permits);
        Objects.requireNonNull(timeout, "timeout");
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquire(" + permits + ", " + timeout + ") on "
                    + describe());
        }
        long nanos = toNanos(timeout);
        if (nanos <= 0) {
            Optional<Permit> p = tryAcquire(permits);
            if (p.isEmpty()) {
                throw timeoutException(permits, timeout);
            }
            return p.get();
        }
        long deadline = System.nanoTime() + Math.min(nanos, Long.MAX_VALUE / 4);
        Pending<Permit> p = start(permits, false);
        return await(p, nanos != Long.MAX_VALUE, deadline, timeout);
    }

    @Override
    public Optional<Permit> tryAcquire(long permits) {
        checkRequest(permits);
        String what = "tryAcquire(" + permits + ")";
        ensureJoined(what);
        String id = owner.nextId();
        long sent = System.nanoTime();
        List<Object> r;
        try {
            r = callSync(what, Script.ACQUIRE, id, handleId, Long.toString(permits), leaseMs, waiterTtlMs, "try");
        } catch (RedisSemaphoreException e) {
            cancelOnServer(id); // the request may still reach Redis: do not let a grant wait for its lease
            throw e;
        }
        return switch (str(r.get(0))) {
            case "GRANTED" -> Optional.of(newPermit(permits == 0 ? null : id, permits, num(r.get(1)), sent));
            case "NOT_AVAILABLE" -> Optional.empty();
            case "CLOSED" -> throw closed(what);
            case "ERR_MAX" -> throw tooLarge(permits, num(r.get(1)));
            default -> throw unexpected(what, r);
        };
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits) {
        checkRequest(permits);
        return this.<Permit>start(permits, false).future;
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        checkRequest(permits);
        Objects.requireNonNull(timeout, "timeout");
        long nanos = toNanos(timeout);
        if (nanos <= 0) {
            return tryAcquireAsync(permits, timeout);
        }
        Pending<Permit> p = start(permits, false);
        if (nanos != Long.MAX_VALUE) {
            owner.failAfter(p.future, nanos, () -> timeoutException(permits, timeout));
        }
        return p.future;
    }

    private CompletableFuture<Permit> tryAcquireAsync(long permits, Duration timeout) {
        String what = "acquireAsync(" + permits + ", " + timeout + ")";
        if (left) {
            return CompletableFuture.failedFuture(closedLocally(what));
        }
        String id = owner.nextId();
        long sent = System.nanoTime();
        CompletableFuture<Permit> result = new CompletableFuture<>();
        call(Script.ACQUIRE, id, handleId, Long.toString(permits), leaseMs, waiterTtlMs, "try")
                .whenComplete((r, e) -> {
                    if (e != null) {
                        cancelOnServer(id);
                        result.completeExceptionally(owner.asRuntime(describe() + ": " + what, e));
                        return;
                    }
                    try {
                        checkErrors(what, r);
                        switch (str(r.get(0))) {
                            case "GRANTED" -> {
                                Permit p = newPermit(permits == 0 ? null : id, permits, num(r.get(1)), sent);
                                if (!result.complete(p)) {
                                    p.close();
                                }
                            }
                            case "NOT_AVAILABLE" -> result.completeExceptionally(timeoutException(permits, timeout));
                            case "CLOSED" -> result.completeExceptionally(closed(what));
                            case "ERR_MAX" -> result.completeExceptionally(tooLarge(permits, num(r.get(1))));
                            default -> result.completeExceptionally(unexpected(what, r));
                        }
                    } catch (RuntimeException ex) {
                        result.completeExceptionally(ex);
                    }
                });
        return result;
    }

    /** Registers and sends a queued request (acquire or awaitIdle). */
    private <T> Pending<T> start(long permits, boolean idle) {
        Pending<T> p = new Pending<>(this, owner.nextId(), permits, idle);
        if (left) {
            p.decide();
            p.future.completeInternally(null, closedLocally(p.what()));
            return p;
        }
        waiting.put(p.id, p);
        sendAcquire(p, false);
        return p;
    }

    /**
     * Sends ACQUIRE for {@code p}. A first request that fails reaches the caller at once (Redis is down at
     * acquire time); a request sent again for a waiter that Redis lost ({@code again}) is retried at the next
     * heartbeat instead, so a waiter rides out a restart or a dropped connection, bounded by its own timeout.
     */
    private void sendAcquire(Pending<?> p, boolean again) {
        long sent = System.nanoTime();
        call(Script.ACQUIRE, p.id, handleId, Long.toString(p.permits), leaseMs, waiterTtlMs, p.idle ? "idle" : "wait")
                .whenComplete((r, e) -> onAcquireReply(p, r, e, sent, again));
    }

    private void onAcquireReply(Pending<?> p, List<Object> r, Throwable e, long sent, boolean again) {
        if (e != null) {
            if (again && p.isWaiting()) {
                LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": queueing " + p.id + " again failed;"
                        + " retried at the next heartbeat", e);
                return;
            }
            if (fail(p, owner.asRuntime(describe() + ": " + p.what(), e))) {
                cancelOnServer(p.id);
            }
            return;
        }
        try {
            checkErrors(p.what(), r);
            switch (str(r.get(0))) {
                case "GRANTED" -> granted(p, num(r.get(1)), sent, false);
                case "QUEUED" -> p.seenQueued(sent);
                case "IDLE" -> idleReached(p);
                case "CLOSED" -> fail(p, closed(p.what()));
                case "ERR_MAX" -> fail(p, tooLarge(p.permits, num(r.get(1))));
                default -> fail(p, unexpected(p.what(), r));
            }
        } catch (RuntimeException ex) {
            if (fail(p, ex)) {
                cancelOnServer(p.id);
            }
        }
    }

    @SuppressWarnings("unchecked")
    private void granted(Pending<?> p, long token, long base, boolean pushed) {
        if (!p.decide()) {
            return; // keeps L1: withdrawn, and its CANCEL releases this grant in Redis
        }
        LettucePermit permit = newPermit(p.permits == 0 ? null : p.id, p.permits, token, base);
        waiting.remove(p.id, p); // keeps L2: only now that the permit is in `held`
        if (pushed) {
            renewSoon(); // replaces the conservative deadline (L3) with a measured one
        }
        if (!((Pending.Future<Permit>) p.future).completeInternally(permit, null)) {
            permit.close(); // the caller gave up first (cancel, timeout): give the grant back
        }
    }

    private void idleReached(Pending<?> p) {
        if (p.decide()) {
            waiting.remove(p.id, p);
            p.future.completeInternally(null, null);
        }
    }

    private boolean fail(Pending<?> p, RuntimeException failure) {
        if (p.decide()) {
            waiting.remove(p.id, p);
            p.future.completeInternally(null, failure);
            return true;
        }
        return false;
    }

    /** Called when the caller completed the future first: withdraw in Redis. */
    void withdraw(Pending<?> p) {
        if (p.withdraw()) {
            waiting.remove(p.id, p);
            cancelOnServer(p.id);
        }
    }

    private CompletableFuture<?> cancelOnServer(String id) {
        return call(Script.CANCEL, id).whenComplete((r, e) -> {
            if (e != null) {
                LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": CANCEL " + id
                        + " failed; the waiter time-to-live or the lease will end it", e);
            }
        });
    }

    private <T> T await(Pending<T> p, boolean timed, long deadline, Duration timeout)
            throws InterruptedException, TimeoutException {
        Pending.Future<T> f = p.future;
        try {
            return timed ? f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS) : f.get();
        } catch (InterruptedException e) {
            if (f.completeExceptionally(new CancellationException(p.what() + " interrupted"))) {
                throw new InterruptedException("interrupted while waiting: " + p.what() + " on " + describe());
            }
            // The outcome was decided first: keep it and the interrupt, never both thrown and granted.
            Thread.currentThread().interrupt();
            return outcome(f);
        } catch (TimeoutException e) {
            TimeoutException mine = timeoutException(p.permits, timeout);
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

    // ---------------------------------------------------------------- awaitIdle

    @Override
    public void awaitIdle() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before awaitIdle() on " + describe());
        }
        Pending<Void> p = start(0, true);
        try {
            await(p, false, 0L, null);
        } catch (TimeoutException impossible) {
            throw new AssertionError(impossible);
        }
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        return this.<Void>start(0, true).future;
    }

    // ---------------------------------------------------------------- messages and renewals

    /** A wake-up message: 'G id token' granted, 'C id' failed by close, 'I id' idle reached; ';'-joined. */
    void onMessage(String message) {
        for (String part : message.split(";")) {
            String[] f = part.split(" ");
            if (f.length < 2) {
                continue;
            }
            Pending<?> p = waiting.get(f[1]);
            switch (f[0]) {
                case "G" -> {
                    if (p != null) {
                        granted(p, Long.parseLong(f[2]), p.queuedSeenAt, true);
                    } else if (!held.containsKey(f[1])) {
                        cancelOnServer(f[1]); // keeps L2: a grant nobody here will use
                    }
                }
                case "C" -> {
                    if (p != null && !p.idle) {
                        fail(p, closed(p.what()));
                    }
                }
                case "I" -> {
                    if (p != null) {
                        idleReached(p);
                    }
                }
                default -> LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": unknown message " + part);
            }
        }
    }

    void renewSoon() {
        renewRequested = true;
        try {
            owner.timer.execute(this::tick);
        } catch (java.util.concurrent.RejectedExecutionException afterClose) {
            // leaving: nothing to renew
        }
    }

    /** A grant as sent in one RENEW: the permit, the grant id Redis knows, and the permit's epoch then (L4). */
    record HeldSnapshot(LettucePermit permit, String id, long epoch) {
    }

    /** Checks local lease deadlines, then renews grants and heartbeats waiters (one RENEW) when due. */
    void tick() {
        try {
            if (left) {
                return;
            }
            long now = System.nanoTime();
            boolean due = false;
            for (LettucePermit p : held.values()) {
                p.checkDeadline(now);
                // Renew a grant a third of the lease after its lease was last set (deadline = sent + lease - margin).
                due |= p.deadline() - now <= leaseNanos - marginNanos - renewPeriodNanos + tickNanos / 2;
            }
            if (!(due || renewRequested || !waiting.isEmpty()) || renewalsSuspended) {
                return;
            }
            if (!renewInFlight.compareAndSet(false, true)) {
                return;
            }
            renewRequested = false;
            List<HeldSnapshot> grants = new ArrayList<>();
            for (LettucePermit p : held.values()) {
                HeldSnapshot s = p.snapshot();
                if (s != null) {
                    grants.add(s);
                }
            }
            List<Pending<?>> waiters = new ArrayList<>();
            for (Pending<?> p : waiting.values()) {
                if (p.isWaiting()) {
                    waiters.add(p);
                }
            }
            if (grants.isEmpty() && waiters.isEmpty()) {
                renewInFlight.set(false);
                return;
            }
            String[] args = new String[4 + grants.size() + waiters.size()];
            args[0] = handleId;
            args[1] = leaseMs;
            args[2] = waiterTtlMs;
            args[3] = Integer.toString(grants.size());
            int i = 4;
            for (HeldSnapshot s : grants) {
                args[i++] = s.id();
            }
            for (Pending<?> p : waiters) {
                args[i++] = p.id;
            }
            long sent = System.nanoTime();
            call(Script.RENEW, args).whenComplete((r, e) -> {
                try {
                    onRenewed(grants, waiters, sent, r, e);
                } finally {
                    renewInFlight.set(false);
                }
            });
        } catch (RuntimeException e) {
            renewInFlight.set(false);
            LOG.log(System.Logger.Level.WARNING, describe() + ": renewal tick failed", e);
        }
    }

    @SuppressWarnings("unchecked")
    private void onRenewed(List<HeldSnapshot> grants, List<Pending<?>> waiters, long sent, List<Object> r,
            Throwable e) {
        if (e != null) {
            LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": renewal failed (retried; leases are lost only"
                    + " when their local deadline passes)", e);
            return;
        }
        String status = str(r.get(0));
        if (status.startsWith("ERR_")) {
            // The semaphore is gone (and may not be created) or its key is corrupt: nothing here can be kept.
            RedisSemaphoreException failure;
            try {
                checkErrors("renewal", r);
                failure = unexpected("renewal", r);
            } catch (RedisSemaphoreException refused) {
                failure = refused;
            }
            for (HeldSnapshot s : grants) {
                s.permit().lost(s.epoch(), failure.getMessage());
            }
            for (Pending<?> p : waiters) {
                fail(p, failure);
            }
            return;
        }
        boolean closed = "1".equals(status);
        Set<String> lost = new HashSet<>();
        for (Object o : (List<Object>) r.get(1)) {
            lost.add(str(o));
        }
        for (HeldSnapshot s : grants) {
            if (lost.contains(s.id())) {
                s.permit().lost(s.epoch(), "Redis no longer holds grant " + s.id()
                        + " (its lease ended, or the data was lost)");
            } else {
                s.permit().renewed(s.epoch(), sent + leaseNanos - marginNanos);
            }
        }
        List<Object> granted = (List<Object>) r.get(2);
        if (!granted.isEmpty()) {
            owner.subscribeAgain(channel); // a wake-up may have been lost with the subscription
        }
        Set<String> done = new HashSet<>();
        for (int i = 0; i + 1 < granted.size(); i += 2) {
            String id = str(granted.get(i));
            done.add(id);
            Pending<?> p = waiting.get(id);
            if (p != null) {
                granted(p, num(granted.get(i + 1)), sent, false);
            }
        }
        for (Object o : (List<Object>) r.get(3)) {
            String id = str(o);
            done.add(id);
            Pending<?> p = waiting.get(id);
            if (p == null || !p.isWaiting()) {
                continue;
            }
            if (closed && !p.idle) {
                fail(p, closed(p.what()));
            } else {
                sendAcquire(p, true); // reaped or lost with the data: queue again (at the back), same id
            }
        }
        for (Pending<?> p : waiters) {
            if (!done.contains(p.id)) {
                p.seenQueued(sent);
            }
        }
    }

    // ---------------------------------------------------------------- permits

    LettucePermit newPermit(String grantId, long permits, long token, long sentAt) {
        LettucePermit p = new LettucePermit(this, grantId, permits, token, sentAt + leaseNanos - marginNanos);
        if (grantId != null) {
            held.put(grantId, p);
        }
        return p;
    }

    String nextId() {
        return owner.nextId();
    }

    /** Releases a whole grant, never throwing: a release that cannot be delivered is left to the lease. */
    void releaseQuietly(String grantId) {
        try {
            callSync("release of grant " + grantId, Script.RELEASE, grantId, "", "0");
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, () -> describe() + ": could not release grant " + grantId
                    + "; its lease will end it: " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------- resizing

    @Override
    public void setPermits(long limit) {
        long c = ceiling;
        if (limit < 0 || limit > c) {
            throw new IllegalArgumentException("setPermits(" + limit + "): the limit must be between 0 and maxPermits ("
                    + c + ") of " + describe());
        }
        List<Object> r = callSync("setPermits(" + limit + ")", Script.SET_LIMIT, "set", Long.toString(limit));
        if ("ERR_RANGE".equals(str(r.get(0)))) {
            ceiling = num(r.get(1));
            throw new IllegalArgumentException("setPermits(" + limit + "): the limit must be between 0 and maxPermits ("
                    + ceiling + ") of " + describe());
        }
    }

    @Override
    public long addPermits(long n) {
        nonNegative("addPermits: n", n);
        List<Object> r = callSync("addPermits(" + n + ")", Script.SET_LIMIT, "add",
                Long.toString(Math.min(n, MAX_PERMITS)));
        return num(r.get(2)) - num(r.get(1));
    }

    @Override
    public long reducePermits(long n) {
        nonNegative("reducePermits: n", n);
        List<Object> r = callSync("reducePermits(" + n + ")", Script.SET_LIMIT, "reduce",
                Long.toString(Math.min(n, MAX_PERMITS)));
        return num(r.get(1)) - num(r.get(2));
    }

    // ---------------------------------------------------------------- close

    @Override
    public void close() {
        callSync("close()", Script.CLOSE);
        // Redis removed every queued acquire of every process; fail ours now rather than on the message.
        for (Pending<?> p : waiting.values()) {
            if (!p.idle) {
                fail(p, closed(p.what()));
            }
        }
    }

    @Override
    public boolean isClosed() {
        return left || status().closed();
    }

    /** This process leaves: fail its waiters, release its grants (best effort), stop renewing. */
    void leave() {
        left = true;
        ScheduledFuture<?> t = ticker;
        if (t != null) {
            t.cancel(false);
        }
        List<CompletableFuture<?>> sent = new ArrayList<>();
        for (Pending<?> p : waiting.values()) {
            if (fail(p, closedLocally(p.what()))) {
                sent.add(cancelOnServer(p.id));
            }
        }
        for (LettucePermit p : held.values()) {
            String id = p.abandon();
            if (id != null) {
                sent.add(call(Script.RELEASE, id, "", "0"));
            }
        }
        held.clear();
        try {
            CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new))
                    .get(owner.commandTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> describe() + ": some releases failed on leaving; their leases"
                    + " will end them", e);
        }
    }

    // ---------------------------------------------------------------- queries

    Status status() {
        List<Object> r = callSync("status", Script.STATUS);
        Status s = new Status(num(r.get(0)), num(r.get(1)), num(r.get(2)), (int) num(r.get(3)),
                "1".equals(str(r.get(4))));
        ceiling = s.max();
        last = s;
        return s;
    }

    @Override
    public long permits() {
        return status().limit();
    }

    @Override
    public long maxPermits() {
        return status().max();
    }

    @Override
    public long availablePermits() {
        Status s = status();
        return s.limit() - s.used();
    }

    @Override
    public int queueLength() {
        return status().queued();
    }

    @Override
    public State state() {
        Status s = status();
        return new State(s.limit(), s.max(), s.limit() - s.used(), s.queued(), left || s.closed(), true);
    }

    @Override
    public Fairness fairness() {
        return Fairness.FIFO;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Duration lease() {
        return lease;
    }

    @Override
    public void addListener(SemaphoreListener listener) {
        listeners.add(listener);
    }

    @Override
    public boolean removeListener(SemaphoreListener listener) {
        return listeners.remove(listener);
    }

    @Override
    public String toString() {
        Status s = last;
        return "RedisSemaphore[name=" + name + (s == null ? "" : ", permits=" + s.limit() + ", available="
                + (s.limit() - s.used()) + ", queued=" + s.queued() + ", closed=" + s.closed())
                + ", lease=" + lease + (left ? ", left" : "") + "]";
    }

    String describe() {
        return "semaphore '" + name + "'";
    }

    // ---------------------------------------------------------------- calls and replies

    CompletableFuture<List<Object>> call(Script script, String... opArgs) {
        String[] args = new String[opArgs.length + 2];
        args[0] = initLimit;
        args[1] = initMax;
        System.arraycopy(opArgs, 0, args, 2, opArgs.length);
        return owner.eval(script, keys, args);
    }

    List<Object> callSync(String what, Script script, String... opArgs) {
        if (left) {
            throw closedLocally(what);
        }
        List<Object> r = owner.await(call(script, opArgs), describe() + ": " + what);
        checkErrors(what, r);
        return r;
    }

    private void checkErrors(String what, List<Object> r) {
        String status = str(r.get(0));
        if ("ERR_MISSING".equals(status)) {
            throw new RedisSemaphoreException(describe() + ": " + what + ": the semaphore does not exist in Redis (key "
                    + keys[0] + " is missing) and this handle was built with createIfMissing(false)", null);
        }
        if ("ERR_CORRUPT".equals(status)) {
            throw new RedisSemaphoreException(describe() + ": " + what + ": the key does not hold a semaphore: "
                    + str(r.get(1)), null);
        }
    }

    private RedisSemaphoreException unexpected(String what, List<Object> r) {
        return new RedisSemaphoreException(describe() + ": " + what + ": unexpected reply from Redis: " + r, null);
    }

    private IllegalArgumentException tooLarge(long permits, long max) {
        ceiling = max;
        return new IllegalArgumentException("requested " + permits + " permits, but a request must be between 0 and"
                + " maxPermits (" + max + ") of " + describe());
    }

    private void checkRequest(long permits) {
        long c = ceiling;
        if (permits < 0 || permits > c) {
            throw new IllegalArgumentException("requested " + permits + " permits, but a request must be between 0 and"
                    + " maxPermits (" + c + ") of " + describe());
        }
    }

    private void ensureJoined(String what) {
        if (left) {
            throw closedLocally(what);
        }
    }

    SemaphoreClosedException closed(String what) {
        return new SemaphoreClosedException(describe() + " is closed: " + what + " refused");
    }

    private SemaphoreClosedException closedLocally(String what) {
        return new SemaphoreClosedException(describe() + ": this process's RedisSemaphores is closed: " + what
                + " refused");
    }

    private TimeoutException timeoutException(long permits, Duration timeout) {
        return new TimeoutException("timed out after " + timeout + " waiting for " + permits + " permits of "
                + describe());
    }

    private static void nonNegative(String what, long n) {
        if (n < 0) {
            throw new IllegalArgumentException(what + " (" + n + ") must not be negative");
        }
    }

    private static long toNanos(Duration timeout) {
        if (timeout.isNegative()) {
            return 0;
        }
        try {
            return timeout.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }

    static String str(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }

    static long num(Object o) {
        return o instanceof Long l ? l : Long.parseLong(str(o));
    }
}
