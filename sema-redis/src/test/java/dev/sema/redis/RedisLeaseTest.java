package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Leases: renewal while held, expiry when the holder stops renewing, and loss reported to the holder. */
class RedisLeaseTest extends RedisTestSupport {
    private static final Duration LEASE = Duration.ofSeconds(1);

    private RedisSemaphore build(RedisSemaphores on, long permits, Duration lease) {
        return on.semaphore(name).permits(permits).lease(lease).build();
    }

    private Double leaseDeadline(String grantId) {
        return redis.zscore("sem:{" + name + "}:leases", grantId);
    }

    private String onlyGrantId() {
        List<String> ids = redis.hkeys("sem:{" + name + "}:holders");
        assertThat(ids).hasSize(1);
        return ids.get(0);
    }

    @Test
    void leaseIsRenewedWhileThePermitIsHeld() throws Exception {
        RedisSemaphore sa = build(a, 1, LEASE);
        RedisSemaphore sb = build(b, 1, LEASE);
        RedisPermit p = sa.acquire();
        String id = onlyGrantId();
        double first = leaseDeadline(id);
        // Renewed every third of the lease: the deadline moves on several times, past two leases.
        await("lease renewed past 2 leases", () -> {
            Double d = leaseDeadline(id);
            return d != null && d > first + 2000;
        });
        assertThat(sb.tryAcquire()).isEmpty();
        assertThat(p.leaseLost()).isNotDone();
        p.close();
        assertThat(sb.tryAcquire()).isPresent();
        checkInvariants();
    }

    @Test
    void permitsOfAHolderWhoseRenewalsStopGoToTheNextWaiter() throws Exception {
        RedisSemaphore sa = build(a, 2, LEASE);
        RedisSemaphore sb = build(b, 2, LEASE);
        RedisPermit stale = sa.acquire(2);
        ((LettuceSemaphore) sa).renewalsSuspended = true;
        CompletableFuture<Permit> waiter = sb.acquireAsync(2);
        // Granted once the lease ends by Redis's clock, through the waiter's own heartbeat.
        RedisPermit next = (RedisPermit) waiter.get(20, TimeUnit.SECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stale.fencingToken());
        // The stale holder is told by its local deadline.
        stale.leaseLost().get(20, TimeUnit.SECONDS);
        assertThat(stale.toString()).contains("lease lost");
        stale.close(); // never throws, and does not touch the new holder's grant
        assertThat(sb.availablePermits()).isZero();
        next.close();
        assertThat(sa.availablePermits()).isEqualTo(2);
        checkInvariants();
    }

    /**
     * Moves a lease deadline into the past, and the stored next deadline with it (common.lua's S4: the
     * expiry scan runs once the clock reaches it, as it would have for a deadline that passed).
     */
    private void expireNow(String grantId) {
        redis.zadd("sem:{" + name + "}:leases", 1, grantId);
        setMetaField("due", 1);
    }

    @Test
    void grantThatRedisNoLongerHoldsIsReportedLost() throws Exception {
        RedisSemaphore sa = build(a, 1, LEASE);
        RedisPermit p = sa.acquire();
        String id = onlyGrantId();
        // Push the lease into the past, as a server clock step or a long pause would.
        expireNow(id);
        p.leaseLost().get(20, TimeUnit.SECONDS);
        assertThat(sa.availablePermits()).isEqualTo(1);
        p.close();
        assertThat(sa.availablePermits()).isEqualTo(1);
        checkInvariants();
    }

    @Test
    void operationsOnALostPermitKeepLocalCountsAndNeverTouchOtherGrants() throws Exception {
        RedisSemaphore sa = build(a, 4, LEASE);
        RedisPermit p = sa.acquire(4);
        expireNow(onlyGrantId());
        p.leaseLost().get(20, TimeUnit.SECONDS);
        Permit live = sa.acquire(2); // someone else's grant now
        Permit part = p.split(1);
        assertThat(((RedisPermit) part).leaseLost()).isDone();
        p.release(1);
        assertThat(p.permits()).isEqualTo(2);
        Permit empty = sa.acquire(0);
        empty.merge(p);
        assertThat(empty.permits()).isEqualTo(2);
        empty.release(1);
        empty.forget();
        part.close();
        p.close();
        empty.close();
        assertThat(sa.permits()).isEqualTo(4); // forgetting lost permits changes nothing in Redis
        assertThat(sa.availablePermits()).isEqualTo(2);
        live.close();
        assertThat(sa.availablePermits()).isEqualTo(4);
        checkInvariants();
    }

    @Test
    void waiterOfAProcessThatStopsRenewingIsRemovedAndTheQueueMovesOn() throws Exception {
        RedisSemaphore sa = build(a, 2, LEASE);
        RedisSemaphore sb = build(b, 2, LEASE);
        Permit one = sa.acquire(1);
        LettuceSemaphore hung = (LettuceSemaphore) sb;
        CompletableFuture<Permit> big = sb.acquireAsync(2);
        awaitQueueLength(sa, 1);
        hung.renewalsSuspended = true;
        CompletableFuture<Permit> small = sa.acquireAsync(1);
        // The hung head is reaped after the waiter time-to-live; the small request behind it is served.
        small.get(20, TimeUnit.SECONDS).close();
        hung.renewalsSuspended = false;
        one.close();
        // The hung waiter finds its entry gone at its next heartbeat and queues again.
        big.get(20, TimeUnit.SECONDS).close();
        assertThat(sa.availablePermits()).isEqualTo(2);
        checkInvariants();
    }

    @Test
    void leaseOutsideItsBoundsIsRefused() {
        assertThatThrownBy(() -> a.semaphore(name).lease(Duration.ofMillis(99)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.semaphore(name).lease(Duration.ofDays(2)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(a.semaphore(name).permits(1).build().lease()).isEqualTo(RedisSemaphore.DEFAULT_LEASE);
    }
}
