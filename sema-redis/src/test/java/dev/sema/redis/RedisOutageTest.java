package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Redis restarts and outages, missing and corrupt keys: clear errors, nothing lost. */
class RedisOutageTest extends RedisTestSupport {
    private static final Duration LEASE = Duration.ofSeconds(1);

    private RedisSemaphore leased(RedisSemaphores on, long permits) {
        return on.semaphore(name).permits(permits).lease(LEASE).build();
    }

    @Test
    void restartWithoutPersistenceLosesNoPermit() throws Exception {
        RedisSemaphore sa = leased(a, 2);
        RedisSemaphore sb = leased(b, 2);
        RedisPermit held = sa.acquire(2);
        CompletableFuture<Permit> waiter = sb.acquireAsync(2);
        // Asked on b's own connection, whose replies come in order: b has read its ACQUIRE's reply. (Killing
        // Redis may reset the connection and drop a reply not yet read; that acquire would then fail.)
        awaitQueueLength(sb, 1);
        server.restart(); // every key is gone
        // The holder learns at its next renewal that Redis lost its grant.
        held.leaseLost().get(20, TimeUnit.SECONDS);
        // The waiter's entry was lost too: it queues again, the semaphore is created again from the
        // builder's values, and the waiter is served.
        RedisPermit next = (RedisPermit) waiter.get(20, TimeUnit.SECONDS);
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken()); // the server-time floor
        held.close(); // Redis does not hold it: nothing happens
        assertThat(sa.availablePermits()).isZero();
        next.close();
        assertThat(sa.availablePermits()).isEqualTo(2);
        assertThat(sb.permits()).isEqualTo(2);
        checkInvariants();
    }

    @Test
    @Timeout(30)
    void acquireWhileRedisIsDownFailsClearlyAndAtOnce() throws Exception {
        RedisSemaphore sa = leased(a, 1);
        server.kill();
        try {
            await("the client noticed", () -> {
                try {
                    sa.tryAcquire().ifPresent(Permit::close);
                    return false;
                } catch (RedisSemaphoreException e) {
                    return true;
                }
            });
            assertThatThrownBy(sa::acquire).isInstanceOf(RedisSemaphoreException.class)
                    .hasMessageContaining(name);
            assertThatThrownBy(() -> sa.acquire(1, Duration.ofSeconds(5))).isInstanceOf(RedisSemaphoreException.class);
            assertThatThrownBy(() -> sa.acquireAsync(1).get(20, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(RedisSemaphoreException.class);
            assertThatThrownBy(sa::availablePermits).isInstanceOf(RedisSemaphoreException.class);
        } finally {
            server.restart();
        }
        // Reconnects by itself once Redis is back.
        await("reconnected", () -> {
            try {
                sa.tryAcquire().ifPresent(Permit::close);
                return true;
            } catch (RedisSemaphoreException e) {
                return false;
            }
        });
        assertThat(sa.availablePermits()).isEqualTo(1);
        checkInvariants();
    }

    @Test
    void missingSemaphoreIsReportedWhenItMayNotBeCreated() throws Exception {
        assertThatThrownBy(() -> a.semaphore(name).createIfMissing(false).build())
                .isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("does not exist").hasMessageContaining("sem:{" + name + "}:meta");
        RedisSemaphore created = a.semaphore(name).permits(3).build();
        RedisSemaphore attached = b.semaphore(name).createIfMissing(false).build();
        assertThat(attached.permits()).isEqualTo(3);
        Permit held = created.acquire(3);
        CompletableFuture<Permit> waiter = attached.acquireAsync(1);
        awaitQueueLength(created, 1);
        redis.del("sem:{" + name + "}:meta");
        assertThatThrownBy(attached::tryAcquire).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("does not exist");
        // The waiter of the handle that may not create it fails at its next heartbeat.
        assertThatThrownBy(() -> waiter.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(RedisSemaphoreException.class);
        held.close();
        assertThat(created.availablePermits()).isEqualTo(3); // created again from its builder
    }

    @Test
    void aSemaphoreOfSchemaOneIsUpgradedInPlaceWithItsQueueKeptInOrder() throws Exception {
        // Schema 1 kept no queue length and no next deadline: a grant held by one process, a request queued
        // by another, written as a schema-1 client left them.
        String p = "sem:{" + name + "}:";
        long nowMs = Long.parseLong(redis.time().get(0)) * 1000;
        redis.hset(p + "meta", java.util.Map.of("ver", "1", "limit", "2", "max", "5", "used", "2", "fence", "10",
                "seq", "1", "closed", "0", "idle", "0"));
        redis.hset(p + "holders", "old:g", "2|10|old");
        redis.zadd(p + "leases", nowMs + 60_000, "old:g");
        redis.zadd(p + "queue", 1, "old:w");
        redis.hset(p + "waiters", "old:w", "1|old|60000|a");
        redis.zadd(p + "wlive", nowMs + 60_000, "old:w");
        RedisSemaphore s = build(a, 2);
        // FIFO is kept across the upgrade: the queued request is ahead, so nothing is free for a newcomer.
        assertThat(s.tryAcquire(1)).isEmpty();
        assertThat(metaField(redis, name, "ver")).isEqualTo(4L);
        assertThat(s.queueLength()).isEqualTo(1);
        assertThat(heldPermits(redis, name)).containsExactly(2L); // the old grant, rewritten in binary
        assertThat(redis.exists(p + "waiters", p + "wlive")).isZero();
        checkInvariants();
        // The old holder dies: once its lease ends, the old waiter is served first.
        redis.zadd(p + "leases", 1, "old:g");
        setMetaField("due", 1);
        assertThat(s.tryAcquire(2)).isEmpty(); // the waiter took 1 of the 2 freed
        assertThat(heldPermits(redis, name)).containsExactly(1L);
        checkInvariants();
    }

    @Test
    void aSemaphoreOfSchemaThreeIsUpgradedInPlaceWithItsQueueAndTimeToLiveKept() throws Exception {
        // Schema 3 (sema-redis 0.1.0): the binary meta value of today, but queued requests in keys of their
        // own (waiters, wlive). A grant of 2, then an acquire of 1 and an awaitIdle queued behind it.
        String p = "sem:{" + name + "}:";
        long nowMs = Long.parseLong(redis.time().get(0)) * 1000;
        redis.eval("redis.call('SET', KEYS[1], struct.pack('<Bddddddddd', 3, 2, 5, 2, 10, 2, 0, 0, ARGV[1], 2))",
                io.lettuce.core.ScriptOutputType.STATUS, new String[] {p + "meta"}, Long.toString(nowMs + 60_000));
        redis.pexpire(p + "meta", 3_600_000);
        redis.eval("redis.call('HSET', KEYS[1], 'old:g', struct.pack('<dd', 2, 10) .. 'old')",
                io.lettuce.core.ScriptOutputType.STATUS, p + "holders");
        redis.zadd(p + "leases", nowMs + 60_000, "old:g");
        redis.zadd(p + "queue", 1, "old:w");
        redis.zadd(p + "queue", 2, "old:i");
        redis.hset(p + "waiters", "old:w", "1|old|60000|a");
        redis.hset(p + "waiters", "old:i", "0|old|0|i");
        redis.zadd(p + "wlive", nowMs + 70_000, "old:w");
        redis.zadd(p + "wlive", nowMs + 80_000, "old:i");
        RedisSemaphore s = build(a, 2);
        assertThat(s.tryAcquire(1)).isEmpty(); // FIFO kept: both requests are still ahead
        assertThat(metaField(redis, name, "ver")).isEqualTo(4L);
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(redis.zrange(p + "queue", 0, -1)).containsExactly("old:w", "old:i");
        assertThat(redis.zscore(p + "leases", "old:w")).isEqualTo(nowMs + 70_000.0); // liveness kept
        assertThat(redis.zscore(p + "leases", "old:i")).isEqualTo(nowMs + 80_000.0);
        assertThat(entryFirstField(redis, name, "old:w")).isEqualTo(-2L);
        assertThat(entryFirstField(redis, name, "old:i")).isEqualTo(-1L);
        assertThat(redis.exists(p + "waiters", p + "wlive")).isZero();
        assertThat(redis.pttl(p + "meta")).as("the meta key's time-to-live stays").isPositive();
        checkInvariants();
        // The old holder dies: the acquire is served first; the awaitIdle stays behind it.
        redis.zadd(p + "leases", 1, "old:g");
        setMetaField("due", 1);
        assertThat(s.tryAcquire(2)).isEmpty();
        assertThat(heldPermits(redis, name)).containsExactly(1L);
        assertThat(s.queueLength()).isEqualTo(1);
        checkInvariants();
        // Running the upgrade again changes nothing.
        List<Object> again = ((LettuceSemaphore) s).protocol().raw(Script.UPGRADE).get(10, TimeUnit.SECONDS);
        assertThat(Protocol.str(again.get(0))).isEqualTo("OK");
        assertThat(s.queueLength()).isEqualTo(1);
    }

    @Test
    void corruptKeyIsReportedClearly() {
        redis.set("sem:{" + name + "}:meta", "not a semaphore");
        assertThatThrownBy(() -> a.semaphore(name).permits(1).build())
                .isInstanceOf(RedisSemaphoreException.class).hasMessageContaining("does not hold a semaphore");
        redis.del("sem:{" + name + "}:meta");
        redis.hset("sem:{" + name + "}:meta", "ver", "99");
        assertThatThrownBy(() -> a.semaphore(name).permits(1).build())
                .isInstanceOf(RedisSemaphoreException.class).hasMessageContaining("schema version 99");
        redis.hset("sem:{" + name + "}:meta", "ver", "1");
        assertThatThrownBy(() -> a.semaphore(name).permits(1).build())
                .isInstanceOf(RedisSemaphoreException.class).hasMessageContaining("limit");
    }

    @Test
    void connectingToNoRedisFailsClearly() {
        assertThatThrownBy(() -> RedisSemaphores.connect("redis://127.0.0.1:1?timeout=2s"))
                .isInstanceOf(RedisSemaphoreException.class).hasMessageContaining("cannot connect");
        assertThatThrownBy(() -> a.semaphore("a{b}")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.semaphore(" ")).isInstanceOf(IllegalArgumentException.class);
    }
}
