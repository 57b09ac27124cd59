package dev.sema;

/**
 * A {@link PlainPermit} granted while a listener was registered: it also knows when, for the
 * {@code heldNanos} of its {@code released} events. Parts split off keep the grant's time.
 */
final class TimedPermit extends PlainPermit {
    private final long grantedAt;

    TimedPermit(LocalSemaphore semaphore, long permits, long grantedAt) {
        super(semaphore, permits);
        this.grantedAt = grantedAt;
    }

    @Override
    public LocalPermit fork(long permits) {
        return new TimedPermit(semaphore, permits, grantedAt);
    }

    @Override
    public long grantedAt() {
        return grantedAt;
    }
}
