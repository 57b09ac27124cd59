package dev.sema.spring;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;

/**
 * Opens the {@code redis: true} semaphores and keyed families: a bean only when sema-redis is on the class path, so that the
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
     * The handle on the keyed family {@code name} ({@code RedisSemaphores.keyed(name)}): built now when Redis can be
     * reached, else once it is, refusing every request until then; its keys are {@code String.valueOf(key)}.
     *
     * @param name the family's name
     * @param config its properties, checked but for what only a Redis family needs ({@code lease},
     *        {@code expire-when-idle}, a name Redis takes)
     * @param permits each key's limit, checked
     * @param maxKeys the most keys live in this process at once, checked
     * @param parent what every key's permits also hold as many of, or {@code null}
     * @param settings for the messages
     * @return the handle
     * @throws SemaConfigurationException if the properties do not fit a Redis family, there is no Redis to keep it
     *         in, or it cannot be opened now and {@code sema.redis.fail-fast} is set
     */
    KeyedSemaphore<Object> openKeyed(String name, SemaProperties.KeyedProperties config, long permits, int maxKeys,
            Semaphore parent, Settings settings);

    /**
     * Runs {@code action} once the semaphore that {@link #open} returned is open in Redis: now, on this thread,
     * if it is (a failure is then thrown), else on the thread that opens it (a failure is then logged).
     *
     * @param semaphore a handle returned by {@link #open}
     * @param action what to do then
     */
    void whenOpen(Semaphore semaphore, Runnable action);
}
