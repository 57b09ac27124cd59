package dev.sema.internal;

/**
 * How an acquire request ended. Every request that ends has exactly one, recorded by its engine in one
 * place.
 */
public enum Outcome {
    /** The permits were granted (at once or after waiting); a request for 0 permits too. */
    GRANTED,
    /** A {@code tryAcquire} found too few permits (or, under FIFO, a queue). */
    UNAVAILABLE,
    /** The timeout ran out first: a timed acquire, or an async one failed with a {@code TimeoutException}. */
    TIMEOUT,
    /** The caller gave up: its future was cancelled or completed by someone else. */
    CANCELLED,
    /** The waiting thread was interrupted (on entry, or while it waited). */
    INTERRUPTED,
    /** The semaphore was closed (before the request, or while it waited). */
    CLOSED
}
