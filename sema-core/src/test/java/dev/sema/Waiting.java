package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import java.util.concurrent.locks.LockSupport;

/** Bounded waits for observable states, and the invariant check every scenario ends with. */
final class Waiting {
    /** How long a test waits for a state it expects; far longer than any healthy run needs. */
    static final Duration PATIENCE = Duration.ofSeconds(20);

    private Waiting() {
    }

    /** Waits until {@code condition} holds, failing after {@link #PATIENCE}. */
    static void until(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("gave up waiting until " + what);
            }
            LockSupport.parkNanos(50_000);
        }
    }

    /** Waits until exactly {@code n} waiters are queued on {@code s}. */
    static void untilQueued(Semaphore s, int n) {
        until("queueLength() == " + n + " on " + s, () -> s.queueLength() == n);
    }

    /** Waits until {@code t} is parked (WAITING or TIMED_WAITING). */
    static void untilParked(Thread t) {
        until(t.getName() + " is parked", () -> {
            Thread.State st = t.getState();
            return st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING;
        });
    }

    /**
     * Waits for {@code f} to succeed and returns its value, failing after {@link #PATIENCE}. Unlike
     * {@code join()}, this never hangs a test (a timeout cannot interrupt {@code join()}).
     */
    static <T> T result(CompletableFuture<T> f) {
        return Attempt.async("future", f).join();
    }

    /** Asserts the implementation's invariants I1-I5 and its queue bookkeeping. */
    static void checkInvariants(Semaphore s) {
        assertThat(s).isInstanceOf(LocalSemaphore.class);
        ((LocalSemaphore) s).checkInvariants();
    }
}
