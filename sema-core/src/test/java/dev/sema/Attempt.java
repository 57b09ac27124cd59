package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One call under test: a blocking call running on its own thread, or an async call's future. Either
 * way {@link #outcome} ends with what the call returned or threw.
 *
 * @param <T> what the call returns
 */
final class Attempt<T> {
    final String label;
    /** The thread of a blocking call, else null. */
    final Thread thread;
    /** The future an async call returned, else null. */
    final CompletableFuture<T> future;
    /** Completes with the call's result or failure. */
    final CompletableFuture<T> outcome;
    /** For a blocking call: the thread's interrupt status when the call returned or threw. */
    private final AtomicBoolean interruptedAfter;

    private Attempt(String label, Thread thread, CompletableFuture<T> future, CompletableFuture<T> outcome,
            AtomicBoolean interruptedAfter) {
        this.label = label;
        this.thread = thread;
        this.future = future;
        this.outcome = outcome;
        this.interruptedAfter = interruptedAfter;
    }

    static <T> Attempt<T> async(String label, CompletableFuture<T> future) {
        return new Attempt<>(label, null, future, future, new AtomicBoolean());
    }

    static <T> Attempt<T> blocking(String label, boolean virtual, BlockingCall<T> call) {
        CompletableFuture<T> outcome = new CompletableFuture<>();
        AtomicBoolean interrupted = new AtomicBoolean();
        Runnable body = () -> {
            T value;
            try {
                value = call.call();
            } catch (Throwable t) {
                interrupted.set(Thread.currentThread().isInterrupted());
                outcome.completeExceptionally(t);
                return;
            }
            interrupted.set(Thread.currentThread().isInterrupted());
            outcome.complete(value);
        };
        Thread t = virtual ? Thread.ofVirtual().name(label).unstarted(body)
                : Thread.ofPlatform().name(label).daemon(true).unstarted(body);
        t.start();
        return new Attempt<>(label, t, null, outcome, interrupted);
    }

    /** For a blocking call that ended: whether its thread's interrupt status was set at the end. */
    boolean interruptedAfter() {
        assertThat(outcome).as(label).isDone();
        return interruptedAfter.get();
    }

    boolean isBlocking() {
        return thread != null;
    }

    boolean isDone() {
        return outcome.isDone();
    }

    /** Gives up the way this kind of caller does: interrupts the thread, or cancels the future. */
    void giveUp() {
        if (thread != null) {
            thread.interrupt();
        } else {
            future.cancel(false);
        }
    }

    /** Waits for the call to succeed and returns its result. */
    T join() {
        try {
            return outcome.get(Waiting.PATIENCE.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError(label + " failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException | TimeoutException | CancellationException e) {
            throw new AssertionError(label + " did not succeed in time", e);
        }
    }

    /** Waits for the call to fail and returns what it threw (or failed its future with). */
    Throwable failure() {
        try {
            T value = outcome.get(Waiting.PATIENCE.toNanos(), TimeUnit.NANOSECONDS);
            throw new AssertionError(label + " succeeded with " + value + " but was expected to fail");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (CancellationException e) {
            return e;
        } catch (InterruptedException | TimeoutException e) {
            throw new AssertionError(label + " did not end in time", e);
        }
    }

    /** Asserts the call has not ended (for blocking calls, prefer the semaphore's own counts). */
    void assertPending() {
        assertThat(outcome).as(label).isNotDone();
    }

    /** Waits for a blocking call's thread to end. */
    void joinThread() throws InterruptedException {
        if (thread != null) {
            assertThat(thread.join(Waiting.PATIENCE)).as(label + " thread ended").isTrue();
        }
    }

    @Override
    public String toString() {
        return label;
    }

    /** A blocking call that may throw anything. */
    @FunctionalInterface
    interface BlockingCall<T> {
        T call() throws Exception;
    }
}
