package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.testing.FaultProxy;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Network faults between one process and Redis, injected by a {@link FaultProxy}: the process {@link #w}
 * talks to Redis through the proxy, {@link #a} and {@link #b} directly. Every test checks that no process
 * ever believes it holds permits that Redis gave to another, that each request ends one way, and that
 * every permit is back after the fault.
 */
class RedisNetworkFaultTest extends RedisTestSupport {
    private static final Duration LEASE = Duration.ofSeconds(2);

    FaultProxy proxy;
    RedisSemaphores w;

    @BeforeEach
    void startProxy() throws Exception {
        proxy = FaultProxy.start("127.0.0.1", server.port());
        w = RedisSemaphores.connect(proxy.redisUri("timeout=1s"));
    }

    @AfterEach
    void stopProxy() {
        if (proxy != null) {
            proxy.heal();
        }
        if (w != null) {
            w.close();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    private RedisSemaphore leased(RedisSemaphores on, long permits) {
        return on.semaphore(name).permits(permits).lease(LEASE).build();
    }

    @Test
    @Timeout(60)
    void partitionedHeadWaiterNeverBelievesItHoldsWhatRedisGaveToAnother() throws Exception {
        RedisSemaphore sa = leased(a, 1);
        RedisSemaphore sc = leased(b, 1);
        RedisSemaphore sw = leased(w, 1);
        Permit holder = sa.acquire();
        CompletableFuture<Permit> cut = sw.acquireAsync(1);
        awaitQueueLength(sw, 1); // w's own connection answered: w is queued, at the head
        CompletableFuture<Permit> next = sc.acquireAsync(1);
        awaitQueueLength(sc, 2);

        proxy.partition(FaultProxy.Direction.BOTH);
        holder.close(); // Redis grants w; the message is held in the partition
        // w cannot renew: Redis ends its grant after the lease and serves c.
        RedisPermit c = (RedisPermit) next.get(20, TimeUnit.SECONDS);
        proxy.heal();

        // The grant reaches w long after its own deadline: it must not become a live permit while c holds.
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2_500);
        while (System.nanoTime() - until < 0) {
            if (cut.isDone() && !cut.isCompletedExceptionally()) {
                RedisPermit stale = (RedisPermit) cut.join();
                assertThat(stale.leaseLost())
                        .as("w was handed a live permit (token %d) while c holds token %d", stale.fencingToken(),
                                c.fencingToken())
                        .isDone();
            }
            Thread.sleep(5);
        }
        assertThat(cut).as("w's request goes back into the queue, behind c's grant").isNotDone();
        c.close();
        RedisPermit mine = (RedisPermit) cut.get(20, TimeUnit.SECONDS);
        assertThat(mine.fencingToken()).isGreaterThan(c.fencingToken());
        assertThat(mine.leaseLost()).isNotDone();
        mine.close();
        assertThat(sa.availablePermits()).isEqualTo(1);
        assertThat(sa.queueLength()).isZero();
        checkInvariants();
    }
}
