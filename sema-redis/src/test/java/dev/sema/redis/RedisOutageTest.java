package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import java.time.Duration;
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
        assertThat(metaField(redis, name, "ver")).isEqualTo(3L);
        assertThat(s.queueLength()).isEqualTo(1);
        assertThat(heldPermits(redis, name)).containsExactly(2L); // the old grant, rewritten in binary
        checkInvariants();
        // The old holder's release serves the old waiter first.
        redis.del(p + "holders");
        redis.del(p + "leases");
        setMetaField("used", 0);
        setMetaField("due", 0);
        assertThat(s.tryAcquire(2)).isEmpty(); // the waiter took 1 of the 2 freed
        assertThat(heldPermits(redis, name)).containsExactly(1L);
        checkInvariants();
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
