package dev.sema;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/** Time arithmetic that never overflows, and async timeouts on the shared {@link Scheduler}. */
final class Timeouts {
    private Timeouts() {
    }

    /** The duration in nanoseconds, negative ones as 0, and Long.MAX_VALUE for "longer than ~292 years". */
    static long toNanos(Duration timeout) {
        if (timeout.isNegative()) {
            return 0;
        }
        try {
            return timeout.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }

    /**
     * Fails {@code future} with a timeout after {@code nanos}, unless it completes first, in which case
     * the timer entry is removed at once (so many short-lived waits leave nothing behind).
     */
    static void failAfter(CompletableFuture<?> future, long nanos, Supplier<TimeoutException> timeout) {
        ScheduledFuture<?> task = Scheduler.INSTANCE.schedule(
                () -> future.completeExceptionally(timeout.get()), nanos, TimeUnit.NANOSECONDS);
        future.whenComplete((value, failure) -> task.cancel(false));
    }
}
