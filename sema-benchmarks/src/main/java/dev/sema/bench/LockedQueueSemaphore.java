package dev.sema.bench;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A weighted FIFO async semaphore written the way projects commonly write one by hand: a lock, a count
 * and an {@link ArrayDeque} of (permits, future) pairs; the futures are completed after the lock is
 * released. It has no cancellation, timeouts or resizing: it is the baseline that Sema's async path is
 * meant to beat, not a usable library class.
 *
 * <p>Completing a future runs its continuations on the releasing thread, so a continuation that releases
 * again recurses into {@link #release}; the benchmarks keep their continuations from releasing inline
 * (for every implementation alike), so this never matters there.
 */
public final class LockedQueueSemaphore {
    private record Request(long permits, CompletableFuture<Void> future) {
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Request> queue = new ArrayDeque<>();
    private long available;

    /**
     * Creates a semaphore with {@code permits} free.
     *
     * @param permits the permits free at first
     */
    public LockedQueueSemaphore(long permits) {
        this.available = permits;
    }

    /**
     * Requests {@code permits}: granted at once if nobody is queued and enough are free, else queued.
     *
     * @param permits how many permits to request
     * @return a future completed once the permits are held
     */
    public CompletableFuture<Void> acquire(long permits) {
        lock.lock();
        try {
            if (queue.isEmpty() && available >= permits) {
                available -= permits;
                return CompletableFuture.completedFuture(null);
            }
            Request request = new Request(permits, new CompletableFuture<>());
            queue.addLast(request);
            return request.future();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Gives back {@code permits} and grants the queued requests that now fit, in order.
     *
     * @param permits how many permits to give back
     */
    public void release(long permits) {
        List<CompletableFuture<Void>> granted = null;
        lock.lock();
        try {
            available += permits;
            Request head;
            while ((head = queue.peekFirst()) != null && head.permits() <= available) {
                queue.pollFirst();
                available -= head.permits();
                if (granted == null) {
                    granted = new ArrayList<>();
                }
                granted.add(head.future());
            }
        } finally {
            lock.unlock();
        }
        if (granted != null) {
            for (CompletableFuture<Void> future : granted) {
                future.complete(null);
            }
        }
    }

    /**
     * The permits free now.
     *
     * @return the permits free now
     */
    public long availablePermits() {
        lock.lock();
        try {
            return available;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The requests queued now.
     *
     * @return the number of queued requests
     */
    public int queueLength() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }
}
