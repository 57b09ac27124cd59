package dev.sema.internal;

import java.util.concurrent.CompletableFuture;

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
     * @param why {@link Outcome#TIMEOUT} when completed with a {@code TimeoutException} (an
     *        {@code orTimeout}, or the engine's own timer), else {@link Outcome#CANCELLED}
     */
    protected abstract void giveUp(Outcome why);

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
        giveUp(Outcome.CANCELLED);
        return super.complete(value);
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        giveUp(Outcome.ofGivingUp(ex));
        return super.completeExceptionally(ex);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        giveUp(Outcome.CANCELLED);
        return super.cancel(mayInterruptIfRunning);
    }
}
