package dev.sema.internal;

import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * The exceptions that end a request, with the same words from every engine: each names the semaphore and
 * what was asked. Building one is the only cost, so callers build them only on the failing path.
 */
public final class Failures {
    private Failures() {
    }

    /**
     * How messages name a semaphore.
     *
     * @param name the semaphore's name
     * @return {@code semaphore 'name'}
     */
    public static String describe(String name) {
        return "semaphore '" + name + "'";
    }

    /**
     * The request was refused because the semaphore is closed.
     *
     * @param semaphore the semaphore's name
     * @param what the request, e.g. {@code acquire(2)}
     * @return the exception
     */
    public static SemaphoreClosedException closed(String semaphore, String what) {
        return new SemaphoreClosedException(describe(semaphore) + " is closed: " + what + " refused");
    }

    /**
     * The request was refused because the semaphore is closed, with the cause it was closed with.
     *
     * @param semaphore the semaphore's name
     * @param what the request, e.g. {@code acquire(2)}
     * @param cause the cause given to {@code close(cause)}, or {@code null}
     * @return the exception
     */
    public static SemaphoreClosedException closed(String semaphore, String what, Throwable cause) {
        String message = describe(semaphore) + " is closed: " + what + " refused";
        return cause == null ? new SemaphoreClosedException(message)
                : new SemaphoreClosedException(message + " (closed because: " + cause + ")", cause);
    }

    /**
     * The thread was interrupted before the request started (its interrupt status is then cleared).
     *
     * @param semaphore the semaphore's name
     * @param what the request
     * @return the exception
     */
    public static InterruptedException interruptedBefore(String semaphore, String what) {
        return new InterruptedException("interrupted before " + what + " on " + describe(semaphore));
    }

    /**
     * The thread was interrupted while it waited, and the request was withdrawn.
     *
     * @param semaphore the semaphore's name
     * @param waitingFor what it waited for, e.g. {@code 2 permits} or {@code idle}
     * @return the exception
     */
    public static InterruptedException interruptedWhile(String semaphore, String waitingFor) {
        return new InterruptedException("interrupted while waiting for " + waitingFor + " on " + describe(semaphore));
    }

    /**
     * The request's timeout ran out.
     *
     * @param semaphore the semaphore's name
     * @param permits the permits requested
     * @param timeout the timeout given
     * @return the exception
     */
    public static TimeoutException timedOut(String semaphore, long permits, Duration timeout) {
        return new TimeoutException("timed out after " + timeout + " waiting for " + permits + " permits of "
                + describe(semaphore));
    }

    /**
     * The counts as both engines' {@code toString} show them.
     *
     * @param permits the limit
     * @param available the permits available (negative below what is held)
     * @param queued the queue's length
     * @param closed whether it is closed
     * @return {@code permits=.., available=.., queued=.., closed=..}
     */
    public static String counts(long permits, long available, long queued, boolean closed) {
        return "permits=" + permits + ", available=" + available + ", queued=" + queued + ", closed=" + closed;
    }
}
