package dev.sema.internal;

import dev.sema.Permit;
import java.util.concurrent.CompletableFuture;

/**
 * The future of a request that waits in two places (a key's semaphore, then the parent's), shared by the local
 * and the Redis keyed families: cancelling it cancels the wait in progress, whose failure then gives back
 * whatever was granted.
 */
public final class TwoStepFuture extends CompletableFuture<Permit> {
    private volatile CompletableFuture<Permit> stage;

    /**
     * A future whose wait is {@code first} until {@link #next} moves it on.
     *
     * @param first the first wait
     */
    public TwoStepFuture(CompletableFuture<Permit> first) {
        this.stage = first;
    }

    /**
     * The wait goes on in {@code next}; cancelled at once if this future was completed meanwhile.
     *
     * @param next the second wait
     */
    public void next(CompletableFuture<Permit> next) {
        stage = next;
        if (isDone()) {
            next.cancel(false);
        }
    }

    // Completed by anyone (a cancel, the caller's own timeout or value, or the family once the wait ended):
    // the wait in progress stops, a no-op when it is what ended. Its failure then gives back what was granted.

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        boolean cancelled = super.cancel(mayInterruptIfRunning);
        stage.cancel(mayInterruptIfRunning);
        return cancelled;
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean done = super.completeExceptionally(ex);
        stage.cancel(false);
        return done;
    }

    @Override
    public boolean complete(Permit value) {
        boolean done = super.complete(value);
        stage.cancel(false);
        return done;
    }
}
