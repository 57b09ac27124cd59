package dev.sema.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * The future of a request that its caller may give up. A completion from outside ({@code cancel},
 * {@code complete}, {@code completeExceptionally}, and so {@code orTimeout}/{@code completeOnTimeout})
 * first runs {@link #giveUp}, and only then completes: completing runs the dependent stages inline, and they
 * must already find the request withdrawn. The owner completes it through {@link #completeInternally},
 * which skips the hook; when that returns {@code false} the caller's completion won, and the owner gives
 * back whatever it was about to deliver.
 *
 * <p>{@code obtrudeValue}, {@code obtrudeException} and {@code completeAsync} bypass the hook; owners must
 * stay correct (lose no permit) when that happens.
 *
 * @param <T> the result type
 */
public abstract class GivingUpFuture<T> extends CompletableFuture<T> {

    /** For subclasses. */
    protected GivingUpFuture() {
    }

    /**
     * Withdraws the request this future stands for, unless its outcome is already decided.
     *
     * @return whether this call withdrew it (then {@link #gaveUp} follows, once the future is complete)
     */
    protected abstract boolean giveUp();

    /**
     * Called once after a completion from outside that withdrew the request, with how the caller sees the
     * request end: read from the future's final state, so that of two racing completions from outside the
     * one that completed the future names the outcome. Does nothing unless overridden.
     *
     * @param how as {@link #givenUpAs()} reads it
     */
    protected void gaveUp(Outcome how) {
    }

    /**
     * How the caller sees this future end, once it was completed from outside.
     *
     * @return {@link Outcome#TIMEOUT} if it failed with a {@code TimeoutException} (an {@code orTimeout},
     *         or the engine's own timer), {@link Outcome#INTERRUPTED} with an {@code InterruptedException}
     *         (a blocked caller that waits on the future was interrupted), else {@link Outcome#CANCELLED}
     */
    public final Outcome givenUpAs() {
        if (state() != State.FAILED) {
            return Outcome.CANCELLED;
        }
        Throwable failure = exceptionNow();
        return failure instanceof TimeoutException ? Outcome.TIMEOUT
                : failure instanceof InterruptedException ? Outcome.INTERRUPTED : Outcome.CANCELLED;
    }

    /**
     * Completes without {@link #giveUp}: the owner's own outcome. For the engines only.
     *
     * @param value the value, when {@code failure} is null
     * @param failure the failure, or null
     * @return whether this call completed the future
     */
    public final boolean completeInternally(T value, Throwable failure) {
        return failure == null ? super.complete(value) : super.completeExceptionally(failure);
    }

    @Override
    public boolean complete(T value) {
        boolean withdrew = giveUp();
        return afterGivingUp(withdrew, super.complete(value));
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        boolean withdrew = giveUp();
        return afterGivingUp(withdrew, super.completeExceptionally(ex));
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        boolean withdrew = giveUp();
        return afterGivingUp(withdrew, super.cancel(mayInterruptIfRunning));
    }

    private boolean afterGivingUp(boolean withdrew, boolean completed) {
        if (withdrew) {
            gaveUp(givenUpAs());
        }
        return completed;
    }
}
