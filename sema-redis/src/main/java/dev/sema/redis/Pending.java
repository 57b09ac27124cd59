package dev.sema.redis;

import dev.sema.internal.GivingUpFuture;
import dev.sema.internal.Outcome;
import dev.sema.internal.WaitEvent;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One queued request of this process ({@code acquire} or {@code awaitIdle}), known to Redis by
 * {@link #id}. Its outcome is decided once, by one CAS on {@link #status}: WAITING to DONE (granted,
 * idle reached, failed) or to WITHDRAWN (timeout, interrupt, cancel; the withdrawer then sends CANCEL,
 * which also releases a grant that raced with it).
 */
final class Pending<T> {
    static final int WAITING = 0;
    static final int DONE = 1;
    static final int WITHDRAWN = 2;

    final LettuceSemaphore semaphore;
    final String id;
    final long permits;
    final boolean idle;
    final Future<T> future;
    private final AtomicInteger status = new AtomicInteger(WAITING);
    /** When the last request that found this waiter still queued in Redis was sent (nanoTime). */
    volatile long queuedSeenAt;
    /** When it was sent, if a listener was registered then (else Listeners.UNTIMED). */
    long queuedAt;
    /** Its JFR wait, if a recording wanted one when it was sent. */
    WaitEvent jfr;
    private volatile boolean everQueued;
    /**
     * Set before its ACQUIRE is sent again under the same id (LettuceSemaphore's L12): from then on a
     * wake-up for {@link #id} may be one of a grant Redis already ended, and is confirmed before it is trusted.
     */
    private volatile boolean queuedAgain;
    /**
     * A blocking caller's first ACQUIRE reply, completed on the I/O thread, which that caller handles
     * itself (LettuceSemaphore's L8); null once taken, and for every other request.
     */
    java.util.concurrent.CompletableFuture<Protocol.Acquired> firstReply;
    /** When that ACQUIRE was sent (nanoTime). */
    long firstSent;

    Pending(LettuceSemaphore semaphore, String id, long permits, boolean idle) {
        this.semaphore = semaphore;
        this.id = id;
        this.permits = permits;
        this.idle = idle;
        this.future = new Future<>(this);
        this.queuedSeenAt = System.nanoTime();
        this.queuedAt = dev.sema.internal.Listeners.UNTIMED;
    }

    boolean isWaiting() {
        return status.get() == WAITING;
    }

    /** Claims the outcome for a grant, a failure or the end of an idle wait. */
    boolean decide() {
        return status.compareAndSet(WAITING, DONE);
    }

    boolean withdraw() {
        return status.compareAndSet(WAITING, WITHDRAWN);
    }

    /** Its own ACQUIRE answered that it queued. */
    void queued(long sentAt) {
        everQueued = true;
        seenQueued(sentAt);
    }

    /** Whether Redis ever said it was queued (else a grant came with its first reply: no wait). */
    boolean everQueued() {
        return everQueued;
    }

    /** Its ACQUIRE is about to be sent again under the same id (L12). */
    void queueAgain() {
        queuedAgain = true;
    }

    /** Whether its ACQUIRE was ever sent again under the same id (L12). */
    boolean queuedAgain() {
        return queuedAgain;
    }

    void seenQueued(long sentAt) {
        if (sentAt - queuedSeenAt > 0) {
            queuedSeenAt = sentAt;
        }
    }

    String what() {
        return idle ? "awaitIdle()" : "acquire(" + permits + ")";
    }

    String waitingFor() {
        return idle ? "idle" : permits + " permits";
    }

    /**
     * The future handed to the caller. Completing it from outside ({@code cancel}, {@code complete},
     * {@code completeExceptionally}, and so {@code orTimeout}) first withdraws the request (L1), then
     * completes; the semaphore completes it only through {@link #completeInternally}, and gives back a
     * grant that loses that race.
     */
    static final class Future<T> extends GivingUpFuture<T> {
        private final Pending<T> pending;

        Future(Pending<T> pending) {
            this.pending = pending;
        }

        @Override
        protected boolean giveUp() {
            return pending.semaphore.withdraw(pending);
        }

        @Override
        protected void gaveUp(Outcome how) {
            pending.semaphore.gaveUp(pending, how);
        }
    }
}
