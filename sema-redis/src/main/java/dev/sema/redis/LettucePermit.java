package dev.sema.redis;

import dev.sema.Permit;
import dev.sema.internal.Checks;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Permits held from a {@link LettuceSemaphore}: one grant in Redis ({@link #grantId}), or none when
 * empty. Operations are serialised by {@link #lock}, held across their one round trip; operations that
 * change what Redis holds under the grant move it to a fresh grant id (release of part, split, merge),
 * so that a re-sent script can tell it already ran.
 */
final class LettucePermit implements RedisPermit {
    private static final AtomicLong SERIALS = new AtomicLong();

    private final LettuceSemaphore semaphore;
    private final long serial = SERIALS.incrementAndGet(); // lock order for merge
    private final ReentrantLock lock = new ReentrantLock();
    private final CompletableFuture<Void> lost = new CompletableFuture<>();
    /** When it was granted, if a listener was registered then (Listeners.UNTIMED otherwise). */
    private final long grantedAt;

    /* Written under lock, read freely. */
    private volatile String grantId;
    private volatile long held;
    private volatile long token;
    private volatile long deadline; // local lease deadline, nanoTime (L3)
    private volatile long epoch;    // odd while an operation is in flight (L4)

    LettucePermit(LettuceSemaphore semaphore, String grantId, long permits, long token, long deadline,
            long grantedAt) {
        this.semaphore = semaphore;
        this.grantedAt = grantedAt;
        this.grantId = grantId;
        this.held = permits;
        this.token = token;
        this.deadline = deadline;
    }

    @Override
    public long permits() {
        return held;
    }

    /** The grant id in Redis, null once empty or for a grant of 0 permits. */
    String grantId() {
        return grantId;
    }

    @Override
    public long fencingToken() {
        return token;
    }

    @Override
    public CompletableFuture<Void> leaseLost() {
        checkDeadline(System.nanoTime()); // H5: a caller that asks right after a pause learns it at once
        return lost.copy();
    }

    @Override
    public void close() {
        long n = giveBackAll();
        if (n != 0) {
            semaphore.listeners().released(n, grantedAt);
        }
    }

    /** Gives a grant that nobody received back (its caller gave up first), without a {@code released} event. */
    void discard() {
        giveBackAll();
    }

    /** Empties this permit and releases its grant (never throwing); returns how many permits it held. */
    private long giveBackAll() {
        String id;
        long n;
        lock.lock();
        try {
            n = held;
            if (n == 0) {
                return 0;
            }
            id = grantId;
            held = 0;
            grantId = null;
            epoch += 2;
            if (id != null) {
                unregister(id, this);
            }
        } finally {
            lock.unlock();
        }
        if (id != null) {
            semaphore.releaseQuietly(id);
        }
        return n;
    }

    @Override
    public void release(long permits) {
        lock.lock();
        try {
            Checks.part("release", permits, held, this);
            if (permits == 0) {
                return;
            }
            if (permits == held) {
                String id = grantId;
                // NOT_HELD is fine here: the lease had ended (already reported), or this is a re-sent release.
                run("release(" + permits + ")", semaphore.blocking().release(blank(id), "", 0));
                held = 0;
                grantId = null;
                unregister(id, this);
            } else {
                String old = grantId;
                String rest = semaphore.nextId();
                boolean ok = run("release(" + permits + ")", semaphore.blocking().release(blank(old), rest, permits));
                held -= permits;
                if (ok) {
                    moveTo(old, rest);
                } else {
                    markLost("release(" + permits + "): Redis no longer holds grant " + old);
                }
            }
        } finally {
            lock.unlock();
        }
        semaphore.listeners().released(permits, grantedAt);
    }

    @Override
    public Permit split(long permits) {
        lock.lock();
        try {
            Checks.part("split", permits, held, this);
            if (permits == 0) {
                return new LettucePermit(semaphore, null, 0, token, deadline, grantedAt);
            }
            String old = grantId;
            String keep = permits < held ? semaphore.nextId() : "";
            String part = semaphore.nextId();
            boolean ok = run("split(" + permits + ")", semaphore.blocking().split(blank(old), keep, part, permits));
            held -= permits;
            LettucePermit p = new LettucePermit(semaphore, part, permits, token, deadline, grantedAt);
            if (ok) {
                moveTo(old, keep.isEmpty() ? null : keep);
                semaphore.held.put(part, p);
            } else {
                String why = "split(" + permits + "): Redis no longer holds grant " + old;
                markLost(why);
                p.lost.complete(null);
            }
            return p;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void merge(Permit other) {
        Checks.merge(this, other, other instanceof LettucePermit p && p.semaphore == semaphore,
                " (or another handle of it)");
        LettucePermit that = (LettucePermit) other;
        LettucePermit first = serial < that.serial ? this : that;
        LettucePermit second = first == this ? that : this;
        first.lock.lock();
        second.lock.lock();
        try {
            long n = that.held;
            if (n == 0) {
                return;
            }
            String a = grantId;
            String b = that.grantId;
            String merged = semaphore.nextId();
            that.epoch++;
            Protocol.Merged r;
            try {
                r = run("merge", semaphore.blocking().merge(blank(a), blank(b), merged));
            } finally {
                that.epoch++;
            }
            boolean wasEmpty = held == 0;
            held += n;
            that.held = 0;
            that.grantId = null;
            unregister(b, that);
            if (r.held()) {
                token = r.token();
                deadline = wasEmpty ? that.deadline : Math.min(deadline - that.deadline, 0) + that.deadline;
                if ((r.lost() & Protocol.LOST_OTHER) != 0) {
                    that.markLost("merge: Redis no longer held grant " + b);
                }
                if ((r.lost() & Protocol.LOST_TARGET) != 0) {
                    markLost("merge: Redis no longer held grant " + a);
                }
                moveTo(a, merged);
            } else {
                that.markLost("merge: Redis no longer held grant " + b);
                markLost("merge: Redis held neither grant " + a + " nor " + b);
            }
        } finally {
            second.lock.unlock();
            first.lock.unlock();
        }
    }

    @Override
    public void forget() {
        Protocol.LimitChange change;
        lock.lock();
        try {
            if (held == 0) {
                return;
            }
            String id = grantId;
            change = run("forget()", semaphore.blocking().forget(blank(id)));
            held = 0;
            grantId = null;
            unregister(id, this);
            if (change == null) {
                markLost("forget(): Redis no longer holds grant " + id + "; its permits already came back");
            }
        } finally {
            lock.unlock();
        }
        if (change != null) {
            // The limit is the parent's: a partition's permit reports the change where its parent's would.
            semaphore.root().listeners().limitChanged(change.oldLimit(), change.newLimit());
        }
    }

    // ---------------------------------------------------------------- for the semaphore

    /** The grant as it may be renewed now, or null while an operation is in flight or nothing is held. */
    Heartbeat.HeldSnapshot snapshot() {
        if (!lock.tryLock()) {
            return null;
        }
        try {
            String id = grantId;
            if (id == null || (epoch & 1) != 0 || lost.isDone()) {
                return null;
            }
            return new Heartbeat.HeldSnapshot(this, id, epoch);
        } finally {
            lock.unlock();
        }
    }

    void renewed(long snapshotEpoch, long newDeadline) {
        if (lock.tryLock()) {
            try {
                if (epoch == snapshotEpoch && newDeadline - deadline > 0) {
                    deadline = newDeadline;
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /** Before it is handed over: a request of this process renewed the lease (sent when the new deadline says). */
    void extend(long newDeadline) {
        lock.lock();
        try {
            if (newDeadline - deadline > 0) {
                deadline = newDeadline;
            }
        } finally {
            lock.unlock();
        }
    }

    void lost(long snapshotEpoch, String why) {
        if (lock.tryLock()) {
            try {
                if (epoch == snapshotEpoch) {
                    markLost(why);
                }
            } finally {
                lock.unlock();
            }
        }
    }

    long deadline() {
        return deadline;
    }

    /**
     * Marks the lease lost if its local deadline passed (H5). Without the lock: an operation in flight
     * holds it for up to a command timeout, and the deadline must be kept all the same; the deadline holds
     * for the grant under every id it moves to. Returns whether the lease is still believed alive.
     */
    boolean checkDeadline(long now) {
        if (grantId == null || lost.isDone()) {
            return false;
        }
        if (now - deadline >= 0) {
            markLost("the lease could not be renewed in time");
            return false;
        }
        return true;
    }

    /** This process leaves: empties the permit and returns the grant id to release, or null. */
    String abandon() {
        lock.lock();
        try {
            String id = grantId;
            held = 0;
            grantId = null;
            epoch += 2;
            return id;
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- helpers (under lock)

    /** Waits for one script's reply, with the epoch odd meanwhile (L4: renewals of the old id are ignored). */
    private <T> T run(String what, CompletableFuture<T> reply) {
        epoch++;
        try {
            return semaphore.sync(what, reply);
        } finally {
            epoch++;
        }
    }

    /** No grant (its lease was lost before a merge) is sent as "": the script answers NOT_HELD. */
    private static String blank(String id) {
        return id == null ? "" : id;
    }

    private void moveTo(String old, String now) {
        if (old != null) {
            semaphore.held.remove(old, this);
        }
        grantId = now;
        if (now != null && !lost.isDone()) {
            semaphore.held.put(now, this);
        }
    }

    private void markLost(String why) {
        if (grantId != null) {
            semaphore.held.remove(grantId, this);
        }
        if (lost.complete(null)) {
            System.getLogger(LettucePermit.class.getName()).log(System.Logger.Level.WARNING,
                    () -> "lease lost on " + semaphore.describe() + ": " + why + " (" + this + ")");
        }
    }

    private void unregister(String id, LettucePermit permit) {
        if (id != null) {
            semaphore.held.remove(id, permit);
        }
    }


    @Override
    public String toString() {
        return "RedisPermit[semaphore=" + semaphore.name() + ", permits=" + held + ", token=" + token
                + (lost.isDone() ? ", lease lost" : "") + "]";
    }
}
