package dev.sema;

import dev.sema.internal.Listeners;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * What {@code acquireAsync} returns when it is granted at once, without leak detection or listeners: a
 * future already completed with itself as the Permit. One object where a completed future and a Permit
 * would be two.
 *
 * <p>The count moves by atomic operations on {@link #held}, like every LocalPermit's. It is written plainly
 * once, in the constructor, before the completing CAS publishes the object to whoever reads the future's
 * value; every later access is atomic. The future completes in the constructor, so none of
 * {@code cancel}, {@code complete} or {@code completeExceptionally} can change it afterwards; an
 * {@code obtrudeValue} replaces what {@code join()} returns, not what this object holds.
 */
final class ReadyPermit extends CompletableFuture<Permit> implements LocalPermit {
    private static final VarHandle HELD;

    static {
        try {
            HELD = MethodHandles.lookup().findVarHandle(ReadyPermit.class, "held", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final LocalSemaphore semaphore;
    private long held; // atomic access only, after the constructor

    ReadyPermit(LocalSemaphore semaphore, long permits) {
        this.semaphore = semaphore;
        this.held = permits;
        super.complete(this);
    }

    @Override
    public LocalSemaphore semaphore() {
        return semaphore;
    }

    @Override
    public long permits() {
        return (long) HELD.getVolatile(this);
    }

    @Override
    public long getAndClear() {
        return (long) HELD.getAndSet(this, 0L);
    }

    @Override
    public boolean casHeld(long expected, long next) {
        return HELD.compareAndSet(this, expected, next);
    }

    @Override
    public void addHeld(long n) {
        HELD.getAndAdd(this, n);
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
