package dev.sema;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The in-process {@link Semaphore}: one CAS on one state word when uncontended, a FIFO queue under a
 * lock otherwise. The contract is on {@link Semaphore}; this class adds no public API.
 */
final class LocalSemaphore implements Semaphore {

    /*
     * Implementation overview
     *
     * State word (`state`, one long): available permits, signed, in bits 63..3, and three flags:
     *   CLOSED (bit 0)  close() was called.
     *   QUEUED (bit 1)  the queue is not empty.
     *   IDLE   (bit 2)  an awaitIdle waiter is queued (barging arrivals must queue behind it).
     * One plain read therefore tells the fast path "enough free, nobody queued, open": for FIFO the
     * mask is CLOSED|QUEUED|IDLE, for BARGING CLOSED|IDLE. Since |available| <= MAX_PERMITS = 2^50,
     * available << 3 never overflows.
     *
     * Invariants:
     *  I1: available == limit - held, where held (>= 0) is what unreleased Permits hold; limit is in
     *      0..ceiling. available may be negative after the limit was lowered.
     *  I2: QUEUED is set iff the queue is not empty, IDLE iff it holds an idle waiter. Both are changed
     *      only under the lock, in the same CAS that reads `available`, so a release that saw QUEUED clear
     *      (and added its permits without the lock) happened before any waiter decided to queue.
     *  I3: when the lock is free, the head waiter does not fit: a WAITING head requests more than
     *      available (an idle head: held > 0). Every operation that adds permits or removes a head while
     *      the queue is not empty runs serveLocked() before unlocking.
     *  I4: every granted permit is held by exactly one Permit or returned; a waiter's outcome is decided
     *      by one CAS on Waiter.status (WAITING -> GRANTED | CANCELLED | CLOSED), and a grant whose future
     *      was completed by someone else first is given back.
     *  I5: waiters are granted in arrival order, serveLocked() stops at the first that does not fit.
     *
     * The lock guards the queue links (head, tail, Waiter.prev/next), idleWaiters, and every write of
     * `limit`, `queued` and the QUEUED/IDLE/CLOSED flags. `available` moves by CAS without the lock on
     * the fast paths (acquire when the mask allows, release while QUEUED is clear).
     * Nothing is completed, unparked or called back while the lock is held.
     *
     * field        read          write
     * state        volatile      CAS (flags only under lock)
     * limit        volatile      volatile, under lock
     * queued       volatile      volatile, under lock
     * head/tail    under lock    under lock
     */

    static final int SHIFT = 3;
    static final long CLOSED = 1L;
    static final long QUEUED = 2L;
    static final long IDLE = 4L;
    private static final long FLAGS = CLOSED | QUEUED | IDLE;

