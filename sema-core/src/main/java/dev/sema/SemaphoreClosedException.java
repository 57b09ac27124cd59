package dev.sema;

import java.io.Serial;

/**
 * Thrown by an acquire on a {@link Semaphore} that is closed, and used to fail every waiter queued
 * when it closes. Permits already held are unaffected and may still be released.
 */
public class SemaphoreClosedException extends IllegalStateException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message names the semaphore and what was asked
     */
    public SemaphoreClosedException(String message) {
        super(message);
    }
}
