/**
 * Sema on Redis: the weighted FIFO semaphore of {@code dev.sema}, shared by many processes through
 * Redis, with leases, fencing tokens and targeted wake-ups.
 *
 * <p>Start with {@link dev.sema.redis.RedisSemaphores#connect(String)}, or
 * {@link dev.sema.redis.RedisSemaphores#connectCluster(String)} for Redis Cluster.
 */
module dev.sema.redis {
    requires transitive dev.sema;
    requires transitive lettuce.core;

    exports dev.sema.redis;
}
