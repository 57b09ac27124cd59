package dev.sema.spring;

import dev.sema.Semaphore;

/**
 * Opens the {@code redis: true} semaphores: a bean only when sema-redis is on the class path, so that the
 * registry names no Redis type.
 */
interface RedisSemaphoreSource {

    /**
     * The handle on the semaphore {@code name}: opened in Redis now (created there if it does not exist) when Redis
     * can be reached, else opened in the background once it is, refusing every request until then.
     *
     * @param name the semaphore's name
     * @param config its properties
     * @param permits its {@code permits}, checked
     * @param maxPermits its {@code max-permits} (or {@code permits}), checked
     * @param partitions its partitions, checked ({@link ConfiguredPartitions#NONE} for none)
     * @param settings for the messages
     * @return the handle
     * @throws SemaConfigurationException if the properties do not fit a Redis semaphore, there is no Redis to
     *         keep it in, or it cannot be opened now and {@code sema.redis.fail-fast} is set
     */
    Semaphore open(String name, SemaProperties.SemaphoreProperties config, long permits, long maxPermits,
            ConfiguredPartitions partitions, Settings settings);

    /**
     * Runs {@code action} once the semaphore that {@link #open} returned is open in Redis: now, on this thread,
     * if it is (a failure is then thrown), else on the thread that opens it (a failure is then logged).
     *
     * @param semaphore a handle returned by {@link #open}
     * @param action what to do then
     */
    void whenOpen(Semaphore semaphore, Runnable action);
}
