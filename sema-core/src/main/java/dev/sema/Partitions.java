package dev.sema;

import dev.sema.internal.PartitionSpec;
import dev.sema.internal.Partitioned;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The partitions of one {@link LocalSemaphore} (API.md §11a): guaranteed shares and priorities inside its one
 * limit. The parent stays the engine: its state word counts what is free under the one limit, and its lock
 * guards every partition. Each partition is a view, a {@code LocalSemaphore} of its own for the queue, the
 * Permits, the waits, timeouts, cancels and listeners' events, which keeps no permits of its own: what it may
 * take is decided here, under the parent's lock, from the counts kept here.
 *
 * <p>Slots: the declared partitions in priority order (0 = highest), then the parent's own requests, a
 * partition of share 0 below the lowest.
 *
 * <p>Rules, beside the engine's I1-I7 (which each view keeps for its own queue):
 * <ul>
 * <li>P0: one lock, the parent's, guards every view's queue and every count here. QUEUED stays set in every
 *     view's and the parent's state word, so no acquire or release takes the lock-free paths: the parent's
 *     {@code available} moves only under the lock, and a view's stays 0.
 * <li>P1 (hard limit): {@code held[0] + ... + held[n]} is what unreleased Permits of the group hold, and
 *     equals the parent's {@code limit - available} whenever the lock is free. A grant takes at most
 *     {@link #capacityLocked} permits, which never exceeds what is free.
 * <li>P2 (guarantee): a slot's guarantee is {@code floor(share × limit)} (0 for the parent's own); what it is
 *     owed is its guarantee minus what it holds, when positive. While its head waits for no more than it is
 *     owed, that much is earmarked for it out of the free permits (in priority order, when they do not cover
 *     everything owed), and no other slot's request takes an earmarked permit. A head that asks for more than
 *     it is owed earmarks nothing: it is a request beyond the guarantee (P3), served from its own owed
 *     permits and the unclaimed ones. Earmarking what such a head cannot use would deadlock: a high head
 *     waiting for unclaimed permits that a lower partition's earmark holds for a head the high one stops.
 * <li>P3 (priority): a request beyond its slot's guarantee takes only free permits that are earmarked for
 *     nobody, and only when no higher slot has a head waiting for permits.
 * <li>P4 (work-conserving, FIFO): a head is served as soon as it fits under P2 and P3, heads in slot order,
 *     and within a slot only its head: when the lock is free, no head fits (a view's I3).
 * <li>P5: a {@code tryAcquire} (and an acquire that does not queue) succeeds exactly when its slot's queue
 *     is empty and the request would be served as its head now: the same {@link #capacityLocked}.
 * <li>P6: an idle waiter of a view is served once the view holds nothing; of the parent, once nothing is
 *     held at all. It takes no permits and never holds back another slot.
 * </ul>
 * Tests pinning each: PartitionsTest (P1-P6, one case per rule), PartitionsStressTest (P1 and the exact
 * final state under random traffic), PartitionsLincheckTest, BrokenPartitionsTest (a copy that lends
 * owed permits is caught).
 *
 * <p>Cost: serving is O(slots²) per grant (a capacity is one pass over the slots), and only partitioned
 * semaphores run it: an unpartitioned one tests one final field, on paths that already took the lock.
 *
 * <pre>
 * field            guarded by
 * held[]           the parent's lock
 * guarantees[]     the parent's lock, recomputed when the limit is not {@code guaranteedFor}
 * views            final
 * </pre>
 */
final class Partitions {
    final LocalSemaphore parent;
    final PartitionSpec spec;
    /** The views in priority order, then the parent itself. */
    private final LocalSemaphore[] slots;
    private final long[] held;
    private final long[] guarantees;
    private long guaranteedFor = -1;
    private final ReentrantLock lock;

    /**
     * Set only by BrokenPartitionsTest, to make a deliberately broken copy of P2 (the permits owed to other
     * waiting partitions are lent to whoever asks) and show that the model test catches it; false otherwise.
     * A plain static read on a path that took the lock.
     */
    static boolean lendOwedForTests;

    Partitions(LocalSemaphore parent, PartitionSpec spec) {
        this.parent = parent;
        this.spec = spec;
        this.lock = parent.lock();
        int n = spec.size();
        this.slots = new LocalSemaphore[n + 1];
        for (int i = 0; i < n; i++) {
            slots[i] = new LocalSemaphore(parent, this, i, parent.name() + "/" + spec.names().get(i));
        }
        slots[n] = parent;
        this.held = new long[n + 1];
        this.guarantees = new long[n + 1];
    }

    /** The view of a declared partition. */
    Semaphore view(String name) {
        int i = spec.indexOf(name);
        if (i < 0) {
            throw spec.unknown(parent.name(), name);
        }
        return slots[i];
    }

    /** Every queue's length together: the parent's {@code queueLength()}. */
    int queued() {
        int sum = 0;
        for (LocalSemaphore s : slots) {
            sum += s.ownQueueLength();
        }
        return sum;
    }

    /** What a request of {@code slot} could take now (a view's {@code availablePermits()}). */
    long available(int slot) {
        lock.lock();
        try {
            return capacityLocked(slot);
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- decisions (lock held)

    /** The slot's guarantee under the current limit (P2). */
    private long guaranteeLocked(int slot) {
        long limit = parent.limitLocked();
        if (limit != guaranteedFor) {
            for (int i = 0; i < spec.size(); i++) {
                guarantees[i] = spec.guarantee(i, limit);
            }
            guaranteedFor = limit;
        }
        return guarantees[slot];
    }

    private long owedLocked(int slot) {
        return Math.max(0, guaranteeLocked(slot) - held[slot]);
    }

    /** The slot's first waiter that is still undecided, or null. */
    private static Waiter firstWaiting(LocalSemaphore s) {
        for (Waiter w = s.headLocked(); w != null; w = w.next) {
            if (w.status == Waiter.WAITING) {
                return w;
            }
        }
        return null;
    }

    /**
     * The most a request of {@code target} at the head of its queue could be granted now (P2, P3): what it is
     * owed, out of what the higher slots' earmarks leave, plus, unless a higher slot's head waits for
     * permits, what nobody's earmark claims.
     */
    long capacityLocked(int target) {
        long pool = Math.max(0, LocalSemaphore.available(parent.stateWord()));
        long own = 0;
        boolean higherWaits = false;
        for (int i = 0; i < slots.length; i++) {
            if (i == target) {
                own = Math.min(pool, owedLocked(i));
                pool -= own;
                continue;
            }
            Waiter head = firstWaiting(slots[i]);
            if (head == null || head.idle) {
                continue;
            }
            long owed = owedLocked(i);
            if (head.requested <= owed && !lendOwedForTests) {
                pool -= Math.min(pool, owed); // P2: earmarked
            }
            if (i < target) {
                higherWaits = true;
            }
        }
        return higherWaits ? own : own + pool;
    }

    /** Takes {@code permits} for {@code slot} if they fit now (P5). */
    boolean takeLocked(int slot, long permits) {
        if (permits > capacityLocked(slot)) {
            return false;
        }
        held[slot] += permits;
        parent.addAvailableLocked(-permits);
        return true;
    }

    /** Whether the slot is idle for its awaitIdle (P6). */
    boolean idleLocked(int slot) {
        if (slot == slots.length - 1) {
            return parent.limitLocked() - LocalSemaphore.available(parent.stateWord()) == 0;
        }
        return held[slot] == 0;
    }

    /**
     * Serves every slot's heads that fit (P4), after {@code released} permits of {@code section}'s slot came
     * back; the decided waiters go to {@code section}'s done chain, finished when it unlocks.
     */
    void serveLocked(LocalSemaphore section, long released) {
        if (released != 0) {
            held[section.slot] -= released;
            parent.addAvailableLocked(released);
        }
        boolean served;
        do {
            served = false;
            for (int i = 0; i < slots.length && !served; i++) {
                served = serveHeadLocked(section, i);
            }
        } while (served);
    }

    /** Serves slot {@code i}'s head if it fits; true if a waiter was decided or dropped (serve again). */
    private boolean serveHeadLocked(LocalSemaphore section, int i) {
        LocalSemaphore s = slots[i];
        Waiter w = s.headLocked();
        if (w == null) {
            return false;
        }
        if (w.status != Waiter.WAITING) {
            s.unlinkLocked(w); // withdrawn; its owner finds it unlinked
            return true;
        }
        if (w.idle) {
            if (!idleLocked(i)) {
                return false;
            }
            if (w.casStatus(Waiter.WAITING, Waiter.GRANTED)) {
                s.unlinkLocked(w);
                section.decidedLocked(w);
            } else {
                s.unlinkLocked(w);
            }
            return true;
        }
        if (!takeLocked(i, w.requested)) {
            return false;
        }
        if (!w.casStatus(Waiter.WAITING, Waiter.GRANTED)) {
            held[i] -= w.requested; // withdrawn between the check and the grant: nothing taken (I4)
            parent.addAvailableLocked(w.requested);
        } else {
            section.decidedLocked(w);
        }
        s.unlinkLocked(w);
        return true;
    }

    /** A Permit of {@code slot} was forgotten: it holds {@code permits} less, and {@code freed} became free. */
    void forgotLocked(int slot, long permits, long freed) {
        held[slot] -= permits;
        parent.addAvailableLocked(freed);
    }

    /** Closes every view with the parent (lock held; the parent is closed already). */
    void closeLocked(Throwable cause) {
        for (int i = 0; i < slots.length - 1; i++) {
            slots[i].closeLocked(cause, parent);
        }
    }

    // ---------------------------------------------------------------- observing

    /** Each partition's counts (the parent's {@code partitionStates()}). */
    List<Partitioned.PartitionState> partitionStates() {
        List<Partitioned.PartitionState> out = new ArrayList<>(spec.size());
        lock.lock();
        try {
            for (int i = 0; i < spec.size(); i++) {
                out.add(new Partitioned.PartitionState(spec.names().get(i), spec.share(i), held[i], guaranteeLocked(i),
                        slots[i].ownQueueLength()));
            }
        } finally {
            lock.unlock();
        }
        return out;
    }

    /** Held per slot, for tests (the parent's own last). */
    Map<String, Long> heldForTests() {
        lock.lock();
        try {
            java.util.LinkedHashMap<String, Long> m = new java.util.LinkedHashMap<>();
            for (int i = 0; i < slots.length; i++) {
                m.put(i < spec.size() ? spec.names().get(i) : "", held[i]);
            }
            return m;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Checks P0, P1 and P4 and each view's queue, at quiescence.
     *
     * @throws AssertionError naming the broken rule
     */
    void checkInvariants() {
        lock.lock();
        try {
            long sum = 0;
            for (int i = 0; i < slots.length; i++) {
                check(held[i] >= 0, "P1: slot " + slots[i].name() + " holds " + held[i]);
                sum += held[i];
                check(slots[i].isClosed() == parent.isClosed(), "P0: " + slots[i].name()
                        + " closed disagrees with its parent");
                check((slots[i].stateWord() & LocalSemaphore.QUEUED) != 0, "P0: QUEUED clear on " + slots[i].name());
                check(i == slots.length - 1 || LocalSemaphore.available(slots[i].stateWord()) == 0,
                        "P0: partition " + slots[i].name() + " has permits of its own");
            }
            long limit = parent.limitLocked();
            long available = LocalSemaphore.available(parent.stateWord());
            check(sum == limit - available, "P1: slots hold " + sum + " but limit - available = "
                    + (limit - available) + " " + heldForTestsLocked());
            for (int i = 0; i < slots.length; i++) {
                Waiter w = firstWaiting(slots[i]);
                if (w != null) {
                    check(w.idle ? !idleLocked(i) : w.requested > capacityLocked(i),
                            "P4: the head of " + slots[i].name() + " fits but is still queued "
                                    + heldForTestsLocked());
                }
                slots[i].checkQueueLocked();
            }
        } finally {
            lock.unlock();
        }
    }

    private String heldForTestsLocked() {
        StringBuilder b = new StringBuilder("held {");
        for (int i = 0; i < slots.length; i++) {
            b.append(i == 0 ? "" : ", ").append(slots[i].name()).append('=').append(held[i]);
        }
        return b.append("}").toString();
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new AssertionError(message);
        }
    }
}
