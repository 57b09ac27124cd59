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

    /**
     * Creates the exception for a semaphore closed with a cause ({@link Semaphore#close(Throwable)}).
     *
     * @param message names the semaphore and what was asked
     * @param cause   why the semaphore was closed, or {@code null}
     */
    public SemaphoreClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
