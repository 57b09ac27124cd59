package dev.sema;

import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The fail-fast record of one {@link Parallel} run: why it stopped (first reason wins), the first
 * failure, and the later genuine ones. Thread-safe; written by the calls and the coordinator, read by
 * the coordinator once every call has ended.
 */
final class FailFast {
    static final int RUNNING = 0;
    /** A call, the iterator, a weight or an acquire failed. */
    static final int FAILED = 1;
    /** The caller of a blocking form was interrupted. */
    static final int INTERRUPTED = 2;
    /** The future returned by mapAsync was completed from outside. */
    static final int CANCELLED = 3;

    /** How deep a cause chain is searched for a report of our own cancellation. */
    private static final int MAX_CAUSE_DEPTH = 8;

    private final AtomicInteger reason = new AtomicInteger(RUNNING);
    private final AtomicReference<Throwable> first = new AtomicReference<>();
    private final ConcurrentLinkedQueue<Throwable> later = new ConcurrentLinkedQueue<>();

    boolean stopped() {
        return reason.get() != RUNNING;
    }

    int reason() {
        return reason.get();
    }

    /**
     * Stops the run for {@code why} unless it is stopped already.
     *
     * @return true if this call stopped it: the caller must then cancel what is in flight
     */
    boolean stop(int why) {
        return reason.compareAndSet(RUNNING, why);
    }

    /**
     * Records a failure. Once the run is stopped, a failure that merely reports our own cancellation
     * (see {@link #reportsCancellation}) is dropped.
     *
     * @return true if this failure stopped the run: the caller must then cancel what is in flight
     */
    boolean fail(Throwable failure) {
        if (stopped() && reportsCancellation(failure)) {
            return false;
        }
        if (first.compareAndSet(null, failure)) {
            return stop(FAILED);
        }
        later.add(failure);
        return false;
    }

    /**
     * Tells whether {@code failure}, or one of its first few causes, is what interrupting a thread or
     * cancelling a future makes blocking code throw.
     */
    static boolean reportsCancellation(Throwable failure) {
        Throwable t = failure;
        for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++) {
            if (t instanceof InterruptedException || t instanceof InterruptedIOException
                    || t instanceof ClosedByInterruptException || t instanceof CancellationException) {
                return true;
            }
            t = t.getCause();
        }
        return false;
    }

    /**
     * The exception to throw for a FAILED run: the first failure as it is when unchecked, else wrapped
     * in a {@link CompletionException}; later genuine failures attached as suppressed. Call once, after
     * every call has ended.
     */
    Throwable failure() {
        Throwable f = first.get();
        Throwable thrown = f instanceof RuntimeException || f instanceof Error ? f : new CompletionException(f);
        attachLaterTo(thrown);
        return thrown;
    }

    /** For an INTERRUPTED run: attaches every genuine failure, the first included, to {@code thrown}. */
    void attachAllTo(Throwable thrown) {
        Throwable f = first.get();
        if (f != null && f != thrown) {
            thrown.addSuppressed(f);
        }
        attachLaterTo(thrown);
    }

    private void attachLaterTo(Throwable thrown) {
        Throwable f = first.get();
        for (Throwable t; (t = later.poll()) != null; ) {
            // Calls may throw one shared instance: never suppress an exception in itself, nor report the
            // first failure twice.
            if (t != thrown && t != f) {
                thrown.addSuppressed(t);
            }
        }
    }
}
