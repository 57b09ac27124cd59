package dev.sema;

import dev.sema.internal.WaitEvent;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A queued request of a {@link LocalSemaphore}: a blocked thread ({@code future == null}) or an async
 * caller. Its outcome is decided once, by a CAS of {@link #status} away from {@link #WAITING}; the links
 * are guarded by the semaphore's lock.
 */
final class Waiter {
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

    final LocalSemaphore semaphore;
    final long permits;
    /** An awaitIdle waiter: needs nothing held, takes nothing. */
    final boolean idle;
    final Thread thread;
    WaiterFuture<?> future;
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

    Waiter(LocalSemaphore semaphore, long permits, boolean idle, Thread thread) {
        this.semaphore = semaphore;
        this.permits = permits;
        this.idle = idle;
        this.thread = thread;
    }

    boolean casStatus(int expected, int next) {
        return STATUS.compareAndSet(this, expected, next);
    }
}
