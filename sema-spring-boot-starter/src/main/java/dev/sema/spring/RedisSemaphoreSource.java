package dev.sema.spring;

import dev.sema.Semaphore;

/**
 * Opens the {@code redis: true} semaphores: a bean only when sema-redis is on the class path, so that the
 * registry names no Redis type.
 */
interface RedisSemaphoreSource {

    /**
     * Opens (creating it in Redis if it does not exist) the semaphore {@code name}.
     *
     * @param name the semaphore's name
     * @param config its properties
     * @param permits its {@code permits}, checked
     * @param maxPermits its {@code max-permits} (or {@code permits}), checked
     * @param settings for the messages
     * @return the handle
     * @throws SemaConfigurationException if the properties do not fit a Redis semaphore, there is no Redis to
     *         keep it in, or it cannot be opened
     */
    Semaphore open(String name, SemaProperties.SemaphoreProperties config, long permits, long maxPermits,
            Settings settings);
}
