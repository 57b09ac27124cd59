package dev.sema.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Permit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The sampler reads a semaphore's counts from its meta value without the client: it must find them in both
 * layouts, an unpartitioned semaphore's and a partitioned one's (where {@code used} lies after a queue length
 * per partition), or the checker's recovery rule would judge a run on wrong numbers.
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
                Sampler sampler = new Sampler(redis, List.of(), null)) {
            assertThat(sampler.read("s-flat")).containsExactly(0, 0);
            RedisSemaphore s = r.semaphore("s-flat").permits(4).build();
            try (Permit p = s.acquire(3)) {
                CompletableFuture<Permit> queued = s.acquireAsync(2);
                assertThat(readOnceQueued(sampler, "s-flat", 1)).containsExactly(3, 1);
                queued.cancel(true);
            }
        }
    }

    @Test
    void readsUsedAndQueuedOfAPartitionedSemaphoreWhateverTheNumberOfPartitions() throws Exception {
        for (int n = 1; n <= 3; n++) {
            String name = "s-parts-" + n;
            try (RedisSemaphores r = RedisSemaphores.connect(redis.uri());
                    Sampler sampler = new Sampler(redis, List.of(), null)) {
                RedisSemaphore.Builder b = r.semaphore(name).permits(10);
                for (int i = 0; i < n; i++) {
                    b.partition("p" + i, 0.1);
                }
                RedisSemaphore s = b.build();
                RedisSemaphore last = s.partition("p" + (n - 1));
                try (Permit a = last.acquire(4); Permit own = s.acquire(5)) {
                    CompletableFuture<Permit> q1 = s.partition("p0").acquireAsync(3);
                    CompletableFuture<Permit> q2 = s.acquireAsync(2);
                    assertThat(readOnceQueued(sampler, name, 2)).as("%d partitions", n).containsExactly(9, 2);
                    q1.cancel(true);
                    q2.cancel(true);
                }
                assertThat(sampler.read(name)).as("%d partitions", n).containsExactly(0, 0);
            }
        }
    }

    /** An async acquire reaches Redis after it returns: reads until that many are queued (the timeout bounds it). */
    private static long[] readOnceQueued(Sampler sampler, String name, long queued) throws InterruptedException {
        long[] c = sampler.read(name);
        while (c == null || c[1] < queued) {
            Thread.sleep(10);
            c = sampler.read(name);
        }
        return c;
    }
}
