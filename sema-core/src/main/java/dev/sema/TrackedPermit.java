package dev.sema;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The Permit of a semaphore with leak detection. The count lives in a {@link Cell} that the Permit's
 * {@link Cleaner} action keeps: when the Permit becomes unreachable holding permits, the action still
 * reaches the count, reports the leak and releases them. Once the count is 0 the action does nothing.
 */
final class TrackedPermit implements LocalPermit {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final System.Logger LOG = System.getLogger("dev.sema");
    private static final int SAMPLE_ONE_IN = 128;

    private final LocalSemaphore semaphore;
    private final Cell cell;

    private TrackedPermit(LocalSemaphore semaphore, Cell cell) {
        this.semaphore = semaphore;
        this.cell = cell;
        CLEANER.register(this, cell);
    }

    /** Tracks a new grant of {@code permits}; records the stack per {@code level}. */
    static TrackedPermit track(LocalSemaphore semaphore, long permits, LeakDetection level, long grantedAt) {
        boolean withStack = level == LeakDetection.PARANOID
                || ThreadLocalRandom.current().nextInt(SAMPLE_ONE_IN) == 0;
        AcquiredAt site = withStack ? new AcquiredAt(semaphore.name()) : null;
        return new TrackedPermit(semaphore, new Cell(semaphore, permits, site, grantedAt));
    }

    @Override
    public LocalSemaphore semaphore() {
        return semaphore;
    }

    @Override
    public String toString() {
        return LocalPermit.describe(this);
    }

    @Override
    public long permits() {
        return cell.held;
    }

    // The registration stays until collection, even once empty: a later merge() may fill this Permit again.
    // reachabilityFence: the Permit must not be found unreachable (and reported) while it is emptying itself.

    @Override
    public long getAndClear() {
        try {
            return (long) Cell.HELD.getAndSet(cell, 0L);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public boolean casHeld(long expected, long next) {
        try {
            return Cell.HELD.compareAndSet(cell, expected, next);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public void addHeld(long n) {
        Cell.HELD.getAndAdd(cell, n);
    }

    @Override
    public long grantedAt() {
        return cell.grantedAt;
    }

    @Override
    public LocalPermit fork(long permits) {
        // The split-off permits were acquired where the original ones were.
        return new TrackedPermit(semaphore, new Cell(semaphore, permits, cell.site, cell.grantedAt));
    }

    /** The count, and the cleanup action; must not refer to the TrackedPermit. */
    static final class Cell implements Runnable {
        static final VarHandle HELD;

        static {
            try {
                HELD = MethodHandles.lookup().findVarHandle(Cell.class, "held", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final LocalSemaphore semaphore;
        private final AcquiredAt site;
        private final long grantedAt;
        volatile long held;

        Cell(LocalSemaphore semaphore, long held, AcquiredAt site, long grantedAt) {
            this.semaphore = semaphore;
            this.held = held;
            this.site = site;
            this.grantedAt = grantedAt;
        }

        @Override
        public void run() {
            long n = (long) HELD.getAndSet(this, 0L);
            if (n == 0) {
                return;
            }
            semaphore.release(n);
            // after the release, so a count seen means the permits are back
            semaphore.recordLeak(n, site == null ? null : site.thread);
            String message = "A Permit of semaphore '" + semaphore.name() + "' holding " + n
                    + " permits became unreachable without being closed; its permits were returned."
                    + (site == null ? " Build the semaphore with LeakDetection.PARANOID to see where it was acquired."
                            : " It was acquired at:");
            if (site == null) {
                LOG.log(System.Logger.Level.WARNING, message);
            } else {
                LOG.log(System.Logger.Level.WARNING, message, site);
            }
        }
    }

    /** Not thrown: carries the stack of the acquire that a leak report points at. */
    static final class AcquiredAt extends Throwable {
        private static final long serialVersionUID = 1L;

        final String thread = Thread.currentThread().getName();

        AcquiredAt(String semaphore) {
            super("Permit of semaphore '" + semaphore + "' acquired here", null, false, true);
        }
    }
}
