package dev.sema;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** The Permit of a semaphore without leak detection: the count lives in the object itself. */
final class PlainPermit extends LocalPermit {
    private static final VarHandle HELD;

    static {
        try {
            HELD = MethodHandles.lookup().findVarHandle(PlainPermit.class, "held", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile long held;

    PlainPermit(LocalSemaphore semaphore, long permits) {
        super(semaphore);
        this.held = permits;
    }

    @Override
    public long permits() {
        return held;
    }

    @Override
    long getAndClear() {
        return (long) HELD.getAndSet(this, 0L);
    }

    @Override
    boolean casHeld(long expected, long next) {
        return HELD.compareAndSet(this, expected, next);
    }

    @Override
    void addHeld(long n) {
        HELD.getAndAdd(this, n);
    }

    @Override
    LocalPermit fork(long permits) {
        return new PlainPermit(semaphore, permits);
    }
}
