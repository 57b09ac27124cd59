package dev.sema.redis;

import java.util.concurrent.CompletableFuture;
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

    Pending(LettuceSemaphore semaphore, String id, long permits, boolean idle) {
        this.semaphore = semaphore;
        this.id = id;
        this.permits = permits;
        this.idle = idle;
        this.future = new Future<>(this);
        this.queuedSeenAt = System.nanoTime();
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

    void seenQueued(long sentAt) {
        if (sentAt - queuedSeenAt > 0) {
            queuedSeenAt = sentAt;
        }
    }

    String what() {
        return idle ? "awaitIdle()" : "acquire(" + permits + ")";
    }

    /**
     * The future handed to the caller. Completing it from outside ({@code cancel}, {@code complete},
     * {@code completeExceptionally}, and so {@code orTimeout}) withdraws the request; the semaphore
     * completes it only through {@link #completeInternally}, and gives back a grant that loses that race.
     */
    static final class Future<T> extends CompletableFuture<T> {
        private final Pending<T> pending;

        Future(Pending<T> pending) {
            this.pending = pending;
        }

        boolean completeInternally(T value, Throwable failure) {
            return failure == null ? super.complete(value) : super.completeExceptionally(failure);
        }

        @Override
        public boolean complete(T value) {
            return withdrawIf(super.complete(value));
        }

        @Override
        public boolean completeExceptionally(Throwable ex) {
            return withdrawIf(super.completeExceptionally(ex));
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return withdrawIf(super.cancel(mayInterruptIfRunning));
        }

        private boolean withdrawIf(boolean completedHere) {
            if (completedHere) {
                pending.semaphore.withdraw(pending);
            }
            return completedHere;
        }
    }
}
