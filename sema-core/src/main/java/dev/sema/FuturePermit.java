package dev.sema;

import dev.sema.internal.GivingUpFuture;
import dev.sema.internal.Listeners;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * An async request's future that is completed with itself as the Permit: a queued request once granted
 * ({@link Waiter}), or one granted at once ({@link ReadyPermit}). One object for the request, its future
 * and its grant.
 *
 * <p>The count {@link #held} is written plainly only by the constructor, before the completing CAS
 * publishes the object to whoever reads the future's value; every later access is atomic, like every
 * LocalPermit's. Such a Permit is never timed (a grant that a listener times gets a TimedPermit instead),
 * and its parts are PlainPermits.
 */
abstract sealed class FuturePermit extends GivingUpFuture<Object> implements LocalPermit permits Waiter, ReadyPermit {
    private static final VarHandle HELD;

    static {
        try {
            HELD = MethodHandles.lookup().findVarHandle(FuturePermit.class, "held", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final LocalSemaphore semaphore;
    private long held; // atomic access only, after the constructor

    FuturePermit(LocalSemaphore semaphore, long held) {
        this.semaphore = semaphore;
        this.held = held;
    }

    /** This future, typed for what its caller asked. */
    @SuppressWarnings("unchecked")
    final <T> CompletableFuture<T> future() {
        return (CompletableFuture<T>) this;
    }

    @Override
    public final LocalSemaphore semaphore() {
        return semaphore;
    }

    @Override
    public final long permits() {
        return (long) HELD.getVolatile(this);
    }

    @Override
    public final long getAndClear() {
        return (long) HELD.getAndSet(this, 0L);
    }

    @Override
    public final boolean casHeld(long expected, long next) {
        return HELD.compareAndSet(this, expected, next);
    }

    @Override
    public final void addHeld(long n) {
        HELD.getAndAdd(this, n);
    }

    @Override
    public final LocalPermit fork(long permits) {
        return new PlainPermit(semaphore, permits);
    }

    @Override
    public final long grantedAt() {
        return Listeners.UNTIMED;
    }

    /** A Permit's description once it is one (completed with itself), else the future's. */
    @Override
    public final String toString() {
        return state() == State.SUCCESS && resultNow() == this ? LocalPermit.describe(this) : super.toString();
    }
}
