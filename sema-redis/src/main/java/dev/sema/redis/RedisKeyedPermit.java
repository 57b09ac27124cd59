package dev.sema.redis;

import dev.sema.Permit;
import dev.sema.internal.Checks;
import dev.sema.internal.ParentSide;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The Permit of a key of a {@link RedisKeyedSemaphore}: the key's grant (a {@link RedisPermit} of its handle, whose
 * token and lease it shows), and as many of the parent's when the family has one. It gives the key's permits back
 * in Redis before counting them out of the entry (R2), so that a handle is never let go of while it holds them.
 *
 * <p>Its operations hold its lock, so that the two sides and the count stay equal whatever threads race on it; a
 * lock, not a monitor, since they wait for Redis.
 */
final class RedisKeyedPermit extends ParentSide.TwoSided implements RedisPermit {
    private final RedisKeyedSemaphore.Entry entry;
    private final RedisPermit own;
    private final ReentrantLock lock = new ReentrantLock();
    /** The permits counted in the entry's refs for this Permit (R2); guarded by {@code lock}. */
    private long counted;

    RedisKeyedPermit(RedisKeyedSemaphore.Entry entry, RedisPermit own, long counted) {
        this.entry = entry;
        this.own = own;
        this.counted = counted;
    }

    @Override
    public long permits() {
        return own.permits();
    }

    @Override
    public long fencingToken() {
        return own.fencingToken();
    }

    @Override
    public CompletableFuture<Void> leaseLost() {
        return own.leaseLost();
    }

    @Override
    public void close() {
        long n;
        lock.lock();
        try {
            n = counted;
            counted = 0;
            if (parent != null) {
                parent.close();
            }
            own.close(); // R2: back in Redis first (close never throws)
        } finally {
            lock.unlock();
        }
        if (n != 0) {
            entry.unhold(n);
        }
    }

    @Override
    public void release(long permits) {
        lock.lock();
        try {
            Checks.part("release", permits, counted, this);
            if (permits == 0) {
                return;
            }
            own.release(permits); // R2: back in Redis first
            counted -= permits;
            if (parent != null) {
                parent.release(permits);
            }
        } finally {
            lock.unlock();
        }
        entry.unhold(permits);
    }

    @Override
    public Permit split(long permits) {
        lock.lock();
        try {
            Checks.part("split", permits, counted, this);
            RedisKeyedPermit part = new RedisKeyedPermit(entry, (RedisPermit) own.split(permits), permits);
            counted -= permits; // moved to the part, still counted in the entry
            if (parent != null) {
                part.attach(parent.split(permits));
            }
            return part;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void merge(Permit other) {
        Checks.merge(this, other, other instanceof RedisKeyedPermit k && k.entry.family == entry.family
                && k.entry.key.equals(entry.key), ", or to another key");
        RedisKeyedPermit k = (RedisKeyedPermit) other;
        if (k == this) {
            return;
        }
        if (k.entry != entry) {
            // Another entry of the same key holds nothing (one entry at a time is live, R4): an empty Permit of a
            // key whose handle was let go of meanwhile. Nothing to move.
            if (k.permits() != 0) {
                throw new IllegalArgumentException("cannot merge " + other + " into " + this
                        + ": it belongs to another handle of the semaphore");
            }
            return;
        }
        RedisKeyedPermit first = System.identityHashCode(this) <= System.identityHashCode(k) ? this : k;
        RedisKeyedPermit second = first == this ? k : this;
        first.lock.lock(); // a fixed order, so two merges never deadlock
        try {
            second.lock.lock();
            try {
                own.merge(k.own);
                counted += k.counted; // moved, still counted in the entry
                k.counted = 0;
                if (parent != null && k.parent != null) {
                    parent.merge(k.parent);
                }
            } finally {
                second.lock.unlock();
            }
        } finally {
            first.lock.unlock();
        }
    }

    @Override
    public void forget() {
        long n;
        lock.lock();
        try {
            n = counted;
            counted = 0;
            if (parent != null) {
                parent.forget();
            }
            own.forget(); // lowers the key's stored limit until its semaphore expires when idle
        } finally {
            lock.unlock();
        }
        if (n != 0) {
            entry.unhold(n);
        }
    }

    @Override
    public String toString() {
        return "Permit[semaphore=" + entry.view.name() + ", permits=" + own.permits() + ", token="
                + own.fencingToken() + "]";
    }
}
