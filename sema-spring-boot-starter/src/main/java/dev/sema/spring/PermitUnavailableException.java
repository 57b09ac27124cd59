package dev.sema.spring;

import java.io.Serial;
import java.time.Duration;
import java.util.Objects;

/**
 * No permit in time: thrown by a {@link WithPermits} method (or its returned future fails with it) when the
 * permits could not be had within the annotation's timeout (the cause is the semaphore's
 * {@link java.util.concurrent.TimeoutException}, or none when a {@code timeout = "0"} found none free), when the
 * wait was interrupted (the thread's interrupt status is then set again, and the cause is the
 * {@link InterruptedException}), when the semaphore was closed (the cause is the
 * {@link dev.sema.SemaphoreClosedException}), as during shutdown, or when a Redis semaphore's Redis cannot be
 * reached (the cause is the {@code dev.sema.redis.RedisSemaphoreException}).
 *
 * <p>In Spring MVC it becomes HTTP 503 (Service Unavailable) with a {@code Retry-After} header
 * ({@code sema.web.retry-after}) and a JSON body naming the semaphore, unless an {@code @ExceptionHandler} of the
 * application handles it first.
 */
public class PermitUnavailableException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The semaphore's name. */
    private final String semaphore;
    /** How many permits were asked for. */
    private final long permits;
    /** How long the request waited. */
    private final Duration waited;

    /**
     * Creates the exception with a message that names the semaphore, the permits and the wait.
     *
     * @param semaphore the semaphore's name
     * @param permits how many permits were asked for
     * @param waited how long the request waited before it gave up
     * @param cause what ended the wait: a {@code TimeoutException}, {@code InterruptedException},
     *        {@code SemaphoreClosedException} or {@code RedisSemaphoreException}, or {@code null}
     * @throws NullPointerException if {@code semaphore} or {@code waited} is {@code null}
     */
    public PermitUnavailableException(String semaphore, long permits, Duration waited, Throwable cause) {
        super(message(semaphore, permits, waited, cause), cause);
        this.semaphore = semaphore;
        this.permits = permits;
        this.waited = waited;
    }

    /**
     * Returns the name of the semaphore whose permits were not available.
     *
     * @return the semaphore's name
     */
    public String semaphore() {
        return semaphore;
    }

    /**
     * Returns how many permits were asked for.
     *
     * @return the number of permits
     */
    public long permits() {
        return permits;
    }

    /**
     * Returns how long the request waited before it gave up (zero when it was refused at once).
     *
     * @return the wait
     */
    public Duration waited() {
        return waited;
    }

    private static String message(String semaphore, long permits, Duration waited, Throwable cause) {
        Objects.requireNonNull(semaphore, "semaphore");
        Objects.requireNonNull(waited, "waited");
        String why = cause instanceof InterruptedException ? " (interrupted)"
                : cause instanceof dev.sema.SemaphoreClosedException ? " (the semaphore is closed)"
                : Refusals.isRedisFailure(cause) ? " (Redis cannot be reached: " + Settings.redacted(cause.getMessage())
                        + ")" : "";
        return permits + (permits == 1 ? " permit" : " permits") + " of semaphore '" + semaphore
                + "' not available after " + Durations.format(waited) + why;
    }
}
