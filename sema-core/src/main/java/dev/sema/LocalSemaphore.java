package dev.sema;

import dev.sema.internal.AbstractSemaphore;
import dev.sema.internal.Checks;
import dev.sema.internal.FastPath;
import dev.sema.internal.Failures;
import dev.sema.internal.Listeners;
import dev.sema.internal.Outcome;
import dev.sema.internal.PartitionSpec;
import dev.sema.internal.Partitioned;
import dev.sema.internal.StateSource;
import dev.sema.internal.Timeouts;
import dev.sema.internal.WaitEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
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
final class LocalSemaphore extends AbstractSemaphore implements StateSource, Partitioned, FastPath {

    /*
     * Implementation overview
     *
     * State word (`state`, one long): available permits, signed, in bits 63..4, and four flags:
     *   CLOSED     (bit 0)  close() was called.
     *   QUEUED     (bit 1)  the queue is not empty.
     *   IDLE       (bit 2)  an awaitIdle waiter is queued (barging arrivals must queue behind it).
     *   HEAD_WOKEN (bit 3)  BARGING: the head is a blocked thread woken to take its permits itself.
     * One plain read therefore tells the fast path "enough free, nobody queued, open": for FIFO the
     * mask is CLOSED|QUEUED|IDLE, for BARGING CLOSED|IDLE. A release may add its permits without the
     * lock while QUEUED is clear, or while HEAD_WOKEN is set (the woken head takes them when it runs, and
     * then serves the waiters behind it).
     * Since |available| <= MAX_PERMITS = 2^50, available << 4 never overflows.
     *
     * Invariants:
     *  I1: available == limit - held, where held (>= 0) is what unreleased Permits hold; limit is in
     *      0..ceiling. available may be negative after the limit was lowered. Whenever the lock is free:
     *      a critical section that releases permits holds them in hand (neither available nor held),
     *      grants them straight to the waiters they serve, and adds the rest before it unlocks.
     *  I2: QUEUED is set iff the queue is not empty, IDLE iff it holds an idle waiter. Both are changed
     *      only under the lock, in the same CAS that reads `available`, so a release that saw QUEUED clear
     *      (and added its permits without the lock) happened before any waiter decided to queue.
     *      HEAD_WOKEN set implies the head is a woken, blocked thread. It is set only under the lock, and
     *      cleared only by a CAS on a state in which the decision that ends it still holds (the head took
     *      its permits, found none, or a new head does not fit), so a release that added permits without
     *      the lock either came before that decision, which then sees them, or finds the flag clear and
     *      serves the queue under the lock.
     *  I3: when the lock is free, the head waiter does not fit: a WAITING head requests more than
     *      available (an idle head: held > 0), or, under BARGING, it is a blocked thread that was woken
     *      to take its permits itself (Waiter.woken) and has not yet run. Kept by unlockServed(), the one
     *      way out of a critical section that adds permits or removes waiters: it serves the queue, then
     *      unlocks (unlockServing() also finishes the decided waiters; the callers of unlockServed()
     *      finish them after reporting their own event). A woken head that finds its permits taken by a newcomer clears `woken` under the lock
     *      and parks again; the next release wakes it again.
     *  I4: every granted permit is held by exactly one Permit or returned; a waiter's outcome is decided
     *      by one CAS on Waiter.status (WAITING -> GRANTED | CANCELLED | CLOSED), and a grant whose future
     *      was completed by someone else first is given back. Unless tracked or timed, a granted async
     *      waiter is itself the Permit its future delivers: the grant is added to it before the future
     *      completes (Waiter.grant), and a grant that lost that race takes back at most what it added
     *      (Waiter.revoke), so permits moved in by a merge are never taken twice.
     *  I5: waiters are granted in arrival order, serveLocked() stops at the first that does not fit.
     *  I6: the queue links (Waiter.prev/next) and the done chain (Waiter.nextDone, doneFirst..doneLast)
     *      never share a waiter: a waiter joins the done chain only once decided and unlinked, and the
     *      chain is detached before the lock is released, so it is empty whenever the lock is free. Its
     *      waiters are finished (unparked, futures completed) outside the lock. A woken head stays queued
     *      and undecided, so it is not on the chain: its thread is the one `wake` of the section (at most
     *      one, since serving stops at it), detached and unparked the same way.
     *  I7: every acquire request that ends passes ended() exactly once, with its Outcome: the one place
     *      where outcomes are reported to the listeners (dev.sema.internal.Listeners states their rules:
     *      no clock is read and nothing is called while none is registered).
     *
     * Partitions (API.md §11a) are the one concern added beside these, with rules of their own (P0-P6, in
     * Partitions): a partitioned semaphore and each of its views keep QUEUED set for good (P0, an exception
     * to I2), so that none of them ever takes a lock-free path, and every place that reads `available` or
     * the queue under the lock first asks `group != null` and hands over to Partitions. I3 then reads: no
     * head of any view fits under the partition rules. An unpartitioned semaphore pays that test of a
     * final field only on paths that already took the lock or refused (tryAcquire, drainPermits, resizes).
     *
     * The lock guards the queue links (head, tail, Waiter.prev/next), the done chain, idleWaiters, and
     * every write of `limit`, `queued` and the QUEUED/IDLE/CLOSED flags. `available` moves by CAS without
     * the lock on the fast paths (acquire when the mask allows, release while QUEUED is clear).
     * Nothing is completed, unparked or called back while the lock is held.
     *
     * Test hooks: `testHook` (static, null outside tests) runs at two points where a test cannot stage a race
     * from outside. GIVING_UP: a blocked waiter found itself interrupted and is about to cancel itself by CAS
     * (no lock held); a release there wakes a head that then leaves anyway, the only way HEAD_WOKEN outlives
     * the head it was set for. SERVED: serveLocked between serveHeadsLocked's reads of `state` and
     * updateFlagsLocked's CAS (lock held); a release there is the one I2's conditioned CAS must see
     * (StagedRaceTest).
     * Neither lies on a fast path: a static read and a null test on the interrupt path and once per
     * serving pass of a section that took the lock and moves the state word by CAS anyway.
     * A test sets it before it starts or interrupts the threads that may run it and clears it after joining
     * them: Thread.start, interrupt (seen by Thread.interrupted) and join publish it.
     *
     * field               read          write
     * state               volatile      CAS (flags only under lock)
     * limit               volatile      volatile, under lock
     * queued              volatile      release store, under lock: it only reports the queue's length
     *                                   and picks whether to spin, so a link or unlink needs no fence
     * head/tail           under lock    under lock
     * doneFirst/doneLast  under lock    under lock
     * wake                under lock    under lock
     * Waiter.woken        volatile      volatile, under lock
     * testHook            plain         plain, by a test only (see Test hooks above)
     * closeCause          volatile      volatile, in AbstractSemaphore (A2): under lock, once, before the CAS
     *                                   that sets CLOSED: whoever sees CLOSED sees the cause of that close
     */

