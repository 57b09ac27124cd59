package dev.sema.redis;

import dev.sema.Permit;
import java.util.concurrent.CompletableFuture;

/**
 * Permits held from a {@link RedisSemaphore}: a grant recorded in Redis, kept alive by a lease that
 * this process renews while the permit holds anything. Every {@code Permit} a {@code RedisSemaphore}
 * hands out is a {@code RedisPermit}: the blocking acquires return it as such, and the permits of
 * {@code tryAcquire} and {@code acquireAsync} can be cast to it.
 *
 * {@snippet :
 * try (RedisPermit p = semaphore.acquire()) {
 *     p.leaseLost().thenRun(() -> abandonWork());  // the lease could not be kept
 *     storage.write(data, p.fencingToken());        // the storage rejects older tokens
 * }
 * }
 *
 * <h2>Fencing tokens</h2>
 * Each grant gets a token from the semaphore's counter in Redis: tokens of later grants are strictly
 * greater, across every process. A process that was paused longer than its lease may still believe it
 * holds permits that were handed to someone else; a resource that remembers the largest token it has
 * seen and refuses smaller ones stays safe (the permits protect against overload, the token protects
 * correctness). Tokens are taken as {@code max(last + 1, server time in microseconds)}, so they keep
 * increasing even when a Redis restart or failover rolled the counter back, provided the new server's
 * clock is not behind the old one's by more than the failover took.
 * <ul>
 *   <li>An acquire of 0 permits gets a fresh token too (and holds nothing in Redis).
 *   <li>{@link #split(long)} gives both parts the token of the grant they come from: they are parts of
 *       one grant, so two live permits may share a token.
 *   <li>{@link #merge(Permit)} keeps the larger of the two tokens.
 *   <li>{@link #release(long)} keeps the token of what stays held.
 * </ul>
 *
 * <h2>Leases</h2>
 * The lease is renewed every third of {@link RedisSemaphore#lease()} while this permit holds permits
 * and this process's {@link RedisSemaphores} is open. {@link #leaseLost()} completes when Redis reports
 * that the grant is gone (its lease ran out, for example after a long pause, or the data was lost in a
 * restart) or when renewals kept failing until the lease must be assumed to have run out, judged with
 * {@code System.nanoTime()} from when the last successful renewal was sent: at the instant that local
 * deadline (the lease less a tenth) passes, not at the next renewal, so it completes before Redis can hand
 * the permits to another process. Calling {@link #leaseLost()} checks the deadline too, so a thread that
 * asks right after its process was paused learns it at once. Once lost, the permit is no longer renewed;
 * {@link #close()} still tries to release it and never fails. A permit is never handed over after its
 * deadline (see <em>Late grants</em> in {@link RedisSemaphore}).
 *
 * <h2>Thread safety</h2>
 * All methods are thread-safe. Operations on one permit are serialised; each is one round trip to
 * Redis ({@link #permits()}, {@link #fencingToken()} and {@link #leaseLost()} need none). If Redis
 * cannot be reached, {@link #release(long)}, {@link #split(long)}, {@link #merge(Permit)} and
 * {@link #forget()} throw {@link RedisSemaphoreException} and change nothing locally, while
 * {@link #close()} logs the failure and lets the lease end instead.
 */
public interface RedisPermit extends Permit {

    /**
     * Returns the fencing token of the grant these permits come from.
     *
     * @return a token greater than that of every grant made before it on this semaphore
     */
    long fencingToken();

    /**
     * Returns a future that completes (normally) if the lease of these permits could not be kept alive
     * in time, and never completes otherwise. Each call returns a new future: completing it has no
     * effect on the permit.
     *
     * @return a future completed when the lease is lost
     */
    CompletableFuture<Void> leaseLost();
}
