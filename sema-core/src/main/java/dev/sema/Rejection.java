package dev.sema;

/** Why an acquire request ended without permits; see {@link SemaphoreListener#rejected}. */
public enum Rejection {
    /**
     * A {@code tryAcquire} found too few permits free (or, under {@link Fairness#FIFO}, a queue); for a
     * semaphore kept in another process ({@code RedisSemaphore}), also a request that failed because that
     * process could not be reached.
     */
    UNAVAILABLE,
    /** The timeout ran out: a timed acquire, or an async one whose future failed with a {@code TimeoutException}. */
    TIMEOUT,
    /** The caller gave up: its future was cancelled, or completed by someone else. */
    CANCELLED,
    /** The waiting thread was interrupted, on entry or while it waited. */
    INTERRUPTED,
    /** The semaphore was closed, before the request or while it waited. */
    CLOSED
}
