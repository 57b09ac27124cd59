package dev.sema.internal;

import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import java.time.Duration;
import java.util.Objects;

/**
 * What every engine of {@link Semaphore} shares: its name, its listeners, the one place where an
 * acquire request's end is reported ({@link #ended}), the prologue of a blocking acquire, and the two
 * {@code close} calls with the cause they leave. Not an API: for the engines of Sema's own modules.
 *
 * <p>Rules kept here:
 * <ul>
 * <li>A1: an acquire called on an interrupted thread throws {@code InterruptedException} (the status
 *     cleared) before anything else happens, and its request ends {@code INTERRUPTED}.</li>
 * <li>A2: {@code close()} is {@code close} without a cause; {@code close(null)} is refused. The cause kept
 *     is that of the close that closed the semaphore: the engine calls {@link #keepCloseCause} for that
 *     close only, before it publishes that it is closed, so whoever sees it closed sees that cause.</li>
 * </ul>
 */
public abstract class AbstractSemaphore implements Semaphore {
    /** The name, shown in messages. */
    protected final String name;
    /** The listeners; see {@link Listeners} for their rules. */
    protected final Listeners listeners;
    /** The cause of the close that closed it, or null (A2): written once, before the engine's closed flag. */
    private volatile Throwable closeCause;

    /**
     * For the engines.
     *
     * @param name the semaphore's name
     */
    @SuppressWarnings("this-escape") // Listeners only keeps the reference, to pass it to the listeners later
    protected AbstractSemaphore(String name) {
        this.name = name;
        this.listeners = new Listeners(this);
    }

    /**
     * For the engines: a partition, whose listeners are its parent's (see {@link Listeners}, R4).
     *
     * @param name the partition's name
     * @param parent the parent's listeners
     */
    @SuppressWarnings("this-escape") // Listeners only keeps the reference, to pass it to the listeners later
    protected AbstractSemaphore(String name, Listeners parent) {
        this.name = name;
        this.listeners = new Listeners(this, parent);
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final void addListener(SemaphoreListener listener) {
        listeners.add(listener);
    }

    @Override
    public final boolean removeListener(SemaphoreListener listener) {
        return listeners.remove(listener);
    }

    /**
     * Reports the end of a request that did not queue (it waited 0). Every request that ends is reported
     * exactly once, here or by {@link #endedAfterQueueing}.
     *
     * @param outcome how it ended
     * @param permits the permits requested
     */
    protected final void ended(Outcome outcome, long permits) {
        if (listeners.active()) {
            listeners.ended(outcome, permits, 0, null);
        }
    }

    /**
     * Reports the end of a request that queued, with its wait.
     *
     * @param outcome how it ended
     * @param permits the permits requested
     * @param queuedAt {@link Listeners#now()} when it queued
     * @param jfr its JFR wait, or null
     */
    protected final void endedAfterQueueing(Outcome outcome, long permits, long queuedAt, WaitEvent jfr) {
        if (jfr != null || listeners.active()) {
            listeners.ended(outcome, permits, Listeners.since(queuedAt), jfr);
        }
    }

    /**
     * The prologue of {@code acquire(permits)} (A1).
     *
     * @param permits the permits requested
     * @throws InterruptedException if the thread was interrupted
     */
    protected final void acquireNotInterrupted(long permits) throws InterruptedException {
        if (Thread.interrupted()) {
            ended(Outcome.INTERRUPTED, permits);
            throw Failures.interruptedBefore(name, "acquire(" + permits + ")");
        }
    }

    /**
     * The prologue of {@code acquire(permits, timeout)} (A1).
     *
     * @param permits the permits requested
     * @param timeout the timeout, as messages show it
     * @throws InterruptedException if the thread was interrupted
     */
    protected final void acquireNotInterrupted(long permits, Duration timeout) throws InterruptedException {
        if (Thread.interrupted()) {
            ended(Outcome.INTERRUPTED, permits);
            throw Failures.interruptedBefore(name, "acquire(" + permits + ", " + timeout + ")");
        }
    }

    @Override
    public final void close() {
        closeWith(null);
    }

    @Override
    public final void close(Throwable cause) {
        closeWith(Objects.requireNonNull(cause, "cause"));
    }

    /**
     * Closes the semaphore (A2).
     *
     * @param cause the cause given to {@code close(cause)}, or null for {@code close()}
     */
    protected abstract void closeWith(Throwable cause);

    /**
     * Keeps the cause of the close that closes the semaphore (A2).
     *
     * @param cause the cause, or null
     */
    protected final void keepCloseCause(Throwable cause) {
        closeCause = cause;
    }

    /**
     * The failure of a request the closed semaphore refuses, with the cause it was closed with, if any.
     *
     * @param what the call, as messages show it
     * @return the exception
     */
    public final SemaphoreClosedException closedFailure(String what) { // public: the Redis engine's heartbeat fails waiters too
        return Failures.closed(name, what, closeCause);
    }

    /**
     * The prologue of a blocking call: throws, clearing the interrupt status, if the thread is interrupted.
     *
     * @param what the call, as messages show it
     * @throws InterruptedException if the thread was interrupted
     */
    protected final void notInterrupted(String what) throws InterruptedException {
        if (Thread.interrupted()) {
            throw Failures.interruptedBefore(name, what);
        }
    }

    /**
     * How messages name this semaphore.
     *
     * @return {@code semaphore 'name'}
     */
    public final String describe() {
        return Failures.describe(name);
    }
}
