package dev.sema;

import dev.sema.internal.Checks;

/**
 * Permits held from a {@link LocalSemaphore}. The count only ever moves atomically (exchange or
 * compare-and-set), so every permit leaves exactly once: released, moved to another Permit, or forgotten. Where the count is
 * stored is left to the subclass: in the object itself ({@link PlainPermit}), or beside it where a leak
 * detector can still reach it once the Permit is unreachable ({@link TrackedPermit}).
 */
abstract sealed class LocalPermit implements Permit permits PlainPermit, TrackedPermit {
    final LocalSemaphore semaphore;

    LocalPermit(LocalSemaphore semaphore) {
        this.semaphore = semaphore;
    }

    abstract long getAndClear();

    abstract boolean casHeld(long expected, long next);

    abstract void addHeld(long n);

    /** A new Permit of the same kind holding {@code permits} moved out of this one. */
    abstract LocalPermit fork(long permits);

    /** When its permits were granted, for the listeners' {@code heldNanos}; Listeners.UNTIMED if unknown. */
    abstract long grantedAt();

    @Override
    public void close() {
        long n = getAndClear();
        if (n != 0) {
            semaphore.giveBack(n, grantedAt());
        }
    }

    @Override
    public void release(long permits) {
        take("release", permits);
        if (permits != 0) {
            semaphore.giveBack(permits, grantedAt());
        }
    }

    @Override
    public Permit split(long permits) {
        take("split", permits);
        return fork(permits);
    }

    @Override
    public void merge(Permit other) {
        Checks.merge(this, other, other instanceof LocalPermit p && p.semaphore == semaphore, "");
        long n = ((LocalPermit) other).getAndClear();
        if (n != 0) {
            addHeld(n);
        }
    }

    @Override
    public void forget() {
        long n = getAndClear();
        if (n != 0) {
            semaphore.forget(n);
        }
    }

    /** Removes {@code permits} from this object, or throws and changes nothing. */
    private void take(String what, long permits) {
        for (;;) {
            long current = permits();
            Checks.part(what, permits, current, this);
            if (permits == 0 || casHeld(current, current - permits)) {
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "Permit[semaphore=" + semaphore.name() + ", permits=" + permits() + "]";
    }
}
