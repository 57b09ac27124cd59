package dev.sema;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * A limit that finds itself: it watches a {@link Semaphore} through its {@link SemaphoreListener} events
 * and moves the semaphore's limit ({@link Semaphore#setPermits}) toward the concurrency its downstream
 * can take, the way TCP finds a path's capacity.
 *
 * {@snippet :
 * Semaphore partner = Semaphore.builder().permits(20).maxPermits(500).name("partner-api").build();
 * AdaptiveLimit adaptive = AdaptiveLimit.gradient().minLimit(4).build(partner);
 *
 * try (Permit p = partner.acquire()) {
 *     Response r = client.call(request);       // the time the permit is held is the latency sample
 *     if (r.status() == 429 || r.status() == 503) {
 *         adaptive.dropped();                  // the downstream said it is overloaded
 *     }
 * }
 * }
 *
 * <h2>What it reads</h2>
 * <ul>
 * <li>Latency: the {@code heldNanos} of each {@code released} event, so the permit should be held for the
 *     call to the downstream and not much more. Samples of unknown length ({@code -1}) are skipped.</li>
 * <li>Drops: {@link #dropped()}, every {@code rejected(TIMEOUT)} event (a timed acquire that waited too
 *     long), and, when {@link Builder#dropAbove} is set, every hold longer than that. A {@code tryAcquire}
 *     refused because the limit is full ({@code UNAVAILABLE}) is the limit doing its job, not a drop.</li>
 * <li>Use: permits granted and given back through this semaphore, to tell whether demand reached at
 *     least half the limit: the limit grows only then, so an idle semaphore does not drift to its ceiling.</li>
 * </ul>
 *
 * <h2>The algorithms</h2>
 * Both adjust once per window of samples (a window is at least the limit's worth of samples, so about
 * one round of the downstream), and both back off on a drop.
 * <ul>
 * <li>{@link #aimd()}: additive increase, multiplicative decrease. One permit more per window in which the
 *     limit was used, and {@code backoff} times the limit (default 0.9) on a drop. It reacts to drops
 *     only, not to latency, unless {@code dropAbove} turns slow calls into drops.</li>
 * <li>{@link #gradient()}: compares the window's mean hold time (short-term) with a long-term one that
 *     follows a fall at once and a rise only slowly, so that it tracks the uncongested downstream. While
 *     the short-term time stays within {@code tolerance} times the long-term one (default 1.15), the
 *     limit grows by its square root (at least 1) per used window; beyond it, the limit is scaled by
 *     long-term / short-term, at least halved: the concurrency at which the downstream answered in its
 *     usual time, since requests beyond its capacity only wait in its queue. {@code smoothing} (default
 *     0.5) blends each decrease with the old value, against one window's noise; {@code longWindows}
 *     (default 100) sets how many windows a rise of the long-term time takes.</li>
 * </ul>
 *
 * <h2>One backoff per episode</h2>
 * An overload makes every request in flight fail or slow down, and their drops arrive together. After a
 * backoff, drops are ignored for one smoothed hold time (the requests that were already in flight when
 * it happened), so one episode backs off once, as TCP halves its window once per round trip.
 *
 * <h2>Bounds</h2>
 * The limit stays within {@code minLimit..min(maxLimit, maxPermits())} (defaults 1 and the semaphore's
 * ceiling). It starts at {@code initialLimit} when one is given, else at the semaphore's current limit
 * brought within the bounds. A limit set by someone else (a {@code setPermits} through this process) is
 * adopted as the new starting point. {@link #close()} stops the adjustments and leaves the limit where
 * it is; closing the semaphore closes its adaptive limit.
 *
 * <h2>On Redis: one limit for the fleet</h2>
 * On a semaphore that is not local (a {@code RedisSemaphore}), every process that builds an adaptive
 * limit on it adjusts the one shared limit. The changes run on a virtual thread, never on the thread that
 * reported the event (they are round trips), coalesced to the latest. Each change is absolute and made
 * relative to the shared limit, read just before: a backoff that finds the shared limit already lower
 * than this process last saw it (another process backed off for the same episode) adopts it instead,
 * and so does a growth that finds it already higher. So N processes that see one overload back off about
 * once, not N times, and the fleet grows about one step per window of any one process. The use check is
 * skipped there (this process sees only its own share of the use).
 *
 * <h2>Threading and cost</h2>
 * Thread-safe. A sample costs a few atomic additions and allocates nothing; the decisions are made by one
 * thread at a time, once per window or drop, and read the clock only then. One semaphore has at most one
 * adaptive limit at a time (two would fight over the limit): {@code build} refuses a second until the first
 * is closed. Its listener methods are called by its semaphore; called by anyone else, or with another
 * semaphore, they do nothing.
 */
public final class AdaptiveLimit implements SemaphoreListener, AutoCloseable {
    private static final System.Logger LOG = System.getLogger("dev.sema");
    private static final long NONE = -1;
    /** The semaphores that have an adaptive limit now, and which (weakly held: a dropped semaphore goes). */
    private static final Controlled CONTROLLED = new Controlled();

    private final Semaphore semaphore;
    /** The semaphore's partitions (API.md §11a), whose events its listeners see too; usually none. */
    private final Semaphore[] partitions;
    private final LimitControl control;
    private final long minLimit;
    private final long maxLimit;
    private final long dropAboveNanos;
    private final LongSupplier clock;
    /** Whether changes go straight to the semaphore (local) or through the applier (remote, A5). */
    private final boolean local;

    // Counted by any thread, lock-free (A1).
    private final AtomicLong samples = new AtomicLong();
    private final AtomicLong holdSum = new AtomicLong();
    private final AtomicLong drops = new AtomicLong();
    private final AtomicLong inUse = new AtomicLong();
    private final AtomicLong peakInUse = new AtomicLong();
    /** The samples that close the current window; written under the lock. */
    private volatile long windowSize;
    /** A limit set through this process by someone else, to adopt; NONE when there is none. */
    private final AtomicLong adopt = new AtomicLong(NONE);
    private volatile boolean closed;

    // Decisions (A2): guarded by lock.
    private final ReentrantLock lock = new ReentrantLock();
    private double estimate;
    private long lastBackoff;
    private boolean backedOff;
    private double smoothedHold;
    /** What this adaptive limit last set or saw (A3); written under the lock, read by limit(). */
    private volatile long limit;

    // The applier (A5), remote semaphores only: guarded by lock.
    /** The change decided and not yet applied to the shared limit. */
    private double pendingDelta;
    /** Whether an applier thread is running. */
    private boolean applying;
    private final AtomicBoolean failureLogged = new AtomicBoolean();

    /*
     * Implementation overview.
     *
     * A1: the listener methods never lock and never allocate: a sample is an add to holdSum and an
     *     increment of samples, a grant an add to inUse (and a max into peakInUse), a drop an increment of
     *     drops. A window's sum and count are taken with two getAndSets, so a sample that lands between
     *     them counts its time in one window and itself in the next: harmless for a mean over many.
     * A2: decisions run under lock, taken with tryLock from the listener methods: a thread that finds it
     *     held leaves its sample or drop counted, and the holder, after unlocking, looks again (react's
     *     loop), so no window or drop is left undecided while nobody holds the lock.
     * A3: the limit changes only through apply(), with a target clamped to minLimit..maxLimit; `limit`
     *     is what was last set (or, remote, last read back from the shared semaphore). A limit set by
     *     someone else waits in `adopt` for the next decision, and limit() reports it meanwhile.
     * A4: after a backoff at time t, drops before t + episodeNanos() (the smoothed hold time) are counted
     *     as the same episode and ignored.
     * A5: remote semaphores are changed by one virtual thread at a time (applying), never by the thread
     *     that reported the event. Decisions add their change to pendingDelta; the applier takes it, reads
     *     the shared limit and, unless another process has moved it the same way since this one last saw
     *     it (then it adopts it: that was the same episode's change), sets shared + delta, keeping the
     *     fraction for later. Whenever it finds the shared limit moved, the current window restarts, so
     *     that no decision rests on samples taken under the old limit. Its read and set are two round
     *     trips, not atomic: two processes that decide at the same moment may both apply, which costs one
     *     step more, not N.
     *
     * Field          read              write                    guard
     * estimate       lock              lock                     lock
     * limit          volatile          lock                     lock for writes
     * windowSize     volatile          lock                     lock for writes
     * samples...     atomic            atomic                   none (A1)
     */

    private AdaptiveLimit(Builder b, Semaphore semaphore, long maxLimit, long initial) {
        this.semaphore = semaphore;
        this.partitions = semaphore.partitionNames().stream().map(semaphore::partition).toArray(Semaphore[]::new);
        this.control = b.control();
        this.minLimit = b.minLimit;
        this.maxLimit = maxLimit;
        this.dropAboveNanos = b.dropAboveNanos;
        this.clock = b.clock;
        this.local = semaphore instanceof LocalSemaphore;
        this.estimate = initial;
        this.limit = initial;
        this.windowSize = control.windowSize(initial);
        if (local) { // permits already held count toward use; their releases will be subtracted
            inUse.set(Math.max(0, semaphore.permits() - semaphore.availablePermits()));
        }
    }

    /**
     * Starts a loss-based (additive increase, multiplicative decrease) adaptive limit.
     *
     * @return a builder
     */
    public static Builder aimd() {
        return new Builder(false);
    }

    /**
     * Starts a latency-based adaptive limit (short-term against long-term hold time).
     *
     * @return a builder
     */
    public static Builder gradient() {
        return new Builder(true);
    }

    /**
     * Reports that the caller saw overload downstream (a 429 or 503, a timeout, a refused connection):
     * the limit backs off, once per episode.
     */
    public void dropped() {
        if (closed) {
            return;
        }
        drops.incrementAndGet();
        react();
    }

    /**
     * Returns the limit this adaptive limit last set (or, on a shared semaphore, last read back), or one set
     * by someone else since, which it adopts as its new starting point.
     *
     * @return the limit
     */
    public long limit() {
        // An adoption is made by the next decision, which an idle semaphore may not bring for a long time;
        // until then the limit set by someone else is already the semaphore's, so that is what it reports.
        long adopted = adopt.get();
        return adopted != NONE ? adopted : limit;
    }

    /**
     * Returns the algorithm that moves the limit.
     *
     * @return {@code "aimd"} or {@code "gradient"}
     */
    public String algorithm() {
        return control.name();
    }

    /**
     * Returns the lowest limit it sets: the builder's {@code minLimit}.
     *
     * @return at least 1
     */
    public long minLimit() {
        return minLimit;
    }

    /**
     * Returns the highest limit it sets: the builder's {@code maxLimit} capped by the semaphore's
     * {@code maxPermits()}, as {@link Builder#build} found it.
     *
     * @return at least {@link #minLimit()}
     */
    public long maxLimit() {
        return maxLimit;
    }

    /** Stops adjusting and unregisters from the semaphore; the limit stays where it is. Idempotent. */
    @Override
    public void close() {
        closed = true;
        semaphore.removeListener(this);
        CONTROLLED.release(semaphore, this);
    }

    @Override
    public String toString() {
        return "AdaptiveLimit[" + control.name() + ", limit=" + limit + ", bounds=" + minLimit + ".." + maxLimit
                + ", semaphore='" + semaphore.name() + "'" + (closed ? ", closed" : "") + "]";
    }

    // ---- SemaphoreListener (A1) ----

    /** Counts the grant toward the window's peak use. Not for callers. */
    @Override
    public void acquired(Semaphore s, long permits, long waitNanos) {
        if (s != semaphore && !isPartition(s)) {
            return;
        }
        long now = inUse.addAndGet(permits);
        if (now > peakInUse.get()) {
            peakInUse.accumulateAndGet(now, Math::max);
        }
    }

    /** A latency sample. Not for callers. */
    @Override
    public void released(Semaphore s, long permits, long heldNanos) {
        if (s != semaphore && !isPartition(s)) {
            return;
        }
        inUse.addAndGet(-permits);
        if (closed || heldNanos < 0) {
            return;
        }
        if (heldNanos > dropAboveNanos) {
            drops.incrementAndGet();
        } else {
            holdSum.addAndGet(heldNanos);
            if (samples.incrementAndGet() < windowSize) {
                return;
            }
        }
        react();
    }

    /** Counts leaked permits as no longer in use. Not for callers. */
    @Override
    public void leaked(Semaphore s, long permits) {
        if (s != semaphore && !isPartition(s)) {
            return;
        }
        inUse.addAndGet(-permits);
    }

    /** A timeout is a drop. Not for callers. */
    @Override
    public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
        if ((s == semaphore || isPartition(s)) && why == Rejection.TIMEOUT) {
            dropped();
        }
    }

    /** Whether an event of another semaphore is one of a partition's requests: they share the limit. */
    private boolean isPartition(Semaphore s) {
        for (Semaphore p : partitions) {
            if (p == s) {
                return true;
            }
        }
        return false;
    }

    /** Adopts a limit set by someone else. Not for callers. */
    @Override
    public void limitChanged(Semaphore s, long oldLimit, long newLimit) {
        if (s == semaphore && newLimit != limit) {
            adopt.set(newLimit);
        }
    }

    /** Closing the semaphore closes this. Not for callers. */
    @Override
    public void closed(Semaphore s) {
        if (s == semaphore) {
            close();
        }
    }

    // ---- decisions (A2) ----

    private void react() {
        while (!closed && (drops.get() > 0 || samples.get() >= windowSize) && lock.tryLock()) {
            try {
                decideLocked();
            } finally {
                lock.unlock();
            }
        }
    }

    private void decideLocked() {
        long adopted = adopt.get();
        if (adopted != NONE) {
            if (adopted != limit) {
                estimate = adopted;
                limit = adopted;
            }
            // Cleared only after limit holds it, so limit() never reads the old limit in between; a newer
            // adoption that came meanwhile stays for the next decision.
            adopt.compareAndSet(adopted, NONE);
        }
        if (drops.getAndSet(0) > 0) {
            long now = clock.getAsLong();
            if (!backedOff || now - lastBackoff >= episodeNanos()) { // A4
                backedOff = true;
                lastBackoff = now;
                samples.set(0);
                holdSum.set(0);
                peakInUse.set(inUse.get());
                change(control.onDrop(estimate));
                return;
            }
        }
        long n = samples.get();
        if (n < windowSize) {
            return;
        }
        n = samples.getAndSet(0);
        long sum = holdSum.getAndSet(0);
        double mean = (double) sum / n;
        smoothedHold = smoothedHold == 0 ? mean : smoothedHold + (mean - smoothedHold) * 0.25;
        boolean used = !local || 2 * peakInUse.getAndSet(inUse.get()) >= limit;
        change(control.onWindow(estimate, mean, used));
    }

    /**
     * How long after a backoff drops still belong to its episode: the smoothed hold time; before the first
     * window, the mean of the samples so far, and with none at all, until one arrives (the first drops of
     * a run, before any call has come back, are one episode).
     */
    private long episodeNanos() {
        if (smoothedHold > 0) {
            return (long) smoothedHold;
        }
        long n = samples.get();
        return n > 0 ? holdSum.get() / n : Long.MAX_VALUE;
    }

    /** Moves the estimate and, when its whole part changed, the limit (A3); remote: hands it to the applier (A5). */
    private void change(double next) {
        next = Math.max(minLimit, Math.min(maxLimit, next));
        if (local) {
            estimate = next;
            windowSize = control.windowSize(estimate);
            long target = (long) estimate;
            if (target != limit) {
                limit = target;
                semaphore.setPermits(target); // its limitChanged event sees limit == target and adopts nothing
            }
            return;
        }
        pendingDelta += next - estimate;
        estimate = next;
        windowSize = control.windowSize(estimate);
        if ((pendingDelta < 0 || pendingDelta >= 1) && !applying) {
            applying = true;
            Thread.ofVirtual().name("sema-adaptive-" + semaphore.name()).start(this::applyChanges);
        }
    }

    /** The applier of a remote semaphore (A5): one at a time, round trips outside the lock. */
    private void applyChanges() {
        for (;;) {
            double delta;
            lock.lock();
            try {
                delta = pendingDelta;
                pendingDelta = 0;
                if (closed || !(delta < 0 || delta >= 1)) {
                    pendingDelta += delta;
                    applying = false;
                    return;
                }
            } finally {
                lock.unlock();
            }
            long result;
            double carry = 0;
            try {
                long shared = semaphore.permits();
                long seen = limit;
                // Another process already moved the shared limit the same way since this one last saw it:
                // that was this episode's change (or this growth); adopt it instead of adding to it.
                boolean othersMoved = delta < 0 ? shared < seen : shared > seen;
                result = shared;
                if (!othersMoved) {
                    double exact = Math.max(minLimit, Math.min(maxLimit, shared + delta));
                    long target = (long) exact;
                    carry = exact - target;
                    if (target != shared) {
                        semaphore.setPermits(target);
                        result = target;
                    }
                }
            } catch (RuntimeException e) {
                if (failureLogged.compareAndSet(false, true)) {
                    LOG.log(System.Logger.Level.WARNING, "AdaptiveLimit could not change the limit of semaphore '"
                            + semaphore.name() + "'; it keeps trying with later changes, and logs this once", e);
                }
                continue;
            }
            lock.lock();
            try {
                if (result != limit) {
                    // The shared limit moved: samples taken under the old one would decide a change that
                    // is already made (another process's backoff for this episode), so the window restarts.
                    samples.set(0);
                    holdSum.set(0);
                }
                limit = result;
                estimate = Math.max(minLimit, Math.min(maxLimit, result + carry + pendingDelta));
                windowSize = control.windowSize(estimate);
            } finally {
                lock.unlock();
            }
        }
    }

    /** For tests: the long-term hold time of a gradient limit, 0 for AIMD or before the first window. */
    double longHoldNanos() {
        lock.lock();
        try {
            return control instanceof LimitControl.Gradient g ? g.longHold() : 0;
        } finally {
            lock.unlock();
        }
    }

    /** One adaptive limit per semaphore at a time (see the class comment). */
    private static final class Controlled {
        private final java.util.Map<Semaphore, AdaptiveLimit> bySemaphore = new java.util.WeakHashMap<>();

        synchronized void claim(Semaphore s, AdaptiveLimit a) {
            AdaptiveLimit current = bySemaphore.get(s);
            if (current != null && !current.closed) {
                throw new IllegalStateException("semaphore '" + s.name() + "' already has an adaptive limit ("
                        + current + "): close it before building another");
            }
            bySemaphore.put(s, a);
        }

        synchronized void release(Semaphore s, AdaptiveLimit a) {
            bySemaphore.remove(s, a);
        }
    }

    /**
     * Configures an {@link AdaptiveLimit}. Options that belong to the other algorithm are refused.
     */
    public static final class Builder {
        private final boolean gradient;
        private long minLimit = 1;
        private long maxLimit = Long.MAX_VALUE;
        private long initialLimit = NONE;
        private double backoff = 0.9;
        private long dropAboveNanos = Long.MAX_VALUE;
        private double tolerance = 1.15;
        private double smoothing = 0.5;
        private int minWindow = 10;
        private int longWindows = 100;
        private LongSupplier clock = System::nanoTime;

        private Builder(boolean gradient) {
            this.gradient = gradient;
        }

        /**
         * The lowest limit it sets (default 1).
         *
         * @param minLimit at least 1: a limit of 0 admits nothing, so no sample could raise it again
         * @return this builder
         * @throws IllegalArgumentException if {@code minLimit < 1}
         */
        public Builder minLimit(long minLimit) {
            this.minLimit = atLeastOne("minLimit", minLimit);
            return this;
        }

        /**
         * The highest limit it sets (default: the semaphore's {@code maxPermits()}, which also caps this).
         *
         * @param maxLimit at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code maxLimit < 1}
         */
        public Builder maxLimit(long maxLimit) {
            this.maxLimit = atLeastOne("maxLimit", maxLimit);
            return this;
        }

        /**
         * The limit to start from (default: the semaphore's current limit, brought within the bounds). On a
         * shared semaphore, leaving it unset keeps the fleet's current limit when a process joins.
         *
         * @param initialLimit within {@code minLimit..min(maxLimit, maxPermits())}, checked by {@link #build}
         * @return this builder
         * @throws IllegalArgumentException if {@code initialLimit < 1}
         */
        public Builder initialLimit(long initialLimit) {
            this.initialLimit = atLeastOne("initialLimit", initialLimit);
            return this;
        }

        /**
         * The factor applied to the limit on a drop (default 0.9).
         *
         * @param ratio strictly between 0 and 1
         * @return this builder
         * @throws IllegalArgumentException if {@code ratio} is not strictly between 0 and 1
         */
        public Builder backoff(double ratio) {
            if (!(ratio > 0 && ratio < 1)) {
                throw new IllegalArgumentException("backoff (" + ratio + ") must be strictly between 0 and 1");
            }
            this.backoff = ratio;
            return this;
        }

        /**
         * Counts a permit held longer than this as a drop (default: none does), for a downstream that
         * slows down instead of refusing.
         *
         * @param limit positive
         * @return this builder
         * @throws IllegalArgumentException if {@code limit} is zero or negative
         * @throws NullPointerException if {@code limit} is {@code null}
         */
        public Builder dropAbove(Duration limit) {
            Objects.requireNonNull(limit, "dropAbove");
            if (limit.isNegative() || limit.isZero()) {
                throw new IllegalArgumentException("dropAbove (" + limit + ") must be positive");
            }
            this.dropAboveNanos = saturatedNanos(limit);
            return this;
        }

        /**
         * {@code gradient()} only: how many times the long-term hold time the short-term one may reach before
         * the limit shrinks (default 1.15): the margin for the noise of a window's mean. Raise it for a downstream
         * whose latency varies a lot from call to call; the price is more queueing there before the limit
         * reacts.
         *
         * @param ratio at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code ratio < 1}
         * @throws IllegalStateException on an {@code aimd()} builder
         */
        public Builder tolerance(double ratio) {
            gradientOnly("tolerance");
            if (!(ratio >= 1) || Double.isInfinite(ratio)) {
                throw new IllegalArgumentException("tolerance (" + ratio + ") must be a finite number >= 1");
            }
            this.tolerance = ratio;
            return this;
        }

        /**
         * {@code gradient()} only: the weight of a decreased value against the old one (default 0.5); 1 takes
         * each decrease as computed.
         *
         * @param weight in {@code (0, 1]}
         * @return this builder
         * @throws IllegalArgumentException if {@code weight} is outside {@code (0, 1]}
         * @throws IllegalStateException on an {@code aimd()} builder
         */
        public Builder smoothing(double weight) {
            gradientOnly("smoothing");
            if (!(weight > 0 && weight <= 1)) {
                throw new IllegalArgumentException("smoothing (" + weight + ") must be in (0, 1]");
            }
            this.smoothing = weight;
            return this;
        }

        /**
         * {@code gradient()} only: the fewest samples in a window (default 10; a window is also at least the
         * limit's worth), against noise at small limits.
         *
         * @param samples at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code samples < 1}
         * @throws IllegalStateException on an {@code aimd()} builder
         */
        public Builder minWindow(int samples) {
            gradientOnly("minWindow");
            this.minWindow = (int) atLeastOne("minWindow", samples);
            return this;
        }

        /**
         * {@code gradient()} only: how many windows the long-term average spans (default 100). It follows a
         * fall in the hold time four times faster than a rise.
         *
         * @param windows at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code windows < 1}
         * @throws IllegalStateException on an {@code aimd()} builder
         */
        public Builder longWindows(int windows) {
            gradientOnly("longWindows");
            this.longWindows = (int) atLeastOne("longWindows", windows);
            return this;
        }

        /** For tests: the clock that times backoff episodes. */
        Builder clock(LongSupplier nanoClock) {
            this.clock = Objects.requireNonNull(nanoClock, "clock");
            return this;
        }

        /**
         * Checks the bounds against the semaphore, sets its limit to the starting one, and registers the
         * adaptive limit as its listener. A refused build changes nothing.
         *
         * @param controlled the semaphore whose limit it adjusts
         * @return the running adaptive limit
         * @throws IllegalArgumentException if {@code minLimit} is above {@code min(maxLimit, maxPermits())},
         *     or {@code initialLimit} is outside the bounds
         * @throws SemaphoreClosedException if the semaphore is closed
         * @throws IllegalStateException if the semaphore already has an adaptive limit that is not closed
         * @throws NullPointerException if {@code controlled} is {@code null}
         */
        public AdaptiveLimit build(Semaphore controlled) {
            Objects.requireNonNull(controlled, "semaphore");
            if (controlled.isClosed()) {
                throw new SemaphoreClosedException("semaphore '" + controlled.name() + "' is closed: AdaptiveLimit"
                        + " refused");
            }
            long ceiling = Math.min(maxLimit, controlled.maxPermits());
            if (minLimit > ceiling) {
                throw new IllegalArgumentException("minLimit (" + minLimit + ") is above min(maxLimit, maxPermits()) ("
                        + ceiling + ") of semaphore '" + controlled.name() + "'");
            }
            long initial;
            if (initialLimit != NONE) {
                if (initialLimit < minLimit || initialLimit > ceiling) {
                    throw new IllegalArgumentException("initialLimit (" + initialLimit + ") must be within minLimit.."
                            + "min(maxLimit, maxPermits()) (" + minLimit + ".." + ceiling + ")");
                }
                initial = initialLimit;
            } else {
                initial = Math.max(minLimit, Math.min(ceiling, controlled.permits()));
            }
            AdaptiveLimit adaptive = new AdaptiveLimit(this, controlled, ceiling, initial);
            CONTROLLED.claim(controlled, adaptive);
            try {
                if (controlled.permits() != initial) {
                    controlled.setPermits(initial);
                }
                controlled.addListener(adaptive);
            } catch (RuntimeException e) {
                CONTROLLED.release(controlled, adaptive); // a refused build changes nothing
                throw e;
            }
            return adaptive;
        }

        private LimitControl control() {
            return gradient
                    ? new LimitControl.Gradient(backoff, tolerance, smoothing, minWindow, longWindows)
                    : new LimitControl.Aimd(backoff);
        }

        private void gradientOnly(String option) {
            if (!gradient) {
                throw new IllegalStateException(option + " is an option of AdaptiveLimit.gradient(), not aimd()");
            }
        }

        private static long atLeastOne(String what, long value) {
            if (value < 1) {
                throw new IllegalArgumentException(what + " (" + value + ") must be at least 1");
            }
            return value;
        }

        private static long saturatedNanos(Duration d) {
            try {
                return d.toNanos();
            } catch (ArithmeticException e) {
                return Long.MAX_VALUE;
            }
        }
    }
}