    static final int SHIFT = 4;
    static final long CLOSED = 1L;
    static final long QUEUED = 2L;
    static final long IDLE = 4L;
    static final long HEAD_WOKEN = 8L;
    /**
     * How long a platform thread alone in a FIFO queue spins (spin-wait hints) before it parks: a hand-off
     * then reaches it running, not parked. Measured at limit 1 with 2 platform threads: about 5 against
     * 0.06-0.17 grants per microsecond without it; no change with 4 threads (where it does not spin).
     * Under BARGING it halved the 2-thread throughput (12.8 to 6.3), so it is FIFO only.
     */
    private static final int SPINS = 1_000;
    private static final long FLAGS = CLOSED | QUEUED | IDLE | HEAD_WOKEN;

    private static final VarHandle STATE;
    private static final VarHandle QUEUE_LENGTH;
    private static final AtomicLong NAMES = new AtomicLong();

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(LocalSemaphore.class, "state", long.class);
            QUEUE_LENGTH = MethodHandles.lookup().findVarHandle(LocalSemaphore.class, "queued", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long ceiling;
    private final Fairness fairness;
    private final long fastMask;
    /** Its own, or for a partition its parent's (P0). */
    private final ReentrantLock lock;
    /** Null unless partitioned: the partitions this semaphore is the parent of, or one of (see Partitions). */
    final Partitions group;
    /** Its place in {@link #group}, in priority order (the parent's own requests last); -1 without a group. */
    final int slot;
    /** Null when leak detection is off, so the fast path pays one test of a final field. */
    private final LeakDetection leakDetection;
    private final AtomicLong leaked = new AtomicLong();
    /** The periodic refill, if built with one; cancelled by close(). */
    volatile ScheduledFuture<?> refillTask;

    private volatile long state;
    /** The cause close(cause) gave, or null; written once, under the lock, before the CAS that sets CLOSED. */
    private volatile long limit;
    private volatile int queued;
    private Waiter head;
    private Waiter tail;
    private int idleWaiters;
    private Waiter doneFirst;
    private Waiter doneLast;
    /** BARGING: the thread of the head woken in this critical section, to unpark after it (I6). */
    private Thread wake;

    /** A test's code at a {@link HookPoint}, or null (always, outside tests); see "Test hooks" above. */
    static TestHook testHook;

    /** Where {@link #testHook} runs. */
    enum HookPoint {
        /** A blocked waiter found itself interrupted and is about to cancel itself; no lock held. */
        GIVING_UP,
        /** A critical section served the heads and is about to update the flags (updateFlagsLocked); lock held. */
        SERVED
    }

    /** Code a test runs inside the engine, on the engine's thread, to stage a race at a {@link HookPoint}. */
    interface TestHook {
        void at(HookPoint point, LocalSemaphore semaphore);
    }

    LocalSemaphore(String name, long permits, long ceiling, Fairness fairness, LeakDetection leakDetection) {
        this(name, permits, ceiling, fairness, leakDetection, null);
    }

    /** A semaphore, partitioned when {@code partitions} is not null (FIFO only, checked by the builder). */
    @SuppressWarnings("this-escape") // Partitions keeps the parent to serve it, and makes the views
    LocalSemaphore(String name, long permits, long ceiling, Fairness fairness, LeakDetection leakDetection,
            PartitionSpec partitions) {
        super(name);
        this.leakDetection = leakDetection == LeakDetection.OFF ? null : leakDetection;
        this.ceiling = ceiling;
        this.fairness = fairness;
        this.fastMask = fairness == Fairness.FIFO ? (CLOSED | QUEUED | IDLE) : (CLOSED | IDLE);
        this.lock = new ReentrantLock();
        this.limit = permits;
        this.slot = partitions == null ? -1 : partitions.size();
        // P0: QUEUED stays set on a partitioned semaphore, so that every acquire and release takes the lock
        this.state = (permits << SHIFT) | (partitions == null ? 0 : QUEUED);
        this.group = partitions == null ? null : new Partitions(this, partitions);
    }

    /** A partition's view (P0): the parent's lock, listeners and ceiling; nothing available of its own. */
    LocalSemaphore(LocalSemaphore parent, Partitions group, int slot, String name) {
        super(name, parent.listeners);
        this.leakDetection = parent.leakDetection;
        this.ceiling = parent.ceiling;
        this.fairness = Fairness.FIFO;
        this.fastMask = CLOSED | QUEUED | IDLE;
        this.lock = parent.lock;
        this.group = group;
        this.slot = slot;
        this.state = QUEUED;
    }

    static String generatedName() {
        return "semaphore-" + NAMES.incrementAndGet();
    }

    static long available(long s) {
        return s >> SHIFT;
    }

    /** A Permit for a grant; it knows when it was granted only if someone listened then. */
    private LocalPermit newPermit(long permits) {
        LeakDetection level = leakDetection;
        long grantedAt = listeners.now();
        if (level != null) {
            return TrackedPermit.track(this, permits, level, grantedAt);
        }
        return grantedAt == Listeners.UNTIMED ? new PlainPermit(this, permits)
                : new TimedPermit(this, permits, grantedAt);
    }

    /**
     * Reports permits returned by leak detection, then counts them (see {@link #leakedPermits()}): in that
     * order, so that whoever sees the count also finds the event and the listeners' calls done.
     */
    void recordLeak(long permits, String acquiredBy) {
        listeners.leaked(permits, acquiredBy);
        leaked.addAndGet(permits);
    }

    /**
     * Gives back permits a Permit held (> 0), and reports it before the waiters it served are told, so
     * that listeners see the release before the grants it made.
     */
    void giveBack(long permits, long grantedAt) {
        if (!listeners.active()) {
            release(permits);
            return;
        }
        Waiter done = null;
        if (!tryReleaseFast(permits)) {
            lock.lock();
            done = unlockServed(permits);
        }
        listeners.released(permits, grantedAt);
        finish(done);
    }

    /** How many permits leak detection has returned so far (for tests). */
    long leakedPermits() {
        return leaked.get();
    }

    private boolean casState(long expected, long next) {
        return STATE.compareAndSet(this, expected, next);
    }

    /** Runs the test hook, if a test set one; off the fast paths (see "Test hooks" above). */
    private void hook(HookPoint point) {
        TestHook h = testHook;
        if (h != null) {
            h.at(point, this);
        }
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public Permit acquire(long permits) throws InterruptedException {
        checkRequest(permits);
        acquireNotInterrupted(permits);
        // One allocation site for the Permit, after both paths meet: the JIT can then remove it when it
        // does not escape, even once the slow path runs (a Permit made on each path would merge and escape).
        boolean recorded = false;
        if (!tryFast(permits)) {
            Slow how = acquireSlow(permits, false, 0L, true);
            if (how == Slow.TIMED_OUT) {
                throw new AssertionError("an untimed acquire timed out"); // never: a grant without permits
            }
            recorded = how == Slow.GRANTED_RECORDED;
        }
        return granted(permits, recorded);
    }

    @Override
    public Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
        checkRequest(permits);
        Objects.requireNonNull(timeout, "timeout");
        acquireNotInterrupted(permits, timeout);
        boolean recorded = false;
        if (!tryFast(permits)) {
            long nanos = Timeouts.toNanos(timeout);
            Slow how = acquireSlow(permits, nanos != Timeouts.FOREVER, Timeouts.deadline(nanos), true);
            if (how == Slow.TIMED_OUT) {
                throw Failures.timedOut(name, permits, timeout);
            }
            recorded = how == Slow.GRANTED_RECORDED;
        }
        return granted(permits, recorded);
    }

    @Override
    public Permit acquireUninterruptibly(long permits) {
        checkRequest(permits);
        boolean recorded = false;
        if (!tryFast(permits)) {
            Slow how;
            try {
                how = acquireSlow(permits, false, 0L, false);
            } catch (InterruptedException impossible) {
                throw new AssertionError(impossible); // an uninterruptible wait never throws it
            }
            if (how == Slow.TIMED_OUT) {
                throw new AssertionError("an untimed acquire timed out"); // never: a grant without permits
            }
            recorded = how == Slow.GRANTED_RECORDED;
        }
        return granted(permits, recorded);
    }

    @Override
    public Permit drainPermits() {
        if (group != null) {
            return drainPartitioned();
        }
        for (;;) {
            long s = state;
            if ((s & CLOSED) != 0) {
                ended(Outcome.CLOSED, 0);
                throw closedFailure("drainPermits()");
            }
            long n = available(s);
            if (n <= 0) {
                return granted(0);
            }
            // Without the lock, whatever the flags: fewer permits available never makes the head fit (I3).
            if (casState(s, s - (n << SHIFT))) {
                return granted(n);
            }
        }
    }

    @Override
    public Optional<Permit> tryAcquire(long permits) {
        checkRequest(permits);
        for (;;) {
            long s = state;
            if ((s & CLOSED) != 0) {
                ended(Outcome.CLOSED, permits);
                throw closedFailure("tryAcquire(" + permits + ")");
            }
            if (permits == 0) {
                return Optional.of(granted(0));
            }
            if ((s & fastMask) != 0 || available(s) < permits) {
                if (group != null) {
                    return tryAcquirePartitioned(permits); // P0: always here
                }
                ended(Outcome.UNAVAILABLE, permits);
                return Optional.empty();
            }
            if (casState(s, s - (permits << SHIFT))) {
                return Optional.of(granted(permits));
            }
        }
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits) {
        checkRequest(permits);
        if (tryFast(permits)) {
            return grantedAsync(permits);
        }
        return acquireAsyncSlow(permits, Timeouts.FOREVER, null);
    }

    @Override
    public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
        checkRequest(permits);
        Objects.requireNonNull(timeout, "timeout");
        if (tryFast(permits)) {
            return grantedAsync(permits);
        }
        return acquireAsyncSlow(permits, Timeouts.toNanos(timeout), timeout);
    }

