package dev.sema;

import dev.sema.internal.GivingUpFuture;
import dev.sema.internal.Outcome;

/**
 * The future of an async waiter. Any completion from outside withdraws the waiter first (see
 * {@link GivingUpFuture}), so that dependent stages already see the semaphore without it; the semaphore
 * completes it only through {@link #completeInternally}. A grant that loses the race sees
 * {@code completeInternally} fail and gives its permits back.
 *
 * <p>When {@code obtrudeValue}, {@code obtrudeException} or {@code completeAsync} bypass the withdrawal,
 * the waiter stays queued until its turn, when its grant is given straight back. No permit is lost.
 */
final class WaiterFuture<T> extends GivingUpFuture<T> {
    private final Waiter waiter;

    WaiterFuture(Waiter waiter) {
        this.waiter = waiter;
    }

    /**
     * Leaves the queue unless already decided. A grant decided before this still reaches
     * completeInternally, which then loses to the completion from outside and gives the permits back.
     */
    @Override
    protected boolean giveUp() {
        if (waiter.casStatus(Waiter.WAITING, Waiter.CANCELLED)) {
            waiter.semaphore.withdraw(waiter);
            return true;
        }
        return false;
    }

    @Override
    protected void gaveUp(Outcome how) {
        waiter.semaphore.gaveUp(waiter, how);
    }
}
