package dev.sema.spring;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import dev.sema.internal.Partitioned;
import dev.sema.internal.Partitioned.PartitionState;
import dev.sema.internal.StateSource;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.util.ClassUtils;

/**
 * A semaphore's counts, read together: for a Redis semaphore with one round trip ({@link StateSource}),
 * so that they come from one moment; and whether it is {@code local} or {@code redis}. {@link #readAll} reads
 * many at once for the actuator endpoint and the health contributor, with one rule for a Redis that does not
 * answer.
 *
 * @param kind {@code local} or {@code redis}
 * @param permits the limit
 * @param maxPermits the ceiling
 * @param available {@code permits - held}, negative after the limit was lowered below what is held
 * @param queued waiters now queued
 * @param closed whether it is closed (for a Redis semaphore: in Redis, or this process's participation)
 * @param partitions each partition's counts, in priority order; empty when it has none
 */
record SemaphoreState(String kind, long permits, long maxPermits, long available, int queued, boolean closed,
        List<PartitionState> partitions) {
    /** How long {@link #readAll} waits for the Redis semaphores' replies, in all. */
    static final Duration READ_TIMEOUT = Duration.ofSeconds(3);

    private static final boolean REDIS_PRESENT = ClassUtils.isPresent("dev.sema.redis.RedisSemaphore",
            SemaphoreState.class.getClassLoader());

    /** What reading one semaphore gave: its state, or why it has none. */
    sealed interface Reading permits Readable, Unreadable {
    }

    /**
     * A semaphore that could be read.
     *
     * @param state the counts read
     */
    record Readable(SemaphoreState state) implements Reading {
    }

    /**
     * A semaphore that could not be read.
     *
     * @param kind {@code local} or {@code redis}
     * @param problem the failure's class and (redacted) message, or that no reply came in time
     */
    record Unreadable(String kind, String problem) implements Reading {
    }

    /**
     * Reads every semaphore: the local ones on this thread, the Redis ones in parallel, one round trip each on
     * a virtual thread of its own, waiting {@link #READ_TIMEOUT} for them in all. A stopped Redis fails each
     * read at once (its client refuses commands while disconnected), but one that stalls holds a read for the
     * client's command timeout: the caller (a health probe, an operator's request) gets an answer before that,
     * and a read that outlives it ends by itself, within that timeout.
     *
     * @param semaphores the semaphores by name
     * @return what each gave, in the order of {@code semaphores}
     */
    static Map<String, Reading> readAll(Map<String, Semaphore> semaphores) {
        Map<String, CompletableFuture<SemaphoreState>> reads = new LinkedHashMap<>();
        for (Map.Entry<String, Semaphore> e : semaphores.entrySet()) {
            Semaphore s = e.getValue();
            CompletableFuture<SemaphoreState> read = new CompletableFuture<>();
            if (isRedis(s)) {
                Thread.ofVirtual().name("sema-read-" + e.getKey()).start(() -> readInto(read, s));
            } else {
                readInto(read, s); // no I/O: not worth a thread
            }
            reads.put(e.getKey(), read);
        }
        Map<String, Reading> readings = new LinkedHashMap<>();
        long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
        reads.forEach((name, read) -> readings.put(name, reading(semaphores.get(name), read, deadline)));
        return readings;
    }

    /**
     * Reads one semaphore as {@link #readAll} does.
     *
     * @param name its name, for its reading thread
     * @param s the semaphore
     * @return its state, or why it has none
     */
    static Reading readOne(String name, Semaphore s) {
        return readAll(Map.of(name, s)).get(name);
    }

    private static void readInto(CompletableFuture<SemaphoreState> read, Semaphore s) {
        try {
            read.complete(read(s));
        } catch (Throwable t) {
            read.completeExceptionally(t);
        }
    }

    private static Reading reading(Semaphore s, CompletableFuture<SemaphoreState> read, long deadline) {
        try {
            return new Readable(read.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
        } catch (ExecutionException e) {
            return new Unreadable(kind(s), describe(e.getCause() == null ? e : e.getCause()));
        } catch (TimeoutException e) {
            return new Unreadable(kind(s), "no reply within " + Durations.format(READ_TIMEOUT));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Unreadable(kind(s), "interrupted");
        }
    }

    /**
     * A failure as the endpoint and the health contributor show it: its class's simple name and its message,
     * with the password of any Redis URI in it redacted.
     *
     * @param failure the failure
     * @return {@code "RedisSemaphoreException: ..."}
     */
    static String describe(Throwable failure) {
        return failure.getClass().getSimpleName() + ": " + Settings.redacted(failure.getMessage());
    }

    /**
     * Reads the counts now: one round trip for a Redis semaphore, and one more for its partitions' counts when it
     * has partitions (read together, as {@link Partitioned#partitionStates()} reads them).
     */
    static SemaphoreState read(Semaphore s) {
        String kind = kind(s);
        if (s instanceof StateSource source) {
            StateSource.State st = source.state();
            return new SemaphoreState(kind, st.limit(), st.max(), st.available(), st.queued(), st.closed(),
                    partitions(s));
        }
        return new SemaphoreState(kind, s.permits(), s.maxPermits(), s.availablePermits(), s.queueLength(),
                s.isClosed(), partitions(s));
    }

    /** A partitioned semaphore's partitions' counts, taken at one moment. */
    private static List<PartitionState> partitions(Semaphore s) {
        // partitionNames() first: asking an unpartitioned Redis semaphore would cost a round trip for nothing.
        return s instanceof Partitioned p && !s.partitionNames().isEmpty() ? p.partitionStates() : List.of();
    }

    static String kind(Semaphore s) {
        return REDIS_PRESENT && RedisKind.isRedis(s) ? "redis" : "local";
    }

    static boolean isRedis(Semaphore s) {
        return REDIS_PRESENT && RedisKind.isRedis(s);
    }

    /** Whether {@code family} is a keyed family on Redis, as the starter builds them. */
    static boolean isRedis(KeyedSemaphore<?> family) {
        return REDIS_PRESENT && RedisKind.isRedis(family);
    }

    /**
     * Why a keyed family on Redis cannot serve yet (it is not open: Redis has not been reached), or {@code null} when
     * it can, or is local. Nothing is read: a family has no state of its own in Redis.
     */
    static String notOpen(KeyedSemaphore<?> family) {
        return REDIS_PRESENT ? RedisKind.notOpen(family) : null;
    }

    /** Loaded only when sema-redis is on the class path. */
    private static final class RedisKind {
        static boolean isRedis(Semaphore s) {
            return s instanceof dev.sema.redis.RedisSemaphore;
        }

        static boolean isRedis(KeyedSemaphore<?> family) {
            return family instanceof DeferredRedisKeyedSemaphore;
        }

        static String notOpen(KeyedSemaphore<?> family) {
            return family instanceof DeferredRedisKeyedSemaphore d ? d.notOpen() : null;
        }
    }
}
