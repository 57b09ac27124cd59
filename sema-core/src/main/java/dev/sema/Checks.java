package dev.sema;

/** Argument checks shared by the public types; messages name the argument and the bound. */
final class Checks {
    private Checks() {
    }

    static long count(String what, long value) {
        if (value < 0 || value > Semaphore.MAX_PERMITS) {
            throw new IllegalArgumentException(what + " (" + value + ") must be between 0 and MAX_PERMITS ("
                    + Semaphore.MAX_PERMITS + ")");
        }
        return value;
    }

    static long nonNegative(String what, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(what + " (" + value + ") must not be negative");
        }
        return value;
    }
}
