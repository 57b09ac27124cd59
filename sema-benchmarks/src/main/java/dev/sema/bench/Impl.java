package dev.sema.bench;

import com.ibm.asyncutil.locks.FairAsyncSemaphore;
import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.util.concurrent.CompletionStage;

/**
 * The implementations under test, selected by a benchmark's {@code @Param("impl")}. Each makes a fresh
 * semaphore with a given number of permits behind the {@link BlockingLimiter} and (where it has one)
 * {@link AsyncLimiter} adapters.
 */
public enum Impl {
    /** Sema, {@link Fairness#FIFO}. */
    SEMA_FIFO("Sema FIFO") {
        @Override
        public BlockingLimiter blocking(long permits) {
            return new SemaLimiter(sema(permits, Fairness.FIFO));
        }

        @Override
        public AsyncLimiter async(long permits) {
            return new SemaLimiter(sema(permits, Fairness.FIFO));
        }
    },
    /** Sema, {@link Fairness#BARGING}. */
    SEMA_BARGING("Sema BARGING") {
        @Override
        public BlockingLimiter blocking(long permits) {
            return new SemaLimiter(sema(permits, Fairness.BARGING));
        }

        @Override
        public AsyncLimiter async(long permits) {
            return new SemaLimiter(sema(permits, Fairness.BARGING));
        }
    },
    /** {@code java.util.concurrent.Semaphore}, non-fair (its default). Blocking only. */
    JDK_NONFAIR("JDK non-fair") {
        @Override
        public BlockingLimiter blocking(long permits) {
            return new JdkLimiter(new java.util.concurrent.Semaphore(Math.toIntExact(permits), false));
        }
    },
    /** {@code java.util.concurrent.Semaphore}, fair (FIFO). Blocking only. */
    JDK_FAIR("JDK fair") {
        @Override
        public BlockingLimiter blocking(long permits) {
            return new JdkLimiter(new java.util.concurrent.Semaphore(Math.toIntExact(permits), true));
        }
    },
    /** asyncutil's {@code FairAsyncSemaphore}: weighted, FIFO, async only (blocking joins its future). */
    ASYNCUTIL_FAIR("asyncutil FairAsyncSemaphore") {
        @Override
        public BlockingLimiter blocking(long permits) {
            return new AsyncutilLimiter(new FairAsyncSemaphore(permits));
        }

        @Override
        public AsyncLimiter async(long permits) {
            return new AsyncutilLimiter(new FairAsyncSemaphore(permits));
        }
    },
    /** {@link LockedQueueSemaphore}: lock + deque of futures, async only (blocking joins its future). */
    HAND_WRITTEN("hand-written lock + deque") {
        @Override
        public BlockingLimiter blocking(long permits) {
            return new LockedQueueLimiter(new LockedQueueSemaphore(permits));
        }

        @Override
        public AsyncLimiter async(long permits) {
            return new LockedQueueLimiter(new LockedQueueSemaphore(permits));
        }
    };

    private final String label;

    Impl(String label) {
        this.label = label;
    }

    /**
     * The name used in reports.
     *
     * @return the human-readable name
     */
    public String label() {
        return label;
    }

    /**
     * A fresh semaphore with {@code permits} free, used blocking.
     *
     * @param permits the limit
     * @return the adapter
     */
    public abstract BlockingLimiter blocking(long permits);

    /**
     * A fresh semaphore with {@code permits} free, used asynchronously.
     *
     * @param permits the limit
     * @return the adapter
     * @throws UnsupportedOperationException if the implementation has no async acquire
     */
    public AsyncLimiter async(long permits) {
        throw new UnsupportedOperationException(label + " has no async acquire");
    }

    private static Semaphore sema(long permits, Fairness fairness) {
        return Semaphore.builder().permits(permits).maxPermits(permits).fairness(fairness).build();
    }

    private static final class SemaLimiter implements BlockingLimiter, AsyncLimiter {
        private final Semaphore semaphore;