    private static final VarHandle STATE;
    private static final AtomicLong NAMES = new AtomicLong();

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(LocalSemaphore.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String name;
    private final long ceiling;
    private final Fairness fairness;
    private final long fastMask;
    private final ReentrantLock lock = new ReentrantLock();
    /** Null when leak detection is off, so the fast path pays one test of a final field. */
    private final LeakDetection leakDetection;
    private final AtomicLong leaked = new AtomicLong();
    /** The periodic refill, if built with one; cancelled by close(). */
    volatile ScheduledFuture<?> refillTask;

    private volatile long state;
    private volatile long limit;
    private volatile int queued;
    private Waiter head;
    private Waiter tail;
    private int idleWaiters;

    LocalSemaphore(String name, long permits, long ceiling, Fairness fairness, LeakDetection leakDetection) {
        this.name = name;
        this.leakDetection = leakDetection == LeakDetection.OFF ? null : leakDetection;
        this.ceiling = ceiling;
        this.fairness = fairness;
        this.fastMask = fairness == Fairness.FIFO ? FLAGS : (CLOSED | IDLE);
        this.limit = permits;
        this.state = permits << SHIFT;
    }

    static String generatedName() {
        return "semaphore-" + NAMES.incrementAndGet();
    }

    static long available(long s) {
        return s >> SHIFT;
    }

    private LocalPermit newPermit(long permits) {
        LeakDetection level = leakDetection;
        return level == null ? new PlainPermit(this, permits) : TrackedPermit.track(this, permits, level);
    }

    /** Counts permits returned by leak detection; see {@link #leakedPermits()}. */
    void recordLeak(long permits) {
        leaked.addAndGet(permits);
    }

    /** How many permits leak detection has returned so far (for tests). */
    long leakedPermits() {
        return leaked.get();
    }

    private boolean casState(long expected, long next) {
        return STATE.compareAndSet(this, expected, next);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Permit acquire(long permits) throws InterruptedException {
        checkRequest(permits);
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquire(" + permits + ") on " + describe());
        }
        if (tryFast(permits)) {
            return newPermit(permits);
        }
        return acquireSlow(permits, false, 0L);
    }

    @Override
    public Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        checkRequest(permits);
        Objects.requireNonNull(timeout, "timeout");
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquire(" + permits + ", " + timeout + ") on "
                    + describe());
        }
        if (tryFast(permits)) {
            return newPermit(permits);
        }
        long nanos = Timeouts.toNanos(timeout);
        Permit p = acquireSlow(permits, nanos != Long.MAX_VALUE, System.nanoTime() + Math.min(nanos,
                Long.MAX_VALUE / 4));
        if (p == null) {
            throw new TimeoutException("timed out after " + timeout + " waiting for " + permits + " permits of "
                    + describe());
        }
        return p;
    }

    @Override
    public Optional<Permit> tryAcquire(long permits) {
        checkRequest(permits);
        for (;;) {
            long s = state;
            if ((s & CLOSED) != 0) {
                throw closed("tryAcquire(" + permits + ")");
            }
            if (permits == 0) {
                return Optional.of(newPermit(0));
            }
            if ((s & fastMask) != 0 || available(s) < permits) {
                return Optional.empty();
            }
            if (casState(s, s - (permits << SHIFT))) {
                return Optional.of(newPermit(permits));
            }
        }
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits) {
        checkRequest(permits);
        if (tryFast(permits)) {
            return CompletableFuture.completedFuture(newPermit(permits));
        }
        return acquireAsyncSlow(permits, -1L, null);
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        checkRequest(permits);
        Objects.requireNonNull(timeout, "timeout");
        if (tryFast(permits)) {
            return CompletableFuture.completedFuture(newPermit(permits));
        }
        return acquireAsyncSlow(permits, Timeouts.toNanos(timeout), timeout);
    }

    /** The uncontended path: permits free and nothing in the way, taken with one CAS. */
    private boolean tryFast(long permits) {
        long need = permits << SHIFT;
        for (;;) {
            long s = state;
            if ((s & fastMask) != 0 || s < need) {
                // s < need compares available with the flags below it clear (fastMask may let QUEUED
                // through for BARGING, which only adds 2 and so never turns "not enough" into "enough").
                return false;
            }
            if (casState(s, s - need)) {
                return true;
            }
        }
    }

    /**
     * Takes the permits under the lock if allowed now, or queues a waiter. Returns null when the
     * request must fail with a timeout right away (timed and not allowed now); throws when closed.
     */
    private Object takeOrEnqueue(long permits, boolean mayQueue, Waiter waiter) {
        lock.lock();
        try {
            for (;;) {
                long s = state;
                if ((s & CLOSED) != 0) {
                    return CLOSED_MARK;
                }
                if (permits == 0) {
                    return TAKEN_MARK;
                }
                boolean inTheWay = fairness == Fairness.FIFO ? (s & (QUEUED | IDLE)) != 0 : (s & IDLE) != 0;
                if (!inTheWay && available(s) >= permits) {
                    if (casState(s, s - (permits << SHIFT))) {
                        return TAKEN_MARK;
                    }
                    continue;
                }
                if (!mayQueue) {
                    return null;
                }
                // keeps I2: QUEUED is set in the same CAS that read `available` as too small, so every
                // release from now on sees it and serves the queue under the lock.
                if ((s & QUEUED) != 0 || casState(s, s | QUEUED)) {
                    link(waiter);
                    return waiter;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private static final Object CLOSED_MARK = new Object();
    private static final Object TAKEN_MARK = new Object();

    private Permit acquireSlow(long permits, boolean timed, long deadline) throws InterruptedException {
        boolean mayQueue = !timed || deadline - System.nanoTime() > 0;
        Waiter w = mayQueue ? new Waiter(this, permits, false, Thread.currentThread()) : null;
        Object outcome = takeOrEnqueue(permits, mayQueue, w);
        if (outcome == TAKEN_MARK) {
            return newPermit(permits);
        }
        if (outcome == CLOSED_MARK) {
            throw closed("acquire(" + permits + ")");
        }
        if (outcome == null) {
            return null;
        }
        return awaitGrant(w, timed, deadline) ? newPermit(permits) : null;
    }

    /**
     * Parks until {@code w} is decided. Returns true when granted, false on timeout; throws on interrupt
     * (after withdrawing) or close.
     */
    private boolean awaitGrant(Waiter w, boolean timed, long deadline) throws InterruptedException {
        for (;;) {
            int st = w.status;
            if (st == Waiter.GRANTED) {
                return true;
            }
            if (st == Waiter.CLOSED) {
                throw closed(w.idle ? "awaitIdle()" : "acquire(" + w.permits + ")");
            }
            if (Thread.interrupted()) {
                if (w.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
                    withdraw(w);
                    throw new InterruptedException("interrupted while waiting for "
                            + (w.idle ? "idle" : w.permits + " permits") + " on " + describe());
                }
                // Lost the race to a grant (or close): keep the outcome and the interrupt, never both
                // thrown and granted.
                Thread.currentThread().interrupt();
                if (w.status == Waiter.GRANTED) {
                    return true;
                }
                throw closed("acquire(" + w.permits + ")");
            }
            if (timed) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    if (w.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
                        withdraw(w);
                        return false;
                    }
                    continue; // decided meanwhile: read the outcome
                }
                LockSupport.parkNanos(this, remaining);
            } else {
                LockSupport.park(this);
            }
        }
    }

    private CompletableFuture<Permit> acquireAsyncSlow(long permits, long timeoutNanos, Duration timeout) {
        boolean timed = timeout != null;
        boolean mayQueue = !timed || timeoutNanos > 0;
        Waiter w = null;
        WaiterFuture<Permit> future = null;
        if (mayQueue) {
            w = new Waiter(this, permits, false, null);
            future = new WaiterFuture<>(w);
            w.future = future;
        }
        Object outcome = takeOrEnqueue(permits, mayQueue, w);
        if (outcome == TAKEN_MARK) {
            return CompletableFuture.completedFuture(newPermit(permits));
        }
        if (outcome == CLOSED_MARK) {
            return CompletableFuture.failedFuture(closed("acquireAsync(" + permits + ")"));
        }
        if (outcome == null) {
            return CompletableFuture.failedFuture(timeoutException(permits, timeout));
        }
        if (timed && timeoutNanos != Long.MAX_VALUE) {
            Timeouts.failAfter(future, timeoutNanos, () -> timeoutException(permits, timeout));
        }
        return future;
    }

    private TimeoutException timeoutException(long permits, Duration timeout) {
        return new TimeoutException("timed out after " + timeout + " waiting for " + permits + " permits of "
                + describe());
    }

    // ---------------------------------------------------------------- awaitIdle

    @Override
    public void awaitIdle() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before awaitIdle() on " + describe());
        }
        Waiter w = new Waiter(this, 0, true, Thread.currentThread());
        if (enqueueIdle(w)) {
            awaitGrant(w, false, 0L);
        }
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        Waiter w = new Waiter(this, 0, true, null);
        WaiterFuture<Void> future = new WaiterFuture<>(w);
        w.future = future;
        if (!enqueueIdle(w)) {
            return CompletableFuture.completedFuture(null);
        }
        return future;
    }

    /** Returns false if already idle (nothing held, nobody queued), else queues {@code w}. */
    private boolean enqueueIdle(Waiter w) {
        lock.lock();
        try {
            for (;;) {
                long s = state;
                if (head == null && limit - available(s) == 0) {
                    return false;
                }
                if (casState(s, s | QUEUED | IDLE)) {
                    link(w);
                    return true;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- release and serving

    /** Gives back {@code permits} (> 0) held by a Permit. */
    void release(long permits) {
        long add = permits << SHIFT;
        for (;;) {
            long s = state;
            if ((s & QUEUED) != 0) {
                releaseSlow(permits);
                return;
            }
            if (casState(s, s + add)) {
                return;
            }
        }
    }

    private void releaseSlow(long permits) {
        Waiter done;
        lock.lock();
        try {
            addAvailable(permits);
            done = serveLocked();
        } finally {
            lock.unlock();
        }
        finish(done);
    }

    /** Keeps a forgotten Permit's permits consumed: limit and held both drop (I1), limit not below 0. */
    void forget(long permits) {
        Waiter done;
        lock.lock();
        try {
            long oldLimit = limit;
            long newLimit = Math.max(0, oldLimit - permits);
            limit = newLimit;
            addAvailable(newLimit - oldLimit + permits);
            done = serveLocked();
        } finally {
            lock.unlock();
        }
        finish(done);
    }

    private void addAvailable(long delta) {
        long add = delta << SHIFT;
        for (;;) {
            long s = state;
            if (casState(s, s + add)) {
                return;
            }
        }
    }

    /**
     * Grants head waiters while they fit (I3, I5) and returns the chain of decided waiters (linked by
     * {@code next}) to be finished outside the lock.
     */
    private Waiter serveLocked() {
        Waiter first = null;
        Waiter last = null;
        for (Waiter w = head; w != null; w = head) {
            if (w.status != Waiter.WAITING) {
                unlink(w); // withdrawn; its owner will find it unlinked
                continue;
            }
            if (w.idle) {
                if (limit - available(state) != 0) {
                    break;
                }
                if (!w.casStatus(Waiter.WAITING, Waiter.GRANTED)) {
                    unlink(w);
                    continue;
                }
            } else {
                long need = w.permits << SHIFT;
                long s;
                do {
                    s = state;
                    if (available(s) < w.permits) {
                        updateFlagsLocked();
                        return first;
                    }
                } while (!casState(s, s - need));
                if (!w.casStatus(Waiter.WAITING, Waiter.GRANTED)) {
                    addAvailable(w.permits); // keeps I4: withdrawn between the check and the grant
                    unlink(w);
                    continue;
                }
            }
            unlink(w);
            if (last == null) {
                first = w;
            } else {
                last.next = w;
            }
            last = w;
        }
        updateFlagsLocked();
        return first;
    }

    /** Completes decided waiters (grant, close) outside the lock; async ones through the trampoline. */
    private void finish(Waiter chain) {
        Waiter async = null;
        Waiter asyncLast = null;
        for (Waiter w = chain; w != null; ) {
            Waiter next = w.next;
            w.next = null;
            if (w.future == null) {
                LockSupport.unpark(w.thread);
            } else if (asyncLast == null) {
                async = asyncLast = w;
            } else {
                asyncLast.next = w;
                asyncLast = w;
            }
            w = next;
        }
        if (async != null) {
            Trampoline.run(async);
        }
    }

    /** Completes an async waiter's future; called by the trampoline, never under the lock. */
    void complete(Waiter w) {
        WaiterFuture<?> f = w.future;
        if (w.status == Waiter.CLOSED) {
            f.completeInternally(null, closed("acquireAsync(" + w.permits + ")"));
        } else if (w.idle) {
            f.completeInternally(null, null);
        } else {
            LocalPermit p = newPermit(w.permits);
            @SuppressWarnings("unchecked")
            WaiterFuture<Permit> pf = (WaiterFuture<Permit>) f;
            if (!pf.completeInternally(p, null)) {
                p.close(); // keeps I4: the future was completed by someone else first
            }
        }
    }

    /** Removes a waiter whose status its owner just set to CANCELLED; serves the queue if it was the head. */
    void withdraw(Waiter w) {
        Waiter done = null;
        lock.lock();
        try {
            if (w.linked) {
                boolean wasHead = w == head;
                unlink(w);
                if (wasHead) {
                    done = serveLocked();
                } else {
                    updateFlagsLocked();
                }
            }
        } finally {
            lock.unlock();
        }
        finish(done);
    }

    // ---------------------------------------------------------------- queue links (under lock)

    private void link(Waiter w) {
        Waiter t = tail;
        w.prev = t;
        if (t == null) {
            head = w;
        } else {
            t.next = w;
        }
        tail = w;
        w.linked = true;
        if (w.idle) {
            idleWaiters++;
        }
        queued = queued + 1;
    }

    private void unlink(Waiter w) {
        Waiter p = w.prev;
        Waiter n = w.next;
        if (p == null) {
            head = n;
        } else {
            p.next = n;
        }
        if (n == null) {
            tail = p;
        } else {
            n.prev = p;
        }
        w.prev = null;
        w.next = null;
        w.linked = false;
        if (w.idle) {
            idleWaiters--;
        }
        queued = queued - 1;
    }

    /** keeps I2 */
    private void updateFlagsLocked() {
        long flags = (head != null ? QUEUED : 0) | (idleWaiters > 0 ? IDLE : 0);
        for (;;) {
            long s = state;
            if ((s & (QUEUED | IDLE)) == flags || casState(s, (s & ~(QUEUED | IDLE)) | flags)) {
                return;
            }
        }
    }

    // ---------------------------------------------------------------- resizing

    @Override
    public void setPermits(long newLimit) {
        if (newLimit < 0 || newLimit > ceiling) {
            throw new IllegalArgumentException("setPermits(" + newLimit + "): the limit must be between 0 and maxPermits ("
                    + ceiling + ") of " + describe());
        }
        Waiter done;
        lock.lock();
        try {
            long old = limit;
            limit = newLimit;
            addAvailable(newLimit - old);
            done = serveLocked();
        } finally {
            lock.unlock();
        }
        finish(done);
    }

    @Override
    public long addPermits(long n) {
        Checks.nonNegative("addPermits: n", n);
        Waiter done;
        long added;
        lock.lock();
        try {
            long old = limit;
            added = Math.min(n, ceiling - old);
            if (added == 0) {
                return 0;
            }
            limit = old + added;
            addAvailable(added);
            done = serveLocked();
        } finally {
            lock.unlock();
        }
        finish(done);
        return added;
    }

    @Override
    public long reducePermits(long n) {
        Checks.nonNegative("reducePermits: n", n);
        lock.lock();
        try {
            long old = limit;
            long removed = Math.min(n, old);
            if (removed != 0) {
                limit = old - removed;
                addAvailable(-removed);
                // Fewer permits serve nobody new; the queue and flags are unchanged (I3 still holds).
            }
            return removed;
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- close

    @Override
    public void close() {
        Waiter failed = null;
        Waiter failedLast = null;
        Waiter done;
        lock.lock();
        try {
            for (;;) {
                long s = state;
                if ((s & CLOSED) != 0 || casState(s, s | CLOSED)) {
                    break;
                }
            }
            for (Waiter w = head; w != null; ) {
                Waiter next = w.next;
                if (!w.idle) {
                    boolean fail = w.casStatus(Waiter.WAITING, Waiter.CLOSED);
                    unlink(w);
                    if (fail) {
                        if (failedLast == null) {
                            failed = w;
                        } else {
                            failedLast.next = w;
                        }
                        failedLast = w;
                    }
                }
                w = next;
            }
            done = serveLocked(); // an idle waiter may now be at the head with nothing held
        } finally {
            lock.unlock();
        }
        ScheduledFuture<?> refill = refillTask;
        if (refill != null) {
            refill.cancel(false);
        }
        finish(failed);
        finish(done);
    }

    @Override
    public boolean isClosed() {
        return (state & CLOSED) != 0;
    }

    // ---------------------------------------------------------------- queries

    @Override
    public long permits() {
        return limit;
    }

    @Override
    public long maxPermits() {
        return ceiling;
    }

    @Override
    public long availablePermits() {
        return available(state);
    }

    @Override
    public int queueLength() {
        return queued;
    }

    @Override
    public Fairness fairness() {
        return fairness;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        long s = state;
        return "Semaphore[name=" + name + ", permits=" + limit + ", available=" + available(s)
                + ", queued=" + queued + ", closed=" + ((s & CLOSED) != 0) + "]";
    }

    private String describe() {
        return "semaphore '" + name + "'";
    }

    private void checkRequest(long permits) {
        if (permits < 0 || permits > ceiling) {
            throw new IllegalArgumentException("requested " + permits + " permits, but a request must be between 0 and"
                    + " maxPermits (" + ceiling + ") of " + describe());
        }
    }

    private SemaphoreClosedException closed(String what) {
        return new SemaphoreClosedException(describe() + " is closed: " + what + " refused");
    }

    /**
     * Checks I1-I3 and the queue's bookkeeping; for tests, at quiescence.
     *
     * @throws AssertionError naming the broken invariant
     */
    void checkInvariants() {
        lock.lock();
        try {
            long s = state;
            long lim = limit;
            long avail = available(s);
            long held = lim - avail;
            check(lim >= 0 && lim <= ceiling, "I1: limit " + lim + " outside 0.." + ceiling);
            check(held >= 0, "I1: held " + held + " < 0 (available " + avail + ", limit " + lim + ")");
            int count = 0;
            int idle = 0;
            Waiter prev = null;
            for (Waiter w = head; w != null; w = w.next) {
                check(w.prev == prev, "queue: broken prev link");
                check(w.linked, "queue: linked waiter not marked linked");
                count++;
                if (w.idle) {
                    idle++;
                }
                prev = w;
            }
            check(prev == tail, "queue: tail is not the last waiter");
            check(count == queued, "queue: queueLength " + queued + " but " + count + " linked");
            check(idle == idleWaiters, "queue: idle count " + idleWaiters + " but " + idle + " linked");
            check(((s & QUEUED) != 0) == (head != null), "I2: QUEUED flag disagrees with the queue");
            check(((s & IDLE) != 0) == (idle > 0), "I2: IDLE flag disagrees with the queue");
            if (head != null && head.status == Waiter.WAITING) {
                check(head.idle ? held > 0 : avail < head.permits,
                        "I3: head waiter fits but is still queued: " + this);
            }
        } finally {
            lock.unlock();
        }
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new AssertionError(message);
        }
    }
}
