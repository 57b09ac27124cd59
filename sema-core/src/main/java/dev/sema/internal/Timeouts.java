package dev.sema.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Timeout arithmetic that never overflows, and async timeouts that leave no timer entry behind. */
public final class Timeouts {
    /** Stands for "no deadline": a timeout longer than about 292 years. */
    public static final long FOREVER = Long.MAX_VALUE;

    private Timeouts() {
    }

    /**
     * The timeout in nanoseconds: negative ones as 0, and {@link #FOREVER} for ones too long for a
     * {@code long}.
     *
     * @param timeout the timeout given
     * @return nanoseconds, {@code 0..FOREVER}
     */
    public static long toNanos(Duration timeout) {
        if (timeout.isNegative()) {
            return 0;
        }
        try {
            return timeout.toNanos();
        } catch (ArithmeticException tooLong) {
            return FOREVER;
        }
    }

    /**
     * A {@code System.nanoTime()} deadline {@code nanos} from now, capped so that {@code deadline - now}
     * never overflows while the JVM runs.
     *
     * @param nanos from {@link #toNanos}
     * @return the deadline
     */
    public static long deadline(long nanos) {
        return System.nanoTime() + Math.min(nanos, Long.MAX_VALUE / 4);
    }

    /**
     * Fails {@code future} with {@code failure} after {@code nanos}, unless it completes first, in which
     * case the timer entry is removed at once (so many short waits leave nothing behind).
     *
     * @param future the future to fail
     * @param nanos the delay
     * @param failure the failure, built only when the delay runs out
     * @param timer the timer to schedule on
     * @param completer runs the failing completion (the timer thread itself, or a hop off it)
     */
    public static void failAfter(CompletableFuture<?> future, long nanos, Supplier<? extends Throwable> failure,
            ScheduledExecutorService timer, java.util.concurrent.Executor completer) {
        ScheduledFuture<?> task = timer.schedule(
                () -> completer.execute(() -> future.completeExceptionally(failure.get())), nanos, TimeUnit.NANOSECONDS);
        future.whenComplete((value, error) -> unschedule(task));
    }

    /**
     * Removes {@code task} from its timer's queue (the timer's own lock, held for a heap update): a named method,
     * so that the BlockHound integrations can allow that short wait ({@link LockSections}).
     */
    static void unschedule(ScheduledFuture<?> task) {
        task.cancel(false);
    }
}
