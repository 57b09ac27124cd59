package dev.sema;

import java.time.Duration;

/** The ways to wait for permits; scenarios that hold for all of them run once per style. */
enum AcquireStyle {
    /** {@code acquire(n)} on a platform thread. */
    BLOCKING(true),
    /** {@code acquire(n)} on a virtual thread. */
    BLOCKING_VIRTUAL(true),
    /** {@code acquire(n, timeout)} with a timeout far beyond the test. */
    TIMED(true),
    /** {@code acquireAsync(n)}. */
    ASYNC(false),
    /** {@code acquireAsync(n, timeout)} with a timeout far beyond the test. */
    ASYNC_TIMED(false);

    /** A timeout no test reaches. */
    static final Duration LONG = Duration.ofMinutes(10);

    final boolean blocking;

    AcquireStyle(boolean blocking) {
        this.blocking = blocking;
    }

    /** Starts an acquire of {@code n} in this style. */
    Attempt<Permit> start(Attempts attempts, Semaphore s, long n) {
        String label = name() + " acquire(" + n + ")#" + attempts.nextId();
        return switch (this) {
            case BLOCKING -> attempts.blocking(label, false, () -> s.acquire(n));
            case BLOCKING_VIRTUAL -> attempts.blocking(label, true, () -> s.acquire(n));
            case TIMED -> attempts.blocking(label, false, () -> s.acquire(n, LONG));
            case ASYNC -> attempts.async(label, s.acquireAsync(n));
            case ASYNC_TIMED -> attempts.async(label, s.acquireAsync(n, LONG));
        };
    }

    /**
     * Makes the call on the calling thread and returns what it returned (a permit, or the future of
     * one): for arguments that must be rejected at once, and for calls that must not block.
     */
    Object callHere(Semaphore s, long n) throws Exception {
        return switch (this) {
            case BLOCKING, BLOCKING_VIRTUAL -> s.acquire(n);
            case TIMED -> s.acquire(n, LONG);
            case ASYNC -> s.acquireAsync(n);
            case ASYNC_TIMED -> s.acquireAsync(n, LONG);
        };
    }

    /** Starts an acquire of {@code n} in this style, and waits until it is queued. */
    Attempt<Permit> startQueued(Attempts attempts, Semaphore s, long n) {
        return attempts.queued(s, () -> start(attempts, s, n));
    }
}
