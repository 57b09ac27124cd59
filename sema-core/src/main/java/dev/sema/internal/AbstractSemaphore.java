package dev.sema.internal;

import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;

/**
 * What every engine of {@link Semaphore} shares: its name, its listeners, and the one place where an
 * acquire request's end is reported ({@link #ended}). Not an API: for the engines of Sema's own modules.
 */
public abstract class AbstractSemaphore implements Semaphore {
    /** The name, shown in messages. */
    protected final String name;
    /** The listeners; see {@link Listeners} for their rules. */
    protected final Listeners listeners;

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
