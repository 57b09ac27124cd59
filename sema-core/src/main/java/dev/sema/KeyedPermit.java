package dev.sema;

import dev.sema.internal.Checks;
import dev.sema.internal.ParentSide;

/**
 * The Permit of a key of a {@link LocalKeyedSemaphore}: the key's engine's permits, and as many of the parent's
 * when the family has one. Once it has given permits back to the key's engine, it tries to retire the key's entry
 * (K3), so that a key that went idle keeps nothing.
 *
 * <p>Without a parent every operation is the engine Permit's, done by its own CAS. With one, the two sides must
 * stay equal whatever threads race on this Permit, so its operations hold its monitor: a composite Permit is
 * used by one holder at a time in practice, and the monitor is then uncontended.
 */
final class KeyedPermit extends ParentSide.TwoSided {
    private final LocalKeyedSemaphore.Entry<?> entry;
    private final LocalPermit own;

    KeyedPermit(LocalKeyedSemaphore.Entry<?> entry, LocalPermit own) {
        this.entry = entry;
        this.own = own;
    }

    @Override
    public long permits() {
        return own.permits();
    }

    @Override
    public void close() {
        if (parent == null) {
            giveBack(own.getAndClear());
            return;
        }
        synchronized (this) {
            parent.close();
            giveBack(own.getAndClear());
        }
    }

    @Override
    public void release(long permits) {
        if (parent == null) {
            take("release", permits);
            giveBack(permits);
            return;
        }
        synchronized (this) {
            take("release", permits);
            parent.release(permits);
            giveBack(permits);
        }
    }

    @Override
    public Permit split(long permits) {
        if (parent == null) {
            take("split", permits);
            return new KeyedPermit(entry, own.fork(permits));
        }
        synchronized (this) {
            take("split", permits);
            KeyedPermit part = new KeyedPermit(entry, own.fork(permits));
            part.attach(parent.split(permits));
            return part;
        }
    }

    @Override
    public void merge(Permit other) {
        Checks.merge(this, other, other instanceof KeyedPermit k && k.entry.family == entry.family
                && k.entry.key.equals(entry.key), ", or to another key");
        KeyedPermit k = (KeyedPermit) other;
        if (k.entry != entry) {
            // Another entry of the same key holds nothing (only one entry at a time holds permits, K4): an empty
            // Permit of a key that went idle meanwhile. Nothing to move.
            if (k.permits() != 0) {
                throw new IllegalArgumentException("cannot merge " + other + " into " + this
                        + ": it belongs to another semaphore");
            }
            return;
        }
        // Both sides of the other Permit are taken out under its monitor, then added here under this one's: never
        // both monitors at once, so two merges in opposite directions cannot deadlock. In between, what was taken
        // is held by nobody else's Permit, and both sides stay equal.
        long n;
        Permit moved = null;
        synchronized (k) {
            n = k.own.getAndClear();
            if (k.parent != null) {
                moved = k.parent.split(k.parent.permits());
            }
        }
        synchronized (this) {
            if (n != 0) {
                own.addHeld(n);
            }
            if (moved != null) {
                parent.merge(moved);
            }
        }
    }

    @Override
    public void forget() {
        long n;
        if (parent == null) {
            n = own.getAndClear();
        } else {
            synchronized (this) {
                parent.forget();
                n = own.getAndClear();
            }
        }
        if (n != 0) {
            entry.engine.forget(n); // the key's limit drops while it lives: a new entry starts afresh
            entry.released();
        }
    }

    /** Moves {@code permits} out of the key's side, or throws and changes nothing. */
    private void take(String what, long permits) {
        for (;;) {
            long current = own.permits();
            Checks.part(what, permits, current, this);
            if (permits == 0 || own.casHeld(current, current - permits)) {
                return;
            }
        }
    }

    /** Back to the key's engine, which may then be idle (K3). */
    private void giveBack(long permits) {
        if (permits != 0) {
            entry.engine.giveBack(permits, own.grantedAt());
            entry.released();
        }
    }

    @Override
    public String toString() {
        return "Permit[semaphore=" + entry.view.name() + ", permits=" + own.permits() + "]";
    }
}
