package dev.sema.internal;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;

/**
 * The parent's side of a keyed semaphore's Permit (API.md §11b), for both families, local and on Redis: a request
 * takes the key's permits first, then as many of the parent's, and its Permit holds both.
 *
 * <p>Rules kept here:
 * <ul>
 * <li>P1: both sides are equal in every Permit handed to a caller: the parent's side is attached before it is
 *     handed over, and a drain keeps the smaller of the two and gives the rest back.</li>
 * <li>P2: when the parent refuses, times out, is interrupted or cancelled, or throws, the key's permits go back
 *     (the Permit is closed) before the failure reaches the caller: a request ends with both sides or neither.</li>
 * <li>P3: a timeout is one budget for both waits: the parent gets what is left of it after the key's wait.</li>
 * </ul>
 */
public final class ParentSide {
    private ParentSide() {
    }

    /**
     * A keyed Permit: the key's permits, and the parent's side once the parent granted it (P1). Its class keeps the
     * two sides equal through its own operations.
     */
    public abstract static class TwoSided implements Permit {
        /** The parent's side, equal to the key's; null without a parent, or until the parent granted it. */
        protected Permit parent;

        /** A Permit without the parent's side yet. */
        protected TwoSided() {
        }

        /**
         * Adds the parent's side, equal to this Permit's own; before the Permit is handed over.
         *
         * @param parentSide the parent's Permit
         */
        public final void attach(Permit parentSide) {
            this.parent = parentSide;
        }
    }

    /**
     * The deadline of a request's timeout (P3), read only when there is a parent to wait for after the key.
     *
     * @param timeout the timeout, or null for none
     * @param parent the parent, or null
     * @return a {@code System.nanoTime()} deadline, or 0 when unused
     */
    public static long deadline(Duration timeout, Semaphore parent) {
        return timeout == null || parent == null ? 0 : Timeouts.deadline(Timeouts.toNanos(timeout));
    }

    /**
     * What is left of a deadline (P3).
     *
     * @param deadline from {@link #deadline}
     * @return the time left, 0 once passed
     */
    public static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
    }

    /**
     * A blocking request's parent side (P1, P2).
     *
     * @param <P> the Permit's type
     * @param held the key's grant
     * @param parent the parent, or null: {@code held} as it is
     * @param permits the permits requested
     * @param timeout the request's timeout, or null for none
     * @param deadline from {@link #deadline}
     * @param interruptible whether an interrupt ends the wait
     * @return {@code held}, with the parent's side
     * @throws InterruptedException if interrupted while waiting for the parent
     * @throws TimeoutException if the deadline passed first
     */
    public static <P extends TwoSided> P acquire(P held, Semaphore parent, long permits, Duration timeout,
            long deadline, boolean interruptible) throws InterruptedException, TimeoutException {
        if (parent == null) {
            return held;
        }
        try {
            Permit p;
            if (timeout != null) {
                p = parent.acquire(permits, remaining(deadline));
            } else if (interruptible) {
                p = parent.acquire(permits);
            } else {
                p = parent.acquireUninterruptibly(permits);
            }
            held.attach(p);
            return held;
        } catch (Throwable t) {
            held.close(); // P2
            throw t;
        }
    }

    /**
     * A {@code tryAcquire}'s parent side (P1, P2).
     *
     * @param held the key's grant
     * @param parent the parent, or null: {@code held} as it is
     * @param permits the permits requested
     * @return {@code held} with the parent's side, or empty (the key's permits given back)
     */
    public static Optional<Permit> tryAcquire(TwoSided held, Semaphore parent, long permits) {
        if (parent == null) {
            return Optional.of(held);
        }
        Optional<Permit> p;
        try {
            p = parent.tryAcquire(permits);
        } catch (Throwable t) {
            held.close();
            throw t;
        }
        if (p.isEmpty()) {
            held.close();
            return p;
        }
        held.attach(p.get());
        return Optional.of(held);
    }

    /**
     * A drain's parent side: as many of the parent's as it has now, up to the key's; the rest of the key's back (P1).
     *
     * @param <P> the Permit's type
     * @param held what the key's drain took
     * @param parent the parent, or null: {@code held} as it is
     * @return {@code held}, both sides equal
     */
    public static <P extends TwoSided> P drain(P held, Semaphore parent) {
        if (parent == null) {
            return held;
        }
        try {
            long n = held.permits();
            Permit p = parent.drainPermits();
            if (p.permits() > n) {
                p.release(p.permits() - n);
            } else if (p.permits() < n) {
                held.release(n - p.permits());
            }
            held.attach(p);
            return held;
        } catch (Throwable t) {
            held.close();
            throw t;
        }
    }

    /**
     * An async request's parent side, once the key granted: completes {@code out} with {@code held} and the parent's
     * side, or fails it with the key's permits given back (P2); a caller who gave up first gets nothing, and what was
     * granted goes back.
     *
     * @param held the key's grant
     * @param parent the parent, or null
     * @param permits the permits requested
     * @param timeout the request's timeout, or null for none
     * @param deadline from {@link #deadline}
     * @param out the caller's future
     */
    public static void acquireAsync(TwoSided held, Semaphore parent, long permits, Duration timeout, long deadline,
            TwoStepFuture out) {
        if (parent == null) {
            if (!out.complete(held)) {
                held.close(); // the caller gave up first
            }
            return;
        }
        CompletableFuture<Permit> second;
        try {
            second = timeout == null ? parent.acquireAsync(permits) : parent.acquireAsync(permits, remaining(deadline));
        } catch (Throwable x) {
            held.close();
            out.completeExceptionally(x);
            return;
        }
        out.next(second);
        second.whenComplete((p, t) -> {
            if (t != null) {
                held.close(); // P2: the parent refused, or the wait was cancelled
                out.completeExceptionally(unwrap(t));
                return;
            }
            held.attach(p);
            if (!out.complete(held)) {
                held.close();
            }
        });
    }

    /**
     * The failure a future's stage reported, without the stage's wrapper.
     *
     * @param t what the stage failed with
     * @return its cause when wrapped, else itself
     */
    public static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
