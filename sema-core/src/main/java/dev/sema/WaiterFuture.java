package dev.sema;

import java.util.concurrent.CompletableFuture;

/**
 * The future of an async waiter. Any completion from outside ({@code cancel}, {@code complete},
 * {@code completeExceptionally}, and so {@code orTimeout}/{@code completeOnTimeout}) withdraws the
 * waiter first and only then completes the future, so that dependent stages (which run inline) already
 * see the semaphore without it; the semaphore completes it only through {@link #completeInternally}. A
 * grant that loses the race sees {@code completeInternally} fail and gives its permits back.
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
        withdraw();
        return super.complete(value);
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        withdraw();
        return super.completeExceptionally(ex);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        withdraw();
        return super.cancel(mayInterruptIfRunning);
    }

    /**
     * Leaves the queue unless already decided. Runs before the future completes: completing it runs its
     * dependents inline, and they must not find the withdrawn waiter still queued (under FIFO it would
     * keep them from free permits). A grant decided before this still reaches completeInternally, which
     * then loses to the completion from outside and gives the permits back.
     */
    private void withdraw() {
        if (waiter.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
            waiter.semaphore.withdraw(waiter);
        }
    }
}
