package dev.sema;

import java.util.concurrent.CompletableFuture;

/**
 * A future whose completion from outside ({@code cancel}, {@code complete}, {@code completeExceptionally},
 * and so {@code orTimeout}/{@code completeOnTimeout}) first runs {@link #giveUp}, and only then completes:
 * completing runs the dependent stages inline, and they must already see the request that this future
 * stands for withdrawn. The owner completes it through {@link #completeInternally}, which skips the hook.
 *
 * <p>{@code obtrudeValue}, {@code obtrudeException} and {@code completeAsync} bypass the hook; owners must
 * stay correct (lose no permit) when that happens.
 */
abstract class GivingUpFuture<T> extends CompletableFuture<T> {

    /** Withdraws the request this future stands for, unless it is already decided. */
    abstract void giveUp();

    /** Completes without {@link #giveUp}: the owner's own outcome. */
    final boolean completeInternally(T value, Throwable failure) {
        return failure == null ? super.complete(value) : super.completeExceptionally(failure);
    }

    @Override
    public boolean complete(T value) {
        giveUp();
        return super.complete(value);
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        giveUp();
        return super.completeExceptionally(ex);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        giveUp();
        return super.cancel(mayInterruptIfRunning);
    }
}