    /**
     * The fast path of every acquire, alone, for the non-blocking modules (sema-kotlin): granted and
     * reported as {@code acquireAsync} grants it at once (I7), or nothing done and nothing reported.
     */
    @Override
    public Permit tryFastPath(long permits) {
        checkRequest(permits);
        return tryFast(permits) ? granted(permits) : null;
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

    /** What {@link #takeOrEnqueue} did with a request that the fast path could not take. */
    private enum Admission {
        /** The permits were taken under the lock. */
        TAKEN,
        /** The waiter was queued. */
        QUEUED,
        /** Not allowed now, and the request may not queue (a timeout of zero or less). */
        REFUSED,
        /** The semaphore is closed. */
        CLOSED
    }

    /** Takes the permits under the lock if allowed now, or queues {@code waiter} if {@code mayQueue}. */
    private Admission takeOrEnqueue(long permits, boolean mayQueue, Waiter waiter) {
        // Neither adds permits nor removes a waiter, so I3 needs no serving here: a waiter queued at the
        // head was just found not to fit.
        lock.lock();
        try {
            if (group != null) {
                return admitPartitionedLocked(permits, mayQueue, waiter);
            }
            for (;;) {
                long s = state;
                if ((s & CLOSED) != 0) {
                    return Admission.CLOSED;
                }
                if (permits == 0) {
                    return Admission.TAKEN;
                }
                boolean inTheWay = fairness == Fairness.FIFO ? (s & (QUEUED | IDLE)) != 0 : (s & IDLE) != 0;
                if (!inTheWay && available(s) >= permits) {
                    if (casState(s, s - (permits << SHIFT))) {
                        return Admission.TAKEN;
                    }
                    continue;
                }
                if (!mayQueue) {
                    return Admission.REFUSED;
                }
                // keeps I2: QUEUED is set in the same CAS that read `available` as too small, so every
                // release from now on sees it and serves the queue under the lock.
                if ((s & QUEUED) != 0 || casState(s, s | QUEUED)) {
                    link(waiter);
                    return Admission.QUEUED;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** How a blocking acquire past the fast path ended, when it did not throw. */
    private enum Slow {
        /** Granted without queueing; the outcome is still to be recorded. */
        GRANTED,
        /** Granted after queueing, and recorded with its wait. */
        GRANTED_RECORDED,
        /** Timed out (recorded). */
        TIMED_OUT
    }

    /** A blocking acquire past the fast path; the caller makes the Permit of a grant. */
    private Slow acquireSlow(long permits, boolean timed, long deadline, boolean interruptible)
            throws InterruptedException {
        boolean mayQueue = !timed || deadline - System.nanoTime() > 0;
        Waiter w = mayQueue ? observed(new Waiter(this, permits, false, Thread.currentThread())) : null;
        switch (takeOrEnqueue(permits, mayQueue, w)) {
            case TAKEN:
                return Slow.GRANTED;
            case CLOSED:
                ended(Outcome.CLOSED, permits);
                throw closedFailure("acquire(" + permits + ")");
            case REFUSED:
                ended(Outcome.TIMEOUT, permits);
                return Slow.TIMED_OUT;
            default:
                break;
        }
        if (!awaitGrant(w, timed, deadline, interruptible)) {
            return Slow.TIMED_OUT;
        }
        ended(Outcome.GRANTED, w);
        return Slow.GRANTED_RECORDED;
    }

    /**
     * Parks until {@code w} is decided. Returns true when granted (an acquire's outcome is then the
     * caller's to record), false on timeout; throws on interrupt (after withdrawing) or close. Unless
     * {@code interruptible}, an interrupt is only noted: the wait goes on in its place, and the interrupt
     * status is set again however it ends.
     */
    private boolean awaitGrant(Waiter w, boolean timed, long deadline, boolean interruptible)
            throws InterruptedException {
        // A bounded spin for a platform thread alone in a FIFO queue, where a release hands the permits over:
        // never for a virtual thread (its carrier serves others), behind other waiters (they are served
        // first), or under BARGING (a woken head competes for the permits itself).
        if (queued == 1 && fairness == Fairness.FIFO && !Thread.currentThread().isVirtual()) {
            for (int i = 0; i < SPINS && w.status == Waiter.WAITING && !w.woken; i++) {
                Thread.onSpinWait();
            }
        }
        boolean noted = false; // an interrupt an uninterruptible wait took note of, to set again at the end
        try {
            for (;;) {
                int st = w.status;
                if (st == Waiter.GRANTED) {
                    return true;
                }
                if (st == Waiter.WAITING && w.woken) {
                    if (takeWoken(w)) {
                        return true;
                    }
                    // Read the status again before parking: the wake-up that would report a close may have
                    // been used up while this thread waited for the lock in takeWoken.
                    continue;
                }
                if (st == Waiter.CLOSED) {
                    throw closedWhileWaiting(w);
                }
                if (Thread.interrupted()) {
                    if (!interruptible) {
                        noted = true; // cleared, or park would return at once: the wait goes on in its place
                        continue;
                    }
                    hook(HookPoint.GIVING_UP);
                    if (w.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
                        withdraw(w);
                        if (!w.idle) {
                            ended(Outcome.INTERRUPTED, w);
                        }
                        throw Failures.interruptedWhile(name, w.idle ? "idle" : w.requested + " permits");
                    }
                    // Lost the race to a grant (or close): keep the outcome and the interrupt, never both
                    // thrown and granted.
                    Thread.currentThread().interrupt();
                    if (w.status == Waiter.GRANTED) {
                        return true;
                    }
                    throw closedWhileWaiting(w);
                }
                if (timed) {
                    long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        if (w.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
                            withdraw(w);
                            ended(Outcome.TIMEOUT, w); // only acquires are timed
                            return false;
                        }
                        continue; // decided meanwhile: read the outcome
                    }
                    LockSupport.parkNanos(this, remaining);
                } else {
                    LockSupport.park(this);
                }
            }
        } finally {
            if (noted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * BARGING: the woken head thread takes its permits if they are still free. A newcomer may have taken
     * them first: then it clears {@code woken} and waits on at the head, to be woken by the next release
     * (I3). Releasing threads thus never hand permits to a parked thread and wait for it to run, so a
     * thread that releases and acquires again keeps going, as with a non-fair JDK semaphore.
     *
     * @return true if granted; false if it must read its status again (closed, or the permits are gone)
     */
    private boolean takeWoken(Waiter w) {
        lock.lock();
        try {
            if (w.status != Waiter.WAITING) {
                return false; // decided meanwhile (closed): the caller reads the outcome
            }
            long need = w.requested << SHIFT;
            for (;;) {
                long s = state;
                // keeps I2: both ways out end HEAD_WOKEN in the CAS that read `available`
                if (available(s) < w.requested) {
                    if ((s & HEAD_WOKEN) == 0 || casState(s, s & ~HEAD_WOKEN)) {
                        w.woken = false;
                        return false;
                    }
                    continue; // a release added permits without the lock: look again
                }
                if (casState(s, (s - need) & ~HEAD_WOKEN)) {
                    break;
                }
            }
            // Only this thread (interrupt, timeout) and holders of the lock decide a blocked waiter: this wins.
            w.casStatus(Waiter.WAITING, Waiter.GRANTED);
            unlink(w);
            return true;
        } finally {
            unlockServing();
        }
    }

    /** A blocked waiter failed by close(); only acquires are failed, never awaitIdle. */
    private SemaphoreClosedException closedWhileWaiting(Waiter w) {
        ended(Outcome.CLOSED, w);
        return closedFailure("acquire(" + w.requested + ")");
    }

    /** An async acquire past the fast path; {@code timeout} is null when untimed. */
    private CompletableFuture<Permit> acquireAsyncSlow(long permits, long timeoutNanos, Duration timeout) {
        boolean mayQueue = timeoutNanos > 0;
        Waiter w = mayQueue ? observed(new Waiter(this, permits, false, null)) : null;
        switch (takeOrEnqueue(permits, mayQueue, w)) {
            case TAKEN:
                return grantedAsync(permits);
            case CLOSED:
                ended(Outcome.CLOSED, permits);
                return CompletableFuture.failedFuture(closedFailure("acquireAsync(" + permits + ")"));
            case REFUSED:
                ended(Outcome.TIMEOUT, permits);
                return CompletableFuture.failedFuture(Failures.timedOut(name, permits, timeout));
            default:
                break;
        }
        CompletableFuture<Permit> future = w.future();
        if (timeoutNanos != Timeouts.FOREVER) {
            Timeouts.failAfter(future, timeoutNanos, () -> Failures.timedOut(name, permits, timeout),
                    Scheduler.INSTANCE, Runnable::run);
        }
        return future;
    }

    /**
     * Takes {@code permits} (1..ceiling) by the lock-free path and reports the grant (I7), or takes nothing and
     * returns false when that path cannot (closed, queued, not enough free): a keyed family's way to a live key
     * (K7 of LocalKeyedSemaphore), which then makes the Permit with {@link #permitFor}, or asks the usual way. No
     * interrupt is tested here.
     */
    boolean tryTakeFast(long permits) {
        if (permits > 0 && permits <= ceiling && tryFast(permits)) {
            ended(Outcome.GRANTED, permits);
            return true;
        }
        return false;
    }

    /**
     * A Permit for {@code permits} this engine granted and reported, whose Permit was never made or was emptied
     * (K7 of LocalKeyedSemaphore).
     */
    LocalPermit permitFor(long permits) {
        return newPermit(permits);
    }

    /** A request granted {@code permits} without queueing: reports it (I7) and hands out the Permit. */
    private LocalPermit granted(long permits) {
        return granted(permits, false);
    }

    /** Hands out the Permit of a grant, and reports it (I7) unless that was done with its wait. */
    private LocalPermit granted(long permits, boolean recorded) {
        LocalPermit p = newPermit(permits);
        if (!recorded) {
            ended(Outcome.GRANTED, permits);
        }
        return p;
    }

    /**
     * An async request granted {@code permits} without queueing: reports it (I7) and returns a completed
     * future. Unless leak detection tracks the Permit or a listener times it, the future is the Permit.
     */
    private CompletableFuture<Permit> grantedAsync(long permits) {
        if (leakDetection != null || listeners.active()) {
            return CompletableFuture.completedFuture(granted(permits));
        }
        ReadyPermit p = new ReadyPermit(this, permits);
        ended(Outcome.GRANTED, permits);
        return p.future();
    }

    /** Starts timing a waiter about to queue, only if someone observes (a listener, a JFR recording). */
    private Waiter observed(Waiter w) {
        w.queuedAt = listeners.now();
        w.jfr = WaitEvent.start(name, w.requested, queued);
        return w;
    }

    /**
     * The end of a request that queued (I7): with its wait. Drops the JFR event, which a waiter that
     * becomes a Permit would otherwise keep for as long as the Permit is held.
     */
    private void ended(Outcome outcome, Waiter w) {
        WaitEvent jfr = w.jfr;
        w.jfr = null;
        endedAfterQueueing(outcome, w.requested, w.queuedAt, jfr);
    }

    // ---------------------------------------------------------------- awaitIdle

    @Override
    public void awaitIdle() throws InterruptedException {
        notInterrupted("awaitIdle()");
        Waiter w = new Waiter(this, 0, true, Thread.currentThread());
        if (enqueueIdle(w)) {
            awaitGrant(w, false, 0L, true);
        }
    }

    @Override
    public CompletableFuture<Void> awaitIdleAsync() {
        Waiter w = new Waiter(this, 0, true, null);
        if (!enqueueIdle(w)) {
            return CompletableFuture.completedFuture(null);
        }
        return w.future();
    }

    /** Returns false if already idle (nothing held, nobody queued), else queues {@code w}. */
    private boolean enqueueIdle(Waiter w) {
        // Like takeOrEnqueue: an idle waiter queued at the head has just been found not to fit (I3).
        lock.lock();
        try {
            if (group != null) {
                if (head == null && group.idleLocked(slot)) {
                    return false;
                }
                link(w); // P0: no flag to set
                return true;
            }
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
        if (!tryReleaseFast(permits)) {
            releaseSlow(permits);
        }
    }

    /**
     * The release without the lock, allowed while nobody is queued or the head is a woken thread that
     * will take them itself (I2); false when the queue must be served under the lock.
     */
    private boolean tryReleaseFast(long permits) {
        long add = permits << SHIFT;
        for (;;) {
            long s = state;
            if ((s & (QUEUED | HEAD_WOKEN)) == QUEUED) {
                return false;
            }
            if (casState(s, s + add)) {
                return true;
            }
        }
    }

    private void releaseSlow(long permits) {
        lock.lock();
        finish(unlockServed(permits));
    }

    /** Keeps a forgotten Permit's permits consumed: limit and held both drop (I1), limit not below 0. */
    void forget(long permits) {
        if (group != null) {
            forgetPartitioned(permits);
            return;
        }
        Waiter done;
        long oldLimit;
        long newLimit;
        lock.lock();
        oldLimit = limit;
        newLimit = Math.max(0, oldLimit - permits);
        limit = newLimit;
        done = unlockServed(newLimit - oldLimit + permits); // >= 0: what the floor at 0 leaves over
        listeners.limitChanged(oldLimit, newLimit); // before the grants it made are told
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
     * Leaves a critical section that may have added permits or removed waiters: serves the queue (I3),
     * detaches the done chain (I6), unlocks, and only then finishes the decided waiters. Every such
     * critical section ends here, in a {@code finally}.
     */
    private void unlockServing() {
        finish(unlockServed());
    }

    /** {@link #unlockServing()} without the finishing: returns the done chain, for the caller to finish. */
    private Waiter unlockServed() {
        return unlockServed(0);
    }

    /**
     * {@link #unlockServed()} for a section that releases {@code handed} (>= 0) permits: they are not
     * added to {@code state} first but handed to the waiters they serve (see serveHeadsLocked), and the
     * rest is added before the unlock.
     */
    private Waiter unlockServed(long handed) {
        Waiter done;
        Thread woken;
        try {
            serveLocked(handed);
        } finally {
            done = doneFirst;
            woken = wake;
            doneFirst = null;
            doneLast = null;
            wake = null;
            lock.unlock();
        }
        if (woken != null) {
            LockSupport.unpark(woken);
        }
        return done;
    }

    /**
     * Grants head waiters while they fit (I3, I5), moving each to the done chain (I6); {@code handed}
     * permits (>= 0) were released in this section and are not yet in {@code state}.
     */
    private void serveLocked(long handed) {
        if (group != null) {
            group.serveLocked(this, handed);
            return;
        }
        long left = handed;
        do {
            left = serveHeadsLocked(left);
            if (left != 0) {
                addAvailable(left);
                left = 0;
            }
            hook(HookPoint.SERVED); // a release without the lock may land here (I2)
        } while (!updateFlagsLocked());
    }

    /**
     * Serves the heads that fit, taking their permits from {@code handed} first and from {@code state}
     * for the rest, in one CAS at most per grant: a release that grants the head it serves then moves
     * nothing through {@code state} at all. Until the section ends, the handed permits are neither
     * available nor held (I1 counts them back when added or granted), and nobody but this section can
     * see them, so none of them can be granted twice. Returns what is left of {@code handed}.
     */
    private long serveHeadsLocked(long handed) {
        for (Waiter w = head; w != null; w = head) {
            if (w.status != Waiter.WAITING) {
                unlink(w); // withdrawn; its owner will find it unlinked
                continue;
            }
            if (w.idle || (fairness == Fairness.BARGING && !w.async())) {
                // these read `state` alone: an idle waiter counts what is held, a woken head takes its
                // permits from `state` itself, so the handed permits go there first
                if (handed != 0) {
                    addAvailable(handed);
                    handed = 0;
                }
            }
            if (fairness == Fairness.BARGING && !w.async() && !w.idle) {
                // A blocked head takes its permits itself (takeWoken); nobody behind it is served first (I5).
                if (!w.woken && available(state) >= w.requested) {
                    w.woken = true;
                    wake = w.thread;
                }
                return handed;
            }
            if (w.idle) {
                if (limit - available(state) != 0) {
                    return handed;
                }
                if (!w.casStatus(Waiter.WAITING, Waiter.GRANTED)) {
                    unlink(w);
                    continue;
                }
            } else {
                long need = w.requested;
                if (handed >= need && state >= 0) {
                    // available is not negative, and what others may take meanwhile (a barging fast path
                    // takes only what is there) leaves it so: the handed permits serve this head alone
                    handed -= need;
                } else {
                    long lack = need - handed; // <= 0 when a negative `available` gets the surplus
                    long s;
                    do {
                        s = state;
                        if (available(s) + handed < need) {
                            return handed;
                        }
                    } while (!casState(s, s - (lack << SHIFT)));
                    handed = 0;
                }
                if (!w.casStatus(Waiter.WAITING, Waiter.GRANTED)) {
                    handed += need; // keeps I4: withdrawn between the check and the grant
                    unlink(w);
                    continue;
                }
            }
            unlink(w);
            decidedLocked(w);
        }
        return handed;
    }

    /** Appends a decided, unlinked waiter to the done chain (I6). */
    void decidedLocked(Waiter w) {
        if (doneLast == null) {
            doneFirst = w;
        } else {
            doneLast.nextDone = w;
        }
        doneLast = w;
    }

    /** Completes decided waiters (grant, close) outside the lock; async ones through the trampoline. */
    private void finish(Waiter chain) {
        Waiter async = null;
        Waiter asyncLast = null;
        for (Waiter w = chain; w != null; ) {
            Waiter next = w.nextDone;
            w.nextDone = null;
            if (!w.async()) {
                LockSupport.unpark(w.thread);
            } else if (asyncLast == null) {
                async = asyncLast = w;
            } else {
                asyncLast.nextDone = w;
                asyncLast = w;
            }
            w = next;
        }
        if (async != null) {
            Trampoline.run(async);
        }
    }

    /**
     * Completes an async waiter's future; called by the trampoline, never under the lock. The waiter is its
     * own grant (see Waiter) unless leak detection tracks the Permit or a listener times it.
     */
    void complete(Waiter w) {
        if (w.status == Waiter.CLOSED) {
            // A caller that completed the future first saw its own outcome, not the close (I7).
            boolean told = w.completeInternally(null, closedFailure("acquireAsync(" + w.requested + ")"));
            ended(told ? Outcome.CLOSED : w.givenUpAs(), w);
        } else if (w.idle) {
            w.completeInternally(null, null);
        } else {
            LocalPermit p = leakDetection == null && !listeners.active() ? w.grant() : newPermit(w.requested);
            if (w.completeInternally(p, null)) {
                ended(Outcome.GRANTED, w);
            } else {
                // keeps I4: the future was completed by someone else first, which is how this request
                // ended; its permits go back without a `released` event, since its caller never had them
                ended(w.givenUpAs(), w);
                long n = p == w ? w.revoke() : p.getAndClear();
                if (n != 0) {
                    release(n);
                }
            }
        }
    }

    /**
     * Removes a waiter whose status its owner just set to CANCELLED; the queue is served again, since
     * it may have been the head.
     */
    void withdraw(Waiter w) {
        lock.lock();
        try {
            if (w.linked) {
                unlink(w);
            }
        } finally {
            unlockServing();
        }
    }

    /** An async waiter's caller gave up first (cancel, complete, a timeout) and it was withdrawn: records it (I7). */
    void gaveUp(Waiter w, Outcome how) {
        if (!w.idle) {
            ended(how, w);
        }
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
        QUEUE_LENGTH.setRelease(this, queued + 1);
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
        QUEUE_LENGTH.setRelease(this, queued - 1);
    }

    /**
     * keeps I2, after serving: sets the flags from the queue. HEAD_WOKEN is cleared only by a CAS on a
     * state in which the head still does not fit; if permits came in without the lock meanwhile, it
     * returns false and the queue is served again.
     */
    private boolean updateFlagsLocked() {
        Waiter h = head;
        boolean headWoken = h != null && h.woken && h.status == Waiter.WAITING;
        long flags = (h != null ? QUEUED : 0) | (idleWaiters > 0 ? IDLE : 0) | (headWoken ? HEAD_WOKEN : 0);
        for (;;) {
            long s = state;
            if ((s & HEAD_WOKEN) != 0 && !headWoken && h != null && h.status == Waiter.WAITING
                    && (h.idle ? limit - available(s) == 0 : available(s) >= h.requested)) {
                return false;
            }
            long next = (s & ~(QUEUED | IDLE | HEAD_WOKEN)) | flags;
            if (s == next || casState(s, next)) {
                return true;
            }
        }
    }

    // ---------------------------------------------------------------- resizing

    @Override
    public void setPermits(long newLimit) {
        notAPartition("setPermits(" + newLimit + ")");
        Checks.limit(newLimit, ceiling, name);
        long old;
        Waiter done;
        lock.lock();
        try {
            old = limit;
            limit = newLimit;
            addAvailable(newLimit - old);
        } finally {
            done = unlockServed();
        }
        listeners.limitChanged(old, newLimit); // before the grants it made are told
        finish(done);
    }

    @Override
    public long addPermits(long n) {
        notAPartition("addPermits(" + n + ")");
        Checks.nonNegative("addPermits: n", n);
        long old;
        long added;
        Waiter done;
        lock.lock();
        try {
            old = limit;
            added = Math.min(n, ceiling - old);
            limit = old + added;
            addAvailable(added);
        } finally {
            done = unlockServed();
        }
        listeners.limitChanged(old, old + added); // before the grants it made are told
        finish(done);
        return added;
    }

    @Override
    public long reducePermits(long n) {
        notAPartition("reducePermits(" + n + ")");
        Checks.nonNegative("reducePermits: n", n);
        long old;
        long removed;
        lock.lock();
        try {
            old = limit;
            removed = Math.min(n, old);
            limit = old - removed;
            addAvailable(-removed);
        } finally {
            unlockServing(); // fewer permits serve nobody new, but every mutation leaves the same way
        }
        listeners.limitChanged(old, old - removed);
        return removed;
    }

    // ---------------------------------------------------------------- close

    @Override
    protected void closeWith(Throwable cause) {
        notAPartition("close()");
        boolean first;
        lock.lock();
        try {
            first = closeLocked(cause, this);
            if (group != null) {
                group.closeLocked(cause);
            }
            // an idle waiter may now be at the head with nothing held: unlockServing grants it
        } finally {
            unlockServing();
        }
        ScheduledFuture<?> refill = refillTask;
        if (refill != null) {
            refill.cancel(false);
        }
        if (first) {
            listeners.closed();
        }
    }

    @Override
    public boolean isClosed() {
        return (state & CLOSED) != 0;
    }

    /**
     * Closes this semaphore with one CAS if it is idle now: nothing held, nobody queued, nobody waiting for it to
     * be idle. How a {@link KeyedSemaphore} retires a key's semaphore (K3 of LocalKeyedSemaphore): a grant and
     * this close are CASes on the same state word, so one that comes first decides the other. Nobody is told:
     * the family does not report its keys' removals.
     */
    boolean tryCloseIdle() {
        long s = state;
        return (s & FLAGS) == 0 && available(s) == limit && casState(s, s | CLOSED);
    }

    // ---------------------------------------------------------------- queries

    @Override
    public long permits() {
        return group == null ? limit : group.parent.limit;
    }

    @Override
    public long maxPermits() {
        return ceiling;
    }

    @Override
    public long availablePermits() {
        return group == null || group.parent == this ? available(state) : group.available(slot);
    }

    @Override
    public int queueLength() {
        return group == null || group.parent != this ? queued : group.queued();
    }

    @Override
    public State state() {
        long s = state;
        if (group == null) {
            return new State(limit, ceiling, available(s), queued, (s & CLOSED) != 0, false);
        }
        return new State(permits(), ceiling, availablePermits(), queueLength(), (s & CLOSED) != 0, false);
    }

    @Override
    public Semaphore partition(String name) {
        Objects.requireNonNull(name, "name");
        if (group == null || group.parent != this) {
            throw new IllegalArgumentException("semaphore '" + this.name + "' has no partition '" + name + "'; "
                    + (group == null ? "it has no partitions" : "it is a partition of semaphore '"
                            + group.parent.name + "'"));
        }
        return group.view(name);
    }

    @Override
    public List<String> partitionNames() {
        return group == null || group.parent != this ? List.of() : group.spec.names();
    }

    @Override
    public Fairness fairness() {
        return fairness;
    }

    @Override
    public String toString() {
        long s = state;
        return "Semaphore[name=" + name + ", "
                + Failures.counts(permits(), availablePermits(), queueLength(), (s & CLOSED) != 0) + "]";
    }

    // ---------------------------------------------------------------- partitions (P rules: see Partitions)

    /** A partitioned tryAcquire: granted exactly when the request would be served now (P5). */
    private Optional<Permit> tryAcquirePartitioned(long permits) {
        switch (takeOrEnqueue(permits, false, null)) {
            case TAKEN:
                return Optional.of(granted(permits));
            case CLOSED:
                ended(Outcome.CLOSED, permits);
                throw closedFailure("tryAcquire(" + permits + ")");
            default:
                ended(Outcome.UNAVAILABLE, permits);
                return Optional.empty();
        }
    }

    /** {@link #takeOrEnqueue} for a partitioned semaphore: its own queue first (FIFO), then the group's rules. */
    private Admission admitPartitionedLocked(long permits, boolean mayQueue, Waiter waiter) {
        if ((state & CLOSED) != 0) {
            return Admission.CLOSED;
        }
        if (permits == 0) {
            return Admission.TAKEN;
        }
        if (head == null && group.takeLocked(slot, permits)) {
            return Admission.TAKEN;
        }
        if (!mayQueue) {
            return Admission.REFUSED;
        }
        link(waiter); // P0: QUEUED is set already
        return Admission.QUEUED;
    }

    /** A partitioned drain: what a request of this partition (or of none) at its queue's head could take now. */
    private Permit drainPartitioned() {
        long n;
        lock.lock();
        try {
            if ((state & CLOSED) != 0) {
                n = -1;
            } else {
                n = group.capacityLocked(slot); // whatever its own queue, as unpartitioned; never what is owed to others
                if (n > 0 && !group.takeLocked(slot, n)) {
                    throw new AssertionError("a capacity that could not be taken");
                }
            }
        } finally {
            lock.unlock(); // took permits, added none, removed no waiter: nothing to serve
        }
        if (n < 0) {
            ended(Outcome.CLOSED, 0);
            throw closedFailure("drainPermits()");
        }
        return granted(n);
    }

    /** {@link #forget} on a partitioned semaphore: the parent's limit and this partition's holding both drop. */
    private void forgetPartitioned(long permits) {
        LocalSemaphore parent = group.parent;
        long oldLimit;
        long newLimit;
        Waiter done;
        lock.lock();
        try {
            oldLimit = parent.limit;
            newLimit = Math.max(0, oldLimit - permits);
            parent.limit = newLimit;
            group.forgotLocked(slot, permits, newLimit - oldLimit + permits);
        } finally {
            done = unlockServed();
        }
        parent.listeners.limitChanged(oldLimit, newLimit); // before the grants it made are told
        finish(done);
    }

    /** Resizing and closing belong to the parent (API.md §11a). */
    private void notAPartition(String what) {
        if (group != null && group.parent != this) {
            throw new UnsupportedOperationException(what + " on partition '" + name + "': resize or close its "
                    + "parent, semaphore '" + group.parent.name + "'");
        }
    }

    /**
     * Sets CLOSED, keeping the cause (A2), and fails the queued acquires onto {@code section}'s done chain (a
     * view's are failed by its parent's close); idle waiters stay. Lock held.
     *
     * @return whether this call closed it
     */
    boolean closeLocked(Throwable cause, LocalSemaphore section) {
        boolean first = false;
        for (;;) {
            long s = state;
            if ((s & CLOSED) != 0) {
                break; // closed before: its cause (or none) stays
            }
            keepCloseCause(cause); // before the CAS that closes: whoever sees CLOSED sees it (A2)
            if (casState(s, s | CLOSED)) {
                first = true;
                break;
            }
        }
        for (Waiter w = head; w != null; ) {
            Waiter next = w.next;
            if (!w.idle) {
                boolean fail = w.casStatus(Waiter.WAITING, Waiter.CLOSED);
                unlink(w);
                if (fail) {
                    section.decidedLocked(w);
                }
            }
            w = next;
        }
        return first;
    }

    /** The state word, for Partitions. */
    long stateWord() {
        return state;
    }

    @Override
    public List<PartitionState> partitionStates() {
        return group == null || group.parent != this ? List.of() : group.partitionStates();
    }

    /** The first queued waiter (lock held), for Partitions. */
    Waiter headLocked() {
        return head;
    }

    /** Removes a queued waiter (lock held), for Partitions. */
    void unlinkLocked(Waiter w) {
        unlink(w);
    }

    /** Adds {@code delta} (may be negative) to the parent's available permits (lock held), for Partitions. */
    void addAvailableLocked(long delta) {
        addAvailable(delta);
    }

    /** The limit, for Partitions (the parent's). */
    long limitLocked() {
        return limit;
    }

    /** Its own queue's length, for Partitions. */
    int ownQueueLength() {
        return queued;
    }

    /** The lock (shared by a parent and its partitions), for Partitions. */
    ReentrantLock lock() {
        return lock;
    }

    private void checkRequest(long permits) {
        Checks.request(permits, ceiling, name);
    }

    /** The lock, for tests that must hold it to stage a race deterministically. */
    ReentrantLock lockForTests() {
        return lock;
    }

    /**
     * Checks I1-I3, I6 and the queue's bookkeeping; for tests, at quiescence.
     *
     * @throws AssertionError naming the broken invariant
     */
    void checkInvariants() {
        if (group != null) {
            group.checkInvariants();
            return;
        }
        lock.lock();
        try {
            long s = state;
            long lim = limit;
            long avail = available(s);
            long held = lim - avail;
            check(lim >= 0 && lim <= ceiling, "I1: limit " + lim + " outside 0.." + ceiling);
            check(held >= 0, "I1: held " + held + " < 0 (available " + avail + ", limit " + lim + ")");
            int idle = checkQueueLocked();
            check(((s & QUEUED) != 0) == (head != null), "I2: QUEUED flag disagrees with the queue");
            check(((s & IDLE) != 0) == (idle > 0), "I2: IDLE flag disagrees with the queue");
            check((s & HEAD_WOKEN) == 0 || (head != null && head.woken),
                    "I2: HEAD_WOKEN set but the head is not a woken thread: " + this);
            if (head != null && head.status == Waiter.WAITING) {
                check(head.idle ? held > 0 : avail < head.requested || head.woken,
                        "I3: head waiter fits but is still queued: " + this);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Checks the queue's links and counts and that the done chain is empty (I6), at quiescence.
     *
     * @return how many idle waiters are queued
     */
    int checkQueueLocked() {
        int count = 0;
        int idle = 0;
        Waiter prev = null;
        for (Waiter w = head; w != null; w = w.next) {
            check(w.prev == prev, "queue: broken prev link");
            check(w.linked, "queue: linked waiter not marked linked");
            check(w.nextDone == null, "I6: a queued waiter is on the done chain");
            count++;
            if (w.idle) {
                idle++;
            }
            prev = w;
        }
        check(prev == tail, "queue: tail is not the last waiter");
        check(doneFirst == null && doneLast == null, "I6: the done chain is not empty with the lock free");
        check(count == queued, "queue: queueLength " + queued + " but " + count + " linked");
        check(idle == idleWaiters, "queue: idle count " + idleWaiters + " but " + idle + " linked");
        return idle;
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new AssertionError(message);
        }
    }
}
