package dev.sema;

/**
 * How a {@link Semaphore} orders requests that compete for permits.
 */
public enum Fairness {
    /**
     * Strict arrival order: the head waiter is served first, nobody overtakes it, and a new request
     * takes permits at once only when nobody is queued. A large request is never starved by small ones.
     */
    FIFO,
    /**
     * A new request takes permits at once whenever enough are free, even past queued waiters; the
     * queue itself is still served in arrival order. Higher throughput, no starvation-freedom
     * guarantee for queued requests.
     */
    BARGING
}
