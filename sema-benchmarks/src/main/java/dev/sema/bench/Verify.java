package dev.sema.bench;

/** Sanity checks run between iterations: a benchmark that lost or leaked permits must fail, not report. */
final class Verify {
    private Verify() {
    }

    static void allBack(Impl impl, long available, long expected) {
        if (available != expected) {
            throw new IllegalStateException(impl.label() + ": " + available + " permits free after the iteration, "
                    + "expected " + expected);
        }
    }

    static void state(boolean ok, String message) {
        if (!ok) {
            throw new IllegalStateException(message);
        }
    }
}
