package dev.sema.grpc;

import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/** How a call that got no permit is described: one wording for both interceptors. */
final class Refusals {
    private Refusals() {
    }

    /**
     * Why {@code semaphore} gave no permit for a call.
     *
     * @param cause what its acquire failed with; {@code null}: a try found none free
     * @param waited how long the call waited, or {@code null} if it did not wait
     */
    static String describe(Semaphore semaphore, Throwable cause, Duration waited) {
        Throwable t = unwrap(cause);
        String why;
        if (t == null) {
            why = "none free";
        } else if (t instanceof TimeoutException) {
            why = "none within " + (waited == null ? "the wait" : millis(waited));
        } else if (t instanceof SemaphoreClosedException) {
            why = "it is closed";
        } else {
            why = t.getMessage() == null ? t.getClass().getName() : t.getMessage();
        }
        return "no permit of semaphore '" + semaphore.name() + "' for the call (" + why + ")";
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static String millis(Duration d) {
        return d.toMillis() + " ms";
    }

    /** {@code maxWait} minus what passed since {@code startNanos}, not below zero. */
    static Duration remaining(Duration maxWait, long startNanos) {
        long left = maxWait.toNanos() - (System.nanoTime() - startNanos);
        return Duration.ofNanos(Math.max(0, left));
    }
}
