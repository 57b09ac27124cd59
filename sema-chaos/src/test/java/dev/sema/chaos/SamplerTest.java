package dev.sema.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The sampler reads a semaphore's counts from its meta value without the client: it must find them in both
 * layouts, an unpartitioned semaphore's and a partitioned one's (where {@code used} lies after a queue length
 * per partition), and read a keyed family's key gone after its idle expiry as holding nothing, or the checker's
 * recovery rule would judge a run on wrong numbers.
 */
@Tag("redis")
@Timeout(60)
class SamplerTest {
    private static RedisServer redis;

    @BeforeAll
    static void start() throws Exception {
        var binary = RedisServer.Source.INSTALLED_OR_BUNDLED.find();
        assumeTrue(binary.isPresent(), RedisServer.Source.INSTALLED_OR_BUNDLED.missing());
        redis = RedisServer.start(binary.get());
    }

    @AfterAll
    static void stop() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void readsUsedAndQueuedOfAnUnpartitionedSemaphore() throws Exception {
        try (RedisSemaphores r = RedisSemaphores.connect(redis.uri());
                Sampler sampler = new Sampler(SingleRedis.over(redis), List.of(), null)) {
            assertThat(sampler.read("s-flat")).isEqualTo(Sampler.Counts.GONE);
            RedisSemaphore s = r.semaphore("s-flat").permits(4).build();
            try (Permit p = s.acquire(3)) {
                CompletableFuture<Permit> queued = s.acquireAsync(2);
                assertThat(readOnceQueued(sampler, "s-flat", 1)).isEqualTo(new Sampler.Counts(3, 1, true));
                queued.cancel(true);
            }
        }
    }

    @Test
    void readsUsedAndQueuedOfAPartitionedSemaphoreWhateverTheNumberOfPartitions() throws Exception {
        for (int n = 1; n <= 3; n++) {
            String name = "s-parts-" + n;
            try (RedisSemaphores r = RedisSemaphores.connect(redis.uri());
                    Sampler sampler = new Sampler(SingleRedis.over(redis), List.of(), null)) {
                RedisSemaphore.Builder b = r.semaphore(name).permits(10);
                for (int i = 0; i < n; i++) {
                    b.partition("p" + i, 0.1);
                }
                RedisSemaphore s = b.build();
                RedisSemaphore last = s.partition("p" + (n - 1));
                try (Permit a = last.acquire(4); Permit own = s.acquire(5)) {
                    CompletableFuture<Permit> q1 = s.partition("p0").acquireAsync(3);
                    CompletableFuture<Permit> q2 = s.acquireAsync(2);
                    assertThat(readOnceQueued(sampler, name, 2)).as("%d partitions", n)
                            .isEqualTo(new Sampler.Counts(9, 2, true));
                    q1.cancel(true);
                    q2.cancel(true);
                }
                assertThat(sampler.read(name)).as("%d partitions", n).isEqualTo(new Sampler.Counts(0, 0, true));
            }
        }
    }

    /**
     * A keyed family's key is read as the semaphore {@code family:key}; once idle for its expiry it is gone from
     * Redis, read as nothing held or queued, and its next request stores it again: counted as a return, which a
     * first creation is not.
     */
    @Test
    void readsAKeyOfAFamilyAndCountsItsReturnAfterItExpired() throws Exception {
        try (RedisSemaphores r = RedisSemaphores.connect(redis.uri());
                Sampler sampler = new Sampler(SingleRedis.over(redis), List.of(), null)) {
            KeyedSemaphore<String> family = r.keyed("s-keyed").permits(3)
                    .expireWhenIdle(RedisSemaphore.MIN_IDLE_EXPIRY).build();
            assertThat(sampler.read("s-keyed:a")).isEqualTo(Sampler.Counts.GONE);
            try (Permit p = family.get("a").acquire(2)) {
                assertThat(sampler.read("s-keyed:a")).isEqualTo(new Sampler.Counts(2, 0, true));
            }
            assertThat(sampler.returns()).as("created, not come back").isEmpty();
            while (sampler.read("s-keyed:a").stored()) {
                Thread.sleep(50); // the idle expiry, one second; the timeout bounds it
            }
            assertThat(sampler.returns()).as("gone, not yet back").isEmpty();
            try (Permit p = family.get("a").acquire(1)) {
                assertThat(sampler.read("s-keyed:a")).isEqualTo(new Sampler.Counts(1, 0, true));
            }
            assertThat(sampler.read("s-keyed:a")).isEqualTo(new Sampler.Counts(0, 0, true));
            assertThat(sampler.returns()).containsExactly(Map.entry("s-keyed:a", 1));
        }
    }

    /** An async acquire reaches Redis after it returns: reads until that many are queued (the timeout bounds it). */
    private static Sampler.Counts readOnceQueued(Sampler sampler, String name, long queued)
            throws InterruptedException {
        Sampler.Counts c = sampler.read(name);
        while (c == null || c.queued() < queued) {
            Thread.sleep(10);
            c = sampler.read(name);
        }
        return c;
    }
}
