package dev.sema.internal;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.util.Objects;

/**
 * Argument checks of the public API, one method per rule: each throws {@link IllegalArgumentException}
 * (or {@link NullPointerException}) naming the argument and the bound it broke, and returns normally
 * otherwise. None changes any state, so a refused call leaves everything as it was.
 */
public final class Checks {
    private Checks() {
    }

    /**
     * A count of permits: {@code 0 <= value <= MAX_PERMITS}.
     *
     * @param what the argument's name, as the message shows it
     * @param value the value
     * @return {@code value}
     */
    public static long count(String what, long value) {
        if (value < 0 || value > Semaphore.MAX_PERMITS) {
            throw new IllegalArgumentException(what + " (" + value + ") must be between 0 and MAX_PERMITS ("
                    + Semaphore.MAX_PERMITS + ")");
        }
        return value;
    }

    /**
     * A count that must not be negative ({@code addPermits}, {@code reducePermits}).
     *
     * @param what the argument's name, as the message shows it
     * @param value the value
     * @return {@code value}
     */
    public static long nonNegative(String what, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(what + " (" + value + ") must not be negative");
        }
        return value;
    }

    /**
     * A builder's ceiling: {@code maxPermits}, or the limit when none was set (negative), never below the
     * limit.
     *
     * @param permits the limit
     * @param maxPermits the ceiling set, or a negative number for none
     * @return the ceiling
     */
    public static long ceiling(long permits, long maxPermits) {
        long ceiling = maxPermits < 0 ? permits : maxPermits;
        if (permits > ceiling) {
            throw new IllegalArgumentException(
                    "permits (" + permits + ") must not exceed maxPermits (" + ceiling + ")");
        }
        return ceiling;
    }

    /**
     * A request: {@code 0 <= permits <= ceiling}.
     *
     * @param permits the permits requested
     * @param ceiling the semaphore's {@code maxPermits()}
     * @param semaphore the semaphore's name
     */
    public static void request(long permits, long ceiling, String semaphore) {
        if (permits < 0 || permits > ceiling) {
            throw tooLarge(permits, ceiling, semaphore);
        }
    }

    /**
     * The exception of a request outside {@code 0..ceiling}, for an engine that learns the ceiling late.
     *
     * @param permits the permits requested
     * @param ceiling the semaphore's {@code maxPermits()}
     * @param semaphore the semaphore's name
     * @return the exception to throw
     */
    public static IllegalArgumentException tooLarge(long permits, long ceiling, String semaphore) {
        return new IllegalArgumentException("requested " + permits + " permits, but a request must be between 0 and"
                + " maxPermits (" + ceiling + ") of " + Failures.describe(semaphore));
    }

    /**
     * A new limit for {@code setPermits}: {@code 0 <= limit <= ceiling}.
     *
     * @param limit the limit asked for
     * @param ceiling the semaphore's {@code maxPermits()}
     * @param semaphore the semaphore's name
     */
    public static void limit(long limit, long ceiling, String semaphore) {
        if (limit < 0 || limit > ceiling) {
            throw new IllegalArgumentException("setPermits(" + limit + "): the limit must be between 0 and maxPermits ("
                    + ceiling + ") of " + Failures.describe(semaphore));
        }
    }

    /**
     * A part of a {@link Permit} ({@code release(n)}, {@code split(n)}): {@code 0 <= permits <= held}.
     *
     * @param what the operation, as the message shows it
     * @param permits the part asked for
     * @param held what the permit holds now
     * @param permit the permit, shown in the message
     */
    public static void part(String what, long permits, long held, Permit permit) {
        if (permits < 0 || permits > held) {
            throw new IllegalArgumentException(what + "(" + permits + "): must be between 0 and the " + held
                    + " permits held by " + permit);
        }
    }

    /**
     * The argument of {@link Permit#merge}: not null, not the permit itself, and of the same semaphore.
     *
     * @param into the permit merged into
     * @param other the permit to merge
     * @param sameSemaphore whether {@code other} is of {@code into}'s semaphore (and kind)
     * @param detail what "another semaphore" means for this engine, or ""
     */
    public static void merge(Permit into, Permit other, boolean sameSemaphore, String detail) {
        Objects.requireNonNull(other, "other");
        if (other == into) {
            throw new IllegalArgumentException("cannot merge a permit into itself: " + into);
        }
        if (!sameSemaphore) {
            throw new IllegalArgumentException("cannot merge " + other + " into " + into
                    + ": it belongs to another semaphore" + detail);
        }
    }
}
