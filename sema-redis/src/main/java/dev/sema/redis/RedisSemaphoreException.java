package dev.sema.redis;

import java.io.Serial;

/**
 * Thrown when a semaphore operation could not be carried out in Redis: Redis is unreachable or did not
 * answer in time, or the semaphore's keys are missing or hold something else. The message names the
 * semaphore and what was asked; the cause, if any, is the client's own exception.
 *
 * <p>When this is thrown by an acquire, no permit was handed to the caller. A request that reached
 * Redis anyway leaves nothing behind for long: a queued request that is no longer kept alive is
 * removed after the waiter time-to-live, and a grant nobody claims ends with its lease.
 */
public class RedisSemaphoreException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message names the semaphore and what was asked
     * @param cause the underlying failure, or {@code null}
     */
    public RedisSemaphoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