        SemaLimiter(Semaphore semaphore) {
            this.semaphore = semaphore;
        }

        @Override
        public void guarded(long permits, Section section) throws InterruptedException {
            try (Permit p = semaphore.acquire(permits)) {
                section.run();
            }
        }

        @Override
        public Object take(long permits) throws InterruptedException {
            return semaphore.acquire(permits);
        }

        @Override
        public void give(Object grant, long permits) {
            ((Permit) grant).close();
        }

        @Override
        public CompletionStage<?> acquire(long permits) {
            return semaphore.acquireAsync(permits);
        }

        @Override
        public void release(Object grant, long permits) {
            ((Permit) grant).close();
        }

        @Override
        public long availablePermits() {
            return semaphore.availablePermits();
        }

        @Override
        public int queueLength() {
            return semaphore.queueLength();
        }
    }

    private static final class JdkLimiter implements BlockingLimiter {
        private final java.util.concurrent.Semaphore semaphore;

        JdkLimiter(java.util.concurrent.Semaphore semaphore) {
            this.semaphore = semaphore;
        }

        @Override
        public void guarded(long permits, Section section) throws InterruptedException {
            int n = (int) permits;
            semaphore.acquire(n);
            try {
                section.run();
            } finally {
                semaphore.release(n);
            }
        }

        @Override
        public Object take(long permits) throws InterruptedException {
            semaphore.acquire((int) permits);
            return Boolean.TRUE; // the JDK releases by count: nothing to keep but a token
        }

        @Override
        public void give(Object grant, long permits) {
            semaphore.release((int) permits);
        }

        @Override
        public long availablePermits() {
            return semaphore.availablePermits();
        }
    }

    private static final class AsyncutilLimiter implements BlockingLimiter, AsyncLimiter {
        private final FairAsyncSemaphore semaphore;

        AsyncutilLimiter(FairAsyncSemaphore semaphore) {
            this.semaphore = semaphore;
        }

        @Override
        public void guarded(long permits, Section section) throws InterruptedException {
            semaphore.acquire(permits).toCompletableFuture().join();
            try {
                section.run();
            } finally {
                semaphore.release(permits);
            }
        }

        @Override
        public Object take(long permits) {
            semaphore.acquire(permits).toCompletableFuture().join();
            return Boolean.TRUE;
        }

        @Override
        public void give(Object grant, long permits) {
            semaphore.release(permits);
        }

        @Override
        public CompletionStage<?> acquire(long permits) {
            return semaphore.acquire(permits);
        }

        @Override
        public void release(Object grant, long permits) {
            semaphore.release(permits);
        }

        @Override
        public long availablePermits() {
            return semaphore.getAvailablePermits();
        }

        @Override
        public int queueLength() {
            return semaphore.getQueueLength();
        }
    }

    private static final class LockedQueueLimiter implements BlockingLimiter, AsyncLimiter {
        private final LockedQueueSemaphore semaphore;

        LockedQueueLimiter(LockedQueueSemaphore semaphore) {
            this.semaphore = semaphore;
        }

        @Override
        public void guarded(long permits, Section section) throws InterruptedException {
            semaphore.acquire(permits).join();
            try {
                section.run();
            } finally {
                semaphore.release(permits);
            }
        }

        @Override
        public Object take(long permits) {
            semaphore.acquire(permits).join();
            return Boolean.TRUE;
        }

        @Override
        public void give(Object grant, long permits) {
            semaphore.release(permits);
        }

        @Override
        public CompletionStage<?> acquire(long permits) {
            return semaphore.acquire(permits);
        }

        @Override
        public void release(Object grant, long permits) {
            semaphore.release(permits);
        }

        @Override
        public long availablePermits() {
            return semaphore.availablePermits();
        }

        @Override
        public int queueLength() {
            return semaphore.queueLength();
        }
    }
}
