package dev.sema;

import dev.sema.internal.GivingUpFuture;
import dev.sema.internal.Outcome;
import dev.sema.internal.WaitEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A queued request of a {@link LocalSemaphore}: a blocked thread ({@code thread != null}) or an async
 * caller. Its outcome is decided once, by a CAS of {@link #status} away from {@link #WAITING}; the links
 * are guarded by the semaphore's lock.
 *
 * <p>An async waiter is also the future its caller holds, and, once granted while neither leak detection
 * tracks its Permit nor a listener times it, the Permit that future is completed with: one object where a
 * request, its future and its grant used to be three. As a future it follows {@link GivingUpFuture}: any
 * completion from outside withdraws the waiter first, so dependent stages already see the semaphore without
 * it, and the semaphore completes it only through {@code completeInternally}; a grant that loses that race
 * gives its permits back. When {@code obtrudeValue}, {@code obtrudeException} or {@code completeAsync}
 * bypass the withdrawal, the waiter stays queued until its turn, when its grant is given straight back. No
 * permit is lost.
 *
 * <p>As a Permit (see {@link FuturePermit}) its count is 0 until the grant adds {@link #requested} to it (an add, not a store: whoever casts the pending future
 * to a Permit and merges into it keeps what they merged), and the grant is added before the future is
 * completed, so a dependent stage never sees its Permit empty. A blocked waiter is never handed out as a
 * Permit: it would keep its thread reachable for as long as the Permit lives.
 */
final class Waiter extends FuturePermit {
    static final int WAITING = 0;
    static final int GRANTED = 1;
    static final int CANCELLED = 2;
    static final int CLOSED = 3;

    private static final VarHandle STATUS;

    static {
        try {
            STATUS = MethodHandles.lookup().findVarHandle(Waiter.class, "status", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The permits this request asks for. */
    final long requested;
    /** An awaitIdle waiter: needs nothing held, takes nothing. */
    final boolean idle;
    /** The blocked thread; null for an async waiter. */
    final Thread thread;
    /** When it was about to queue, if a listener was registered then (else Listeners.UNTIMED). */
    long queuedAt;
    /** Its JFR wait, if a recording wanted one when it was about to queue. */
    WaitEvent jfr;

    volatile int status;
    /**
     * BARGING, blocked waiters only: unparked to take its permits itself (see LocalSemaphore I3). Written
     * under the semaphore's lock; read by the waiting thread outside it.
     */
    volatile boolean woken;

    // Queue links, guarded by the semaphore's lock.
    Waiter prev;
    Waiter next;
    boolean linked;
    /**
     * The done chain and the trampoline's list, once decided and unlinked (I6): guarded by the lock while
     * on the done chain, then owned by the one thread that finishes it.
     */
    Waiter nextDone;

    Waiter(LocalSemaphore semaphore, long requested, boolean idle, Thread thread) {
        super(semaphore, 0);
        this.requested = requested;
        this.idle = idle;
        this.thread = thread;
    }

    boolean casStatus(int expected, int next) {
        return STATUS.compareAndSet(this, expected, next);
    }

    boolean async() {
        return thread == null;
    }

    // ---------------------------------------------------------------- as a future

    /**
     * Leaves the queue unless already decided. A grant decided before this still reaches completeInternally,
     * which then loses to the completion from outside and gives the permits back.
     */
    @Override
    protected boolean giveUp() {
        if (casStatus(WAITING, CANCELLED)) {
            semaphore.withdraw(this);
            return true;
        }
        return false;
    }

    @Override
    protected void gaveUp(Outcome how) {
        semaphore.gaveUp(this, how);
    }

    /** Makes this waiter its own grant, before its future is completed with it. */
    Waiter grant() {
        addHeld(requested);
        return this;
    }

    /** Takes back the grant of a waiter whose future was completed from outside first: at most what it has. */
    long revoke() {
        for (;;) {
            long h = permits();
            long n = Math.min(h, requested);
            if (n <= 0 || casHeld(h, h - n)) {
                return Math.max(n, 0);
            }
        }
    }
}
