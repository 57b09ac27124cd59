package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code expireWhenIdle} (API.md §6): a semaphore nobody holds or waits on disappears from Redis with all its
 * keys, one that is held or awaited stays while its leases are renewed, and the next use creates it afresh.
 */
class RedisIdleExpiryTest extends RedisTestSupport {
    private static final Duration IDLE = Duration.ofSeconds(1);

    private String key(String suffix) {
        return "sem:{" + name + "}:" + suffix;
    }

    private RedisSemaphore idleExpiring(RedisSemaphores on, long permits) {
        return on.semaphore(name).permits(permits).maxPermits(10).lease(Duration.ofSeconds(1)).expireWhenIdle(IDLE)
                .build();
    }

    private long keysOfTheSemaphore() {
        return redis.keys("sem:{" + name + "}:*").size();
    }

    @Test
    void anIdleSemaphoreDisappearsWithAllItsKeys() throws Exception {
        RedisSemaphore s = idleExpiring(a, 2);
        s.acquire(2).close();
        long ttl = redis.pttl(key("meta"));
        assertThat(ttl).as("meta expires within the idle time").isBetween(1L, IDLE.toMillis());
        await("every key gone", () -> keysOfTheSemaphore() == 0);
    }

    @Test
    void aHeldSemaphoreStaysWhileItsLeaseIsRenewedAndGoesWhenReleased() throws Exception {
        RedisSemaphore s = idleExpiring(a, 2);
        Permit held = s.acquire();
        long start = System.nanoTime();
        // Three idle times with a permit held: the lease is renewed, and with it every key's expiry.
        while (System.nanoTime() - start < TimeUnit.SECONDS.toNanos(3)) {
            assertThat(redis.exists(key("meta"), key("holders"), key("leases"))).isEqualTo(3);
            Thread.sleep(100);
        }
        assertThat(redis.pttl(key("meta"))).as("a lease (1 s) plus the idle time at most")
                .isBetween(1L, 2 * IDLE.toMillis());
        held.close();
        await("every key gone after the release", () -> keysOfTheSemaphore() == 0);
    }

    @Test
    void aQueuedWaiterKeepsItAlive() throws Exception {
        RedisSemaphore s = idleExpiring(a, 1);
        RedisSemaphore other = idleExpiring(b, 1);
        Permit held = s.acquire();
        CompletableFuture<Permit> waiting = other.acquireAsync();
        awaitQueueLength(s, 1);
        Thread.sleep(2 * IDLE.toMillis() + 500);
        assertThat(redis.exists(key("queue"), key("holders"), key("leases"))).isEqualTo(3);
        held.close();
        waiting.get(10, TimeUnit.SECONDS).close();
        await("every key gone", () -> keysOfTheSemaphore() == 0);
    }

    @Test
    void theNextUseAfterExpiryCreatesItAfreshWithIncreasingTokens() throws Exception {
        RedisSemaphore s = idleExpiring(a, 2);
        long before;
        try (RedisPermit p = s.acquire()) {
            before = p.fencingToken();
        }
        s.setPermits(7);
        assertThat(s.permits()).isEqualTo(7);
        await("every key gone", () -> keysOfTheSemaphore() == 0);
        assertThat(s.permits()).as("created afresh from the builder's values: the changed limit is gone")
                .isEqualTo(2);
        try (RedisPermit p = s.acquire()) {
            assertThat(p.fencingToken()).isGreaterThan(before);
        }
        assertThat(redis.pttl(key("meta"))).isPositive();
    }

    @Test
    void theSettingIsStoredAtCreationAndABuilderForAnExistingSemaphoreDoesNotChangeIt() throws Exception {
        RedisSemaphore plain = a.semaphore(name).permits(2).build();
        plain.acquire().close();
        assertThat(redis.pttl(key("meta"))).as("no expiry").isEqualTo(-1);
        RedisSemaphore later = idleExpiring(b, 2);
        later.acquire().close();
        assertThat(redis.pttl(key("meta"))).as("still no expiry").isEqualTo(-1);
        assertThat(metaField(redis, name, "idle")).isZero();
    }

    @Test
    void anIdleSemaphoreWithoutExpiryKeepsOnlyItsMetaValue() throws Exception {
        RedisSemaphore plain = a.semaphore(name).permits(2).build();
        plain.acquire(2).close();
        assertThat(redis.keys("sem:{" + name + "}:*")).containsExactly(key("meta"));
        Long bytes = redis.memoryUsage(key("meta"));
        System.out.printf("idle semaphore without expiry: MEMORY USAGE of its meta value %d B%n", bytes);
        assertThat(bytes).isBetween(1L, 512L);
    }

    @Test
    void badIdleTimesAreRefusedByName() {
        RedisSemaphore.Builder builder = a.semaphore(name);
        assertThatThrownBy(() -> builder.expireWhenIdle(Duration.ofMillis(999)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expireWhenIdle (PT0.999S)");
        assertThatThrownBy(() -> builder.expireWhenIdle(Duration.ofDays(366)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expireWhenIdle");
        assertThatThrownBy(() -> builder.expireWhenIdle(null)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("expireWhenIdle");
        assertThat(redis.exists(key("meta"))).isZero();
    }

    /** 2,000 names by default; -Dsema.idle.names=100000 runs the full-size check (about two minutes). */
    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void manyNamesUsedOnceLeaveRedisMemoryBackNearItsBaseline() throws Exception {
        int names = Integer.getInteger("sema.idle.names", 2_000);
        redis.flushdb(); // this class's other tests leave semaphores that never expire
        long baseline = usedMemory();
        List<CompletableFuture<Void>> uses = new ArrayList<>();
        for (int i = 0; i < names; i++) {
            RedisSemaphore s = a.semaphore(name + "-" + i).permits(1).expireWhenIdle(IDLE).build();
            uses.add(s.acquireAsync().thenAccept(Permit::close));
        }
        CompletableFuture.allOf(uses.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        long busy = usedMemory();
        await("every semaphore gone", () -> redis.dbsize() == 0);
        a.close(); // its handles' subscriptions take server memory too, until the process lets go
        long after = usedMemory();
        System.out.printf("idle expiry: %,d names; used_memory %,d B before, %,d B with them, %,d B after%n", names,
                baseline, busy, after);
        assertThat(busy - baseline).as("they took memory while they lived").isPositive();
        assertThat(after - baseline).as("back near the baseline: less than 10% of what they took")
                .isLessThan((busy - baseline) / 10);
    }

    private static long usedMemory() {
        for (String line : redis.info("memory").split("\r?\n")) {
            if (line.startsWith("used_memory:")) {
                return Long.parseLong(line.substring("used_memory:".length()).trim());
            }
        }
        throw new AssertionError("no used_memory in INFO memory");
    }
}
