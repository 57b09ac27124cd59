package dev.sema.reactor;

import dev.sema.Semaphore;
import java.util.concurrent.CompletionException;

/** The argument checks and the failure unwrapping that the operators of this package share. */
final class Requests {

    private Requests() {
    }

    /**
     * Checks a request against the semaphore's ceiling, as {@link Semaphore#acquireAsync(long)} would, but when
     * the operator is assembled rather than when it is subscribed.
     *
     * @throws IllegalArgumentException naming both numbers, if {@code permits} is negative or above
     *         {@code maxPermits()}
     */
    static long check(Semaphore semaphore, long permits) {
        long ceiling = semaphore.maxPermits();
        if (permits < 0 || permits > ceiling) {
            throw new IllegalArgumentException("requested " + permits + " permits, but a request must be between 0"
                    + " and maxPermits (" + ceiling + ") of semaphore '" + semaphore.name() + "'");
        }
        return permits;
    }

    /** What a future of sema-core failed with: the cause of a {@link CompletionException}, else itself. */
    static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}
