package dev.sema;

import dev.sema.internal.GivingUpFuture;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/** {@link Semaphore#withPermitsAsync}: acquire, run, release, for any {@link Semaphore}. */
final class WithPermits {
    private WithPermits() {
    }

    static <T> CompletableFuture<T> runAsync(CompletableFuture<Permit> acquired,
            Supplier<? extends CompletionStage<T>> action) {
        // The caller may give up (cancel, orTimeout, ...) while the permits are still awaited: withdraw
        // the request before the result completes, so that its dependents (run inline) no longer find it
        // queued; a grant that races with it is given back by the acquire future itself. The caller's
        // own completion of the result then stands, not the cancellation of the request.
        AtomicBoolean givingUp = new AtomicBoolean();
        CompletableFuture<T> result = new GivingUpFuture<>() {
            @Override
            protected boolean giveUp() {
                if (!acquired.isDone()) {
                    givingUp.set(true);
                    acquired.cancel(false); // the acquire's own future records its outcome
                }
                return false;
            }
        };
        acquired.whenComplete((permit, failure) -> {
            if (failure != null) {
                if (!givingUp.get()) {
                    result.completeExceptionally(failure);
                }
                return;
            }
            if (result.isDone() || givingUp.get()) {
                permit.close();
                return;
            }
            CompletionStage<T> stage;
            try {
                stage = action.get();
            } catch (Throwable t) {
                permit.close();
                result.completeExceptionally(t);
                return;
            }
            if (stage == null) {
                permit.close();
                result.completeExceptionally(new NullPointerException("withPermitsAsync action returned null"));
                return;
            }
            stage.whenComplete((value, error) -> {
                // Release first, so that whoever continues from the result finds the permits back.
                permit.close();
                if (error != null) {
                    result.completeExceptionally(error);
                } else {
                    result.complete(value);
                }
            });
        });
        return result;
    }
}
