package dev.sema.spring;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.TooManyKeysException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.springframework.util.ClassUtils;

/**
 * Which failures of an acquire are refusals, answered as {@link PermitUnavailableException} (503 over HTTP, a
 * {@link WithPermits#fallback()}), rather than errors: one rule for {@code @WithPermits}, its asynchronous form and
 * the {@code sema.web} filter.
 *
 * <p>A refusal is no permit in time (a {@code tryAcquire} that found none, a {@link TimeoutException}), an
 * interrupted wait, a closed semaphore, a keyed family at its {@code maxKeys} ({@link TooManyKeysException}: a new
 * key is refused as a full semaphore refuses), or a Redis semaphore whose Redis cannot be reached
 * ({@code RedisSemaphoreException}: the service is as unavailable as when its permits are all taken).
 */
final class Refusals {
    private static final boolean REDIS_PRESENT = ClassUtils.isPresent("dev.sema.redis.RedisSemaphoreException",
            Refusals.class.getClassLoader());

    private Refusals() {
    }

    /**
     * The refusal that {@code failure} is, or {@code null} when it is not one.
     *
     * @param semaphore the semaphore's name
     * @param permits how many permits were asked for
     * @param startNanos when the request began ({@link System#nanoTime()})
     * @param failure what the acquire threw or failed its future with (wrapped or not)
     */
    static PermitUnavailableException of(String semaphore, long permits, long startNanos, Throwable failure) {
        Throwable t = unwrap(failure);
        if (t instanceof PermitUnavailableException p) {
            return p;
        }
        if (t instanceof TimeoutException || t instanceof InterruptedException || t instanceof SemaphoreClosedException
                || t instanceof TooManyKeysException || isRedisFailure(t)) {
            return refused(semaphore, permits, startNanos, t);
        }
        return null;
    }

    /** A refusal with {@code cause} ({@code null}: a {@code tryAcquire} found no permit). */
    static PermitUnavailableException refused(String semaphore, long permits, long startNanos, Throwable cause) {
        return new PermitUnavailableException(semaphore, permits,
                Duration.ofNanos(Math.max(0, System.nanoTime() - startNanos)), cause);
    }

    /**
     * {@code permits} of {@code semaphore}, waiting as {@code timeout} says, or the refusal.
     *
     * @param timeout {@code null}: as long as it takes; zero: not at all (a {@code tryAcquire}, so that a refusal is
     *        {@code UNAVAILABLE}, never a timeout, and so never a drop for an adaptive limit); else at most that long
     * @throws PermitUnavailableException if no permits came (after an interrupt, with the interrupt status set
     *         again)
     */
    static Permit acquire(Semaphore semaphore, long permits, Duration timeout) {
        long start = System.nanoTime();
        try {
            if (timeout == null) {
                return semaphore.acquire(permits);
            }
            if (timeout.isZero()) {
                Optional<Permit> permit = semaphore.tryAcquire(permits);
                if (permit.isEmpty()) {
                    throw refused(semaphore.name(), permits, start, null);
                }
                return permit.get();
            }
            return semaphore.acquire(permits, timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the caller learns of the interrupt from the flag
            throw refused(semaphore.name(), permits, start, e);
        } catch (TimeoutException | RuntimeException e) {
            PermitUnavailableException refusal = of(semaphore.name(), permits, start, e);
            if (refusal == null) {
                throw (RuntimeException) e; // not a refusal (a TimeoutException always is one)
            }
            throw refusal;
        }
    }

    /**
     * As {@link #acquire}, for an asynchronous caller: the semaphore's own future (which withdraws the request when
     * it is cancelled, and gives back a grant that races with that), or with a zero timeout one completed on the
     * calling thread by a {@code tryAcquire} (for a Redis semaphore, one round trip). A failure is mapped to the
     * refusal by the caller ({@link #of}); a zero timeout's refusal is one already.
     */
    static CompletableFuture<Permit> acquireAsync(Semaphore semaphore, long permits, Duration timeout) {
        if (timeout == null || !timeout.isZero()) {
            return timeout == null ? semaphore.acquireAsync(permits) : semaphore.acquireAsync(permits, timeout);
        }
        try {
            return CompletableFuture.completedFuture(acquire(semaphore, permits, timeout));
        } catch (PermitUnavailableException refusal) {
            return CompletableFuture.failedFuture(refusal);
        }
    }

    /** Whether {@code t} is a Redis semaphore's failure to reach Redis. */
    static boolean isRedisFailure(Throwable t) {
        return REDIS_PRESENT && RedisFailure.is(t);
    }

    static Throwable unwrap(Throwable t) {
        Throwable u = t;
        while ((u instanceof CompletionException || u instanceof ExecutionException) && u.getCause() != null) {
            u = u.getCause();
        }
        return u;
    }

    /** Loaded only when sema-redis is on the class path. */
    private static final class RedisFailure {
        static boolean is(Throwable t) {
            return t instanceof dev.sema.redis.RedisSemaphoreException;
        }
    }
}
