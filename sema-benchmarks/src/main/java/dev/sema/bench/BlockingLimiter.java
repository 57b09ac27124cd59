package dev.sema.bench;

/**
 * The blocking side of an implementation under test: acquire, run a section, release, written the way
 * that implementation is normally used (try-with-resources for Sema, try/finally for the JDK, a joined
 * future for the async-only implementations). Every benchmark calls only this, so every implementation
 * does the same work.
 */
public interface BlockingLimiter {
    /**
     * Acquires {@code permits}, runs {@code section}, and releases the permits, also if it throws.
     *
     * @param permits how many permits to hold while the section runs
     * @param section the work to run under the permits
     * @throws InterruptedException if interrupted while waiting or in the section
     */
    void guarded(long permits, Section section) throws InterruptedException;

    /**
     * Acquires {@code permits} and hands the grant to the caller, who keeps it (in a field, a request
     * object, a return value) and gives it back later with {@link #give}: the grant escapes, so the JIT
     * cannot remove a grant object. Implementations that release by count return a shared token.
     *
     * @param permits how many permits to take
     * @return the grant to give back
     * @throws InterruptedException if interrupted while waiting
     */
    Object take(long permits) throws InterruptedException;

    /**
     * Gives back a grant obtained through {@link #take}.
     *
     * @param grant what {@link #take} returned
     * @param permits how many permits it holds
     */
    void give(Object grant, long permits);

    /**
     * The permits free now, for checks between iterations.
     *
     * @return the permits free now
     */
    long availablePermits();
}
