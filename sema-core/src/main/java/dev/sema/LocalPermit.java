package dev.sema;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

/**
 * Permits held from a {@link LocalSemaphore}. {@code held} only ever moves by atomic exchange or CAS, so
 * every permit leaves this object exactly once: released, moved to another Permit, or forgotten.
 */
final class LocalPermit implements Permit {
    private static final VarHandle HELD;

    static {
        try {
            HELD = MethodHandles.lookup().findVarHandle(LocalPermit.class, "held", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final LocalSemaphore semaphore;
    private volatile long held;

    LocalPermit(LocalSemaphore semaphore, long permits) {
        this.semaphore = semaphore;
        this.held = permits;
    }

    @Override
    public long permits() {
        return held;
    }

    @Override
    public void close() {
        if (held != 0) {
            long n = (long) HELD.getAndSet(this, 0L);
            if (n != 0) {
                semaphore.release(n);
            }
        }
    }

    @Override
    public void release(long permits) {
        take("release", permits);
        if (permits != 0) {
            semaphore.release(permits);
        }
    }

    @Override
    public Permit split(long permits) {
        take("split", permits);
        return new LocalPermit(semaphore, permits);
    }

    @Override
    public void merge(Permit other) {
        Objects.requireNonNull(other, "other");
        if (other == this) {
            throw new IllegalArgumentException("cannot merge a permit into itself: " + this);
        }
        if (!(other instanceof LocalPermit that) || that.semaphore != semaphore) {
            throw new IllegalArgumentException("cannot merge " + other + " into " + this
                    + ": it belongs to another semaphore");
        }
        long n = (long) HELD.getAndSet(that, 0L);
        if (n != 0) {
            HELD.getAndAdd(this, n);
        }
    }

    @Override
    public void forget() {
        long n = (long) HELD.getAndSet(this, 0L);
        if (n != 0) {
            semaphore.forget(n);
        }
    }

    /** Removes {@code permits} from this object, or throws and changes nothing. */
    private void take(String what, long permits) {
        for (;;) {
            long current = held;
            if (permits < 0 || permits > current) {
                throw new IllegalArgumentException(what + "(" + permits + "): must be between 0 and the "
                        + current + " permits held by " + this);
            }
            if (permits == 0 || HELD.compareAndSet(this, current, current - permits)) {
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "Permit[semaphore=" + semaphore.name() + ", permits=" + held + "]";
    }
}
