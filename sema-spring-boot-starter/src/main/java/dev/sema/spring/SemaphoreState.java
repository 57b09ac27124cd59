package dev.sema.spring;

import dev.sema.Semaphore;
import dev.sema.internal.StateSource;
import org.springframework.util.ClassUtils;

/**
 * A semaphore's counts, read together: for a Redis semaphore with one round trip ({@link StateSource}),
 * so that they come from one moment; and whether it is {@code local} or {@code redis}.
 *
 * @param kind {@code local} or {@code redis}
 * @param permits the limit
 * @param maxPermits the ceiling
 * @param available {@code permits - held}, negative after the limit was lowered below what is held
 * @param queued waiters now queued
 * @param closed whether it is closed (for a Redis semaphore: in Redis, or this process's participation)
 */
record SemaphoreState(String kind, long permits, long maxPermits, long available, int queued, boolean closed) {
    private static final boolean REDIS_PRESENT = ClassUtils.isPresent("dev.sema.redis.RedisSemaphore",
            SemaphoreState.class.getClassLoader());

    /** Reads the counts now: one round trip for a Redis semaphore. */
    static SemaphoreState read(Semaphore s) {
        String kind = kind(s);
        if (s instanceof StateSource source) {
            StateSource.State st = source.state();
            return new SemaphoreState(kind, st.limit(), st.max(), st.available(), st.queued(), st.closed());
        }
        return new SemaphoreState(kind, s.permits(), s.maxPermits(), s.availablePermits(), s.queueLength(),
                s.isClosed());
    }

    static String kind(Semaphore s) {
        return REDIS_PRESENT && RedisKind.isRedis(s) ? "redis" : "local";
    }

    static boolean isRedis(Semaphore s) {
        return REDIS_PRESENT && RedisKind.isRedis(s);
    }

    /** Loaded only when sema-redis is on the class path. */
    private static final class RedisKind {
        static boolean isRedis(Semaphore s) {
            return s instanceof dev.sema.redis.RedisSemaphore;
        }
    }
}
