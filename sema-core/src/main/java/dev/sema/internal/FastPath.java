package dev.sema.internal;

import dev.sema.Permit;

/**
 * An engine whose uncontended acquire can be tried on its own, with nothing reported when it does not apply:
 * for the non-blocking modules, which try it before they make an asynchronous request, so that a request
 * granted at once costs what a synchronous {@code tryAcquire} costs (no future, and a {@link Permit} the JIT
 * can keep off the heap), and a request that must wait is reported once, as the request it then makes.
 *
 * <p>{@code Semaphore.tryAcquire} is not that: a refusal ends the request, and is reported to the listeners
 * as {@code UNAVAILABLE}; here a refusal is no request at all.
 */
public interface FastPath {

    /**
     * Takes the permits if the engine's lock-free fast path grants them now (permits free, nobody queued
     * where fairness requires it, open): then reported as granted, exactly as an acquire granted at once.
     * Otherwise changes nothing, reports nothing and returns {@code null}: the caller makes its request the
     * ordinary way, which also reports a closed semaphore.
     *
     * @param permits the request, checked as every acquire checks it
     * @return the permit, or {@code null} if the fast path does not apply now
     * @throws IllegalArgumentException if {@code permits} is out of range, as the acquires throw it
     */
    Permit tryFastPath(long permits);
}
