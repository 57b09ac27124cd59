package dev.sema;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The calls a test started. {@link #close()} (from {@code @AfterEach}) makes sure no blocked thread
 * outlives its test: a test that leaves one behind fails.
 */
final class Attempts implements AutoCloseable {
    private final List<Attempt<?>> started = new ArrayList<>();
    private int ids;

    int nextId() {
        return ++ids;
    }

    <T> Attempt<T> blocking(String label, boolean virtual, Attempt.BlockingCall<T> call) {
        return add(Attempt.blocking(label, virtual, call));
    }

    <T> Attempt<T> blocking(String label, Attempt.BlockingCall<T> call) {
        return blocking(label, false, call);
    }

    <T> Attempt<T> async(String label, CompletableFuture<T> future) {
        return add(Attempt.async(label, future));
    }

    /** Starts a call that must queue on {@code s}, and waits until it has joined the queue. */
    <T> Attempt<T> queued(Semaphore s, Supplier<Attempt<T>> start) {
        int before = s.queueLength();
        Attempt<T> a = start.get();
        Waiting.until(a + " queued on " + s, () -> s.queueLength() > before || a.isDone());
        if (a.isDone()) {
            throw new AssertionError(a + " was expected to queue but ended: " + a.outcome);
        }
        return a;
    }

    private <T> Attempt<T> add(Attempt<T> a) {
        started.add(a);
        return a;
    }

    @Override
    public void close() throws InterruptedException {
        List<String> leftBehind = new ArrayList<>();
        for (Attempt<?> a : started) {
            if (a.thread != null && !a.thread.join(Duration.ofSeconds(1))) {
                leftBehind.add(a.label);
                a.thread.interrupt();
                a.thread.join(Waiting.PATIENCE);
            }
        }
        if (!leftBehind.isEmpty()) {
            throw new AssertionError("test left blocked threads behind: " + leftBehind);
        }
    }
}
