package dev.sema.bench;

import java.util.concurrent.CompletionStage;

/**
 * The async side of an implementation under test. {@link #acquire} returns a stage that completes
 * with a <em>grant</em> once the permits are held (Sema's {@code Permit}; {@code null} for the
 * implementations that release by count), and {@link #release} gives that grant back. Benchmarks attach
 * their own continuations to the stage, so every implementation pays for the same callbacks.
 */
public interface AsyncLimiter {
    /**
     * Requests permits.
     *
     * @param permits how many permits to request
     * @return a stage completed with the grant when the permits are held
     */
    CompletionStage<?> acquire(long permits);

    /**
     * Gives back permits obtained through {@link #acquire}.
     *
     * @param grant the value the stage completed with
     * @param permits how many permits the grant holds
     */
    void release(Object grant, long permits);

    /**
     * The permits free now, for checks between iterations.
     *
     * @return the permits free now
     */
    long availablePermits();

    /**
     * The requests queued now, for checks between iterations.
     *
     * @return the number of queued requests
     */
    int queueLength();
}
