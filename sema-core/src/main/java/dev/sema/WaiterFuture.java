package dev.sema;

import java.util.concurrent.CompletableFuture;

/**
 * The future of an async waiter. Any completion from outside ({@code cancel}, {@code complete},
 * {@code completeExceptionally}, and so {@code orTimeout}/{@code completeOnTimeout}) withdraws the
 * waiter; the semaphore completes it only through {@link #completeInternally}. A grant that loses the
 * race sees {@code completeInternally} fail and gives its permits back.
 *
 * <p>{@code obtrudeValue}, {@code obtrudeException} and {@code completeAsync} bypass these hooks: the
 * waiter then stays queued until its turn, when its grant is given straight back. No permit is lost.
 */
final class WaiterFuture<T> extends CompletableFuture<T> {
    private final Waiter waiter;

    WaiterFuture(Waiter waiter) {
        this.waiter = waiter;
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
        if (completedHere && waiter.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
            waiter.semaphore.withdraw(waiter);
        }
        return completedHere;
    }
}
