package dev.sema;

/**
 * What {@code acquireAsync} returns when it is granted at once, without leak detection or listeners: a
 * future already completed with itself as the Permit (see {@link FuturePermit}). One object where a
 * completed future and a Permit would be two. Since it is complete from the start, none of {@code cancel},
 * {@code complete} or {@code completeExceptionally} can change it; an {@code obtrudeValue} replaces what
 * {@code join()} returns, not what this object holds.
 */
final class ReadyPermit extends FuturePermit {

    ReadyPermit(LocalSemaphore semaphore, long permits) {
        super(semaphore, permits);
        completeInternally(this, null);
    }

    /** Nothing to withdraw: it was granted before anyone could give it up. */
    @Override
    protected boolean giveUp() {
        return false;
    }
}
