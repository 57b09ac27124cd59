package dev.sema;

import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Checks, while permits are taken and given back and the limit changes concurrently, that the permits held
 * never exceed what the semaphore may have granted. The check is exact even though a lowered limit may be
 * exceeded legitimately until enough is released.
 *
 * <p>Why it is exact: a grant leaves {@code held <= limit} at the moment of the grant, and only grants make
 * {@code held} grow. So at any time, the permits held by the Permits counted here were all live at the most
 * recent grant among them, and {@code held <= limit(that grant)}. That grant happened after its acquirer
 * {@linkplain #enter() entered}, so {@code held} is bounded by the largest limit in force since the oldest
 * acquirer still inside entered.
 *
 * <p>How it is tracked: every limit change of the test goes through {@link #resize}, which publishes, before
 * changing anything, an upper bound of the limit from then until the next resize ({@code history[k]}; forgetting
 * permits only lowers the limit, so it needs no entry). An acquirer {@linkplain #enter() enters} (records the
 * resize count) before it asks for permits, adds what it obtained to {@link #acquired held} after, takes it off
 * {@link #released before} giving permits back, and {@linkplain #exit exits} after it gave everything back. So
 * the counted {@code held} never exceeds the real one, and {@link #check()} compares it with the maximum of
 * {@code history} from the oldest entry still inside (a segment tree) to the latest resize.
 */
final class LimitWatch {
    private final Semaphore semaphore;
    private final int size;
    /** Max-segment tree over history[0..size); leaves at size + k. Written under resizeLock, read freely. */
    private final AtomicLongArray tree;
    /** Number of acquirers inside that entered when the resize count was k. */
    private final AtomicIntegerArray inside;
    private final AtomicInteger resizes = new AtomicInteger();
    /** No acquirer still inside entered below this resize count (only ever raised, see check()). */
    private final AtomicInteger lowWater = new AtomicInteger();
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong maxHeld = new AtomicLong();
    private final AtomicLong checks = new AtomicLong();
    private final AtomicReference<String> violation = new AtomicReference<>();
    private final ReentrantLock resizeLock = new ReentrantLock();

    LimitWatch(Semaphore semaphore, int maxResizes) {
        this.semaphore = semaphore;
        this.size = Integer.highestOneBit(maxResizes) << 1;
        this.tree = new AtomicLongArray(2 * size);
        this.inside = new AtomicIntegerArray(size);
        setLeaf(0, semaphore.permits());
    }

    // ------------------------------------------------------------ acquirers

    /** Registers an acquirer about to ask for permits; returns the token for {@link #exit}. */
    int enter() {
        int k = resizes.get();
        inside.incrementAndGet(k);
        for (;;) {
            // Re-register until the count read after registering is the one registered: a grant after this
            // point sees a resize count >= k, and a check scanning the registrations cannot miss it (the new
            // slot is counted before the old one is released, and a check scans upwards).
            int now = resizes.get();
            if (now == k) {
                return k;
            }
            inside.incrementAndGet(now);
            inside.decrementAndGet(k);
            k = now;
        }
    }

    /** The acquirer of {@code token} holds nothing any more. */
    void exit(int token) {
        inside.decrementAndGet(token);
    }

    /** Counts permits just obtained (after the grant) and checks the bound. */
    void acquired(long permits) {
        long h = held.addAndGet(permits);
        maxHeld.accumulateAndGet(h, Math::max);
        check();
    }

    /** Uncounts permits about to be given back (before the release). */
    void released(long permits) {
        held.addAndGet(-permits);
    }

    // ------------------------------------------------------------ resizes

    /** A random setPermits, addPermits or reducePermits. */
    void resizeRandomly(SplittableRandom random) {
        long ceiling = semaphore.maxPermits();
        switch (random.nextInt(4)) {
            case 0 -> resize(Resize.SET, random.nextLong(ceiling + 1));
            case 1 -> resize(Resize.SET, ceiling / 2 + random.nextLong(ceiling - ceiling / 2 + 1));
            case 2 -> resize(Resize.ADD, 1 + random.nextLong(ceiling));
            default -> resize(Resize.REDUCE, 1 + random.nextLong(Math.max(1, ceiling / 2)));
        }
    }

    enum Resize { SET, ADD, REDUCE }

    /**
     * Changes the limit after publishing an upper bound for it.
     *
     * @throws IllegalStateException if the history is full (the test must make fewer resizes)
     */
    void resize(Resize kind, long amount) {
        resizeLock.lock();
        try {
            int k = resizes.get() + 1;
            if (k >= size) {
                throw new IllegalStateException("more than " + (size - 1) + " resizes: raise maxResizes");
            }
            // Only resizes (serialized here) raise the limit; forget() may lower it at any time. So the limit
            // read now bounds it until this resize, and the bound published covers it until the next one.
            long before = semaphore.permits();
            long bound = switch (kind) {
                case SET -> Math.max(before, amount);
                case ADD -> Math.min(semaphore.maxPermits(), before + amount);
                case REDUCE -> before;
            };
            setLeaf(k, bound);
            resizes.set(k); // publishes the tree writes above
            switch (kind) {
                case SET -> semaphore.setPermits(amount);
                case ADD -> semaphore.addPermits(amount);
                case REDUCE -> semaphore.reducePermits(amount);
            }
        } finally {
            resizeLock.unlock();
        }
    }

    private void setLeaf(int k, long value) {
        int i = size + k;
        tree.set(i, value);
        for (i >>= 1; i >= 1; i >>= 1) {
            tree.set(i, Math.max(tree.get(2 * i), tree.get(2 * i + 1)));
        }
    }

    /** Max of history[from..to], both inclusive, all published. */
    private long maxLimit(int from, int to) {
        long max = 0;
        for (int lo = from + size, hi = to + size + 1; lo < hi; lo >>= 1, hi >>= 1) {
            if ((lo & 1) != 0) {
                max = Math.max(max, tree.get(lo++));
            }
            if ((hi & 1) != 0) {
                max = Math.max(max, tree.get(--hi));
            }
        }
        return max;
    }

    // ------------------------------------------------------------ the check

    /** Asserts counted held <= the largest limit since the oldest acquirer inside entered. */
    void check() {
        checks.incrementAndGet();
        int first = resizes.get();
        int low = lowWater.get();
        int oldest = first;
        for (int k = low; k < first; k++) {
            if (inside.get(k) != 0) {
                oldest = k;
                break;
            }
        }
        // Safe to remember: an acquirer registered below `oldest` now would have registered after this scan
        // passed its slot, hence re-read a resize count >= first >= oldest and moved up.
        if (oldest > low) {
            lowWater.accumulateAndGet(oldest, Math::max);
        }
        long h = held.get();
        int last = resizes.get();
        long bound = maxLimit(oldest, last);
        if (h > bound) {
            String message = "held " + h + " > " + bound + ", the largest limit since resize #" + oldest
                    + " (resizes so far: " + last + "; now " + semaphore + ")";
            violation.compareAndSet(null, message);
            throw new AssertionError(message);
        }
    }

    /** The first violation seen, or null. */
    String violation() {
        return violation.get();
    }

    long held() {
        return held.get();
    }

    long maxHeld() {
        return maxHeld.get();
    }

    long checks() {
        return checks.get();
    }

    int resizes() {
        return resizes.get();
    }
}
