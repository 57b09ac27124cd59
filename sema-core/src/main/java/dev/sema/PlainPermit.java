package dev.sema;

import dev.sema.internal.Listeners;

/**
 * The Permit of a semaphore without leak detection: the count lives in the object itself.
 *
 * <p>The count is guarded by this object's monitor rather than moved by CAS on purpose: the JIT removes
 * the locking of an object that does not escape (the usual try-with-resources Permit) and can then
 * allocate it on no heap at all, which an atomic operation on one of its fields would prevent. The
 * guarded sections are a few field accesses: nothing blocks, parks or calls out while the monitor is
 * held, so a virtual thread is never pinned for longer than a racing close takes.
 */
sealed class PlainPermit implements LocalPermit permits TimedPermit {
    final LocalSemaphore semaphore;
    private long held; // guarded by this

    PlainPermit(LocalSemaphore semaphore, long permits) {
        this.semaphore = semaphore;
        this.held = permits;
    }

    @Override
    public LocalSemaphore semaphore() {
        return semaphore;
    }

    @Override
    public synchronized long permits() {
        return held;
    }

    @Override
    public synchronized long getAndClear() {
        long n = held;
        held = 0;
        return n;
    }

    @Override
    public synchronized boolean casHeld(long expected, long next) {
        if (held != expected) {
            return false;
        }
        held = next;
        return true;
    }

    @Override
    public synchronized void addHeld(long n) {
        held += n;
    }

    @Override
    public LocalPermit fork(long permits) {
        return new PlainPermit(semaphore, permits);
    }

    @Override
    public long grantedAt() {
        return Listeners.UNTIMED;
    }

    @Override
    public String toString() {
        return LocalPermit.describe(this);
    }
}
