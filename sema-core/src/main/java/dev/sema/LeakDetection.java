package dev.sema;

/**
 * Whether a {@link Semaphore} notices {@link Permit}s that become unreachable while still holding
 * permits: the worst semaphore bug, a permit never released, then degrades into a warning instead of a
 * slow deadlock. A detected leak is logged through {@link System.Logger} (logger {@code dev.sema},
 * level {@code WARNING}) naming the semaphore and the count, and its permits are returned to the
 * semaphore. Detection runs when the garbage collector finds the Permit unreachable, so it comes late
 * and is a safety net, not a substitute for try-with-resources.
 */
public enum LeakDetection {
    /** No tracking; nothing is added to acquire or release. The default. */
    OFF,
    /**
     * Every Permit is tracked (one registration with a {@link java.lang.ref.Cleaner} per acquire), and
     * the acquiring stack is recorded for one acquire in 128, so most reports say where a leaked Permit
     * came from once a leak repeats. Meant for production.
     */
    SAMPLED,
    /** Every Permit is tracked with the stack where it was acquired. Costly; meant for tests. */
    PARANOID
}
