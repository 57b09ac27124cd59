package dev.sema.redis;

import dev.sema.Permit;
import java.util.List;
import java.util.Objects;
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

    /* Written under lock, read freely. */
    private volatile String grantId;
    private volatile long held;
    private volatile long token;
    private volatile long deadline; // local lease deadline, nanoTime (L3)
    private volatile long epoch;    // odd while an operation is in flight (L4)

    LettucePermit(LettuceSemaphore semaphore, String grantId, long permits, long token, long deadline) {
        this.semaphore = semaphore;
        this.grantId = grantId;
        this.held = permits;
        this.token = token;
        this.deadline = deadline;
    }

    @Override
    public long permits() {
        return held;
    }

    @Override
    public long fencingToken() {
        return token;
    }

    @Override
    public CompletableFuture<Void> leaseLost() {
        return lost.copy();
    }

    @Override
    public void close() {
        String id;
        lock.lock();
        try {
            if (held == 0) {
                return;
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
    }

    @Override
    public void release(long permits) {
        lock.lock();
        try {
            check("release", permits);
            if (permits == 0) {
                return;
            }
            if (permits == held) {
                String id = grantId;
                // NOT_HELD is fine here: the lease had ended (already reported), or this is a re-sent release.
                run("release(" + permits + ")", Script.RELEASE, id, "", "0");
                held = 0;
                grantId = null;
                unregister(id, this);
                return;
            }
            String old = grantId;
            String rest = semaphore.nextId();
            List<Object> r = run("release(" + permits + ")", Script.RELEASE, old, rest, Long.toString(permits));
            held -= permits;
            if (ok(r)) {
                moveTo(old, rest);
            } else {
                markLost("release(" + permits + "): Redis no longer holds grant " + old);
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Permit split(long permits) {
        lock.lock();
        try {
            check("split", permits);
            if (permits == 0) {
                return new LettucePermit(semaphore, null, 0, token, deadline);
            }
            String old = grantId;
            String keep = permits < held ? semaphore.nextId() : "";
            String part = semaphore.nextId();
            List<Object> r = run("split(" + permits + ")", Script.SPLIT, old, keep, part, Long.toString(permits));
            held -= permits;
            LettucePermit p = new LettucePermit(semaphore, part, permits, token, deadline);
            if (ok(r)) {
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
        Objects.requireNonNull(other, "other");
        if (other == this) {
            throw new IllegalArgumentException("cannot merge a permit into itself: " + this);
        }
        if (!(other instanceof LettucePermit that) || that.semaphore != semaphore) {
            throw new IllegalArgumentException("cannot merge " + other + " into " + this
                    + ": it belongs to another semaphore (or another handle of it)");
        }
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
            List<Object> r;
            try {
                r = run("merge", Script.MERGE, a == null ? "" : a, b, merged);
            } finally {
                that.epoch++;
            }
            boolean wasEmpty = held == 0;
            held += n;
            that.held = 0;
            that.grantId = null;
            unregister(b, that);
            if (ok(r)) {
                token = LettuceSemaphore.num(r.get(1));
                deadline = wasEmpty ? that.deadline : Math.min(deadline - that.deadline, 0) + that.deadline;
                long mask = LettuceSemaphore.num(r.get(3));
                if ((mask & 2) != 0) {
                    that.markLost("merge: Redis no longer held grant " + b);
                }
                if ((mask & 1) != 0) {
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
        lock.lock();
        try {
            if (held == 0) {
                return;
            }
            String id = grantId;
            List<Object> r = run("forget()", Script.FORGET, id);
            held = 0;
            grantId = null;
            unregister(id, this);
            if (!ok(r)) {
                markLost("forget(): Redis no longer holds grant " + id + "; its permits already came back");
            }
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- for the semaphore

    /** The grant as it may be renewed now, or null while an operation is in flight or nothing is held. */
    LettuceSemaphore.HeldSnapshot snapshot() {
        if (!lock.tryLock()) {
            return null;
        }
        try {
            String id = grantId;
            if (id == null || (epoch & 1) != 0 || lost.isDone()) {
                return null;
            }
            return new LettuceSemaphore.HeldSnapshot(this, id, epoch);
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

    void checkDeadline(long now) {
        if (now - deadline >= 0 && lock.tryLock()) {
            try {
                if (grantId != null && !lost.isDone() && now - deadline >= 0) {
                    markLost("the lease could not be renewed in time");
                }
            } finally {
                lock.unlock();
            }
        }
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

    private List<Object> run(String what, Script script, String... args) {
        for (int i = 0; i < args.length; i++) {
            if (args[i] == null) {
                args[i] = ""; // no grant (its lease was lost before a merge): the script answers NOT_HELD
            }
        }
        epoch++;
        try {
            return semaphore.callSync(what, script, args);
        } finally {
            epoch++;
        }
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

    private static boolean ok(List<Object> r) {
        return "OK".equals(LettuceSemaphore.str(r.get(0)));
    }

    private void check(String what, long permits) {
        long current = held;
        if (permits < 0 || permits > current) {
            throw new IllegalArgumentException(what + "(" + permits + "): must be between 0 and the " + current
                    + " permits held by " + this);
        }
    }

    @Override
    public String toString() {
        return "RedisPermit[semaphore=" + semaphore.name() + ", permits=" + held + ", token=" + token
                + (lost.isDone() ? ", lease lost" : "") + "]";
    }
}
