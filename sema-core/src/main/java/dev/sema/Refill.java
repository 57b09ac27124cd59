package dev.sema;

import dev.sema.internal.Timeouts;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Raises a semaphore's limit by a fixed amount every period, up to its ceiling, on the shared
 * {@link Scheduler}. Holds the semaphore weakly and stops itself once the semaphore is closed or
 * collected, so a forgotten semaphore costs nothing and keeps no thread alive.
 */
final class Refill implements Runnable {
    private final WeakReference<LocalSemaphore> semaphore;
    private final long permits;
    private volatile ScheduledFuture<?> task;

    private Refill(LocalSemaphore semaphore, long permits) {
        this.semaphore = new WeakReference<>(semaphore);
        this.permits = permits;
    }

    static ScheduledFuture<?> start(LocalSemaphore semaphore, long permits, Duration period) {
        long nanos = Timeouts.toNanos(period);
        Refill refill = new Refill(semaphore, permits);
        ScheduledFuture<?> t = Scheduler.INSTANCE.scheduleAtFixedRate(refill, nanos, nanos, TimeUnit.NANOSECONDS);
        refill.task = t;
        return t;
    }

    @Override
    public void run() {
        LocalSemaphore s = semaphore.get();
        if (s == null || s.isClosed()) {
            ScheduledFuture<?> t = task;
            if (t != null) {
                t.cancel(false);
            }
            return;
        }
        s.addPermits(permits); // serves waiters the new permits suffice for, at once
    }
}
