package dev.sema;

import dev.sema.internal.Checks;

/**
 * Permits held from a {@link LocalSemaphore}. The count only ever moves atomically (under the Permit's
 * monitor, or by exchange or compare-and-set), so every permit leaves exactly once: released, moved to another Permit, or forgotten.
 * Where the count is stored is left to the implementation: in the object itself ({@link PlainPermit}),
 * beside it where a leak detector can still reach it once the Permit is unreachable ({@link TrackedPermit}),
 * or in the future of an async request, which is completed with itself ({@link FuturePermit}).
 *
 * <p>An interface rather than a base class so that those futures, which must extend
 * {@code CompletableFuture}, can be the Permit they are completed with: one object for the request, its
 * future and its grant.
 */
sealed interface LocalPermit extends Permit permits PlainPermit, TrackedPermit, FuturePermit {

    LocalSemaphore semaphore();

    long getAndClear();

    boolean casHeld(long expected, long next);

    void addHeld(long n);

    /** A new Permit of the same kind holding {@code permits} moved out of this one. */
    LocalPermit fork(long permits);

    /** When its permits were granted, for the listeners' {@code heldNanos}; Listeners.UNTIMED if unknown. */
    long grantedAt();

    @Override
    default void close() {
        long n = getAndClear();
        if (n != 0) {
            semaphore().giveBack(n, grantedAt());
        }
    }

    @Override
    default void release(long permits) {
        take(this, "release", permits);
        if (permits != 0) {
            semaphore().giveBack(permits, grantedAt());
        }
    }

    @Override
    default Permit split(long permits) {
        take(this, "split", permits);
        return fork(permits);
    }

    @Override
    default void merge(Permit other) {
        Checks.merge(this, other, other instanceof LocalPermit p && p.semaphore() == semaphore(), "");
        long n = ((LocalPermit) other).getAndClear();
        if (n != 0) {
            addHeld(n);
        }
    }

    @Override
    default void forget() {
        long n = getAndClear();
        if (n != 0) {
            semaphore().forget(n);
        }
    }

    /** Removes {@code permits} from {@code p}, or throws and changes nothing. */
    private static void take(LocalPermit p, String what, long permits) {
        for (;;) {
            long current = p.permits();
            Checks.part(what, permits, current, p);
            if (permits == 0 || p.casHeld(current, current - permits)) {
                return;
            }
        }
    }

    /** The {@code toString} of every LocalPermit. */
    static String describe(LocalPermit p) {
        return "Permit[semaphore=" + p.semaphore().name() + ", permits=" + p.permits() + "]";
    }
}
