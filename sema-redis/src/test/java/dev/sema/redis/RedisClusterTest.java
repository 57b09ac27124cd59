package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import dev.sema.testing.RedisServer;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Redis Cluster: three local masters; two {@link RedisSemaphores} ({@link #a} and {@link #b}, standing for
 * two processes) made by {@link RedisSemaphores#connectCluster(String)}; in each test, one semaphore per
 * master (their names hash to slots of different masters).
 */
@Tag("redis")
class RedisClusterTest {
    private static final int MASTERS = 3;
    private static final AtomicInteger NAMES = new AtomicInteger();

    static RedisCluster cluster;
    private static String missing;
    private static RedisClusterClient inspector;
    private static StatefulRedisClusterConnection<String, String> inspectorConnection;
    static RedisAdvancedClusterCommands<String, String> redis;

    RedisSemaphores a;
    RedisSemaphores b;
    /** names.get(i) is served by master i. */
    final List<String> names = new ArrayList<>();

    @BeforeAll
    static void startCluster(TestInfo info) throws Exception {
        RedisServer.Source source = RedisTestSupport.sourceFor(info.getTestClass().orElseThrow());
        Optional<RedisServer.Binary> binary = source.find();
        if (binary.isEmpty()) {
            missing = "Redis Cluster test skipped: " + source.missing();
            return;
        }
        cluster = RedisCluster.start(binary.get(), MASTERS);
        inspector = RedisClusterClient.create(cluster.uri());
        inspectorConnection = inspector.connect();
        redis = inspectorConnection.sync();
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (inspector != null) {
            inspectorConnection.close();
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            inspector = null;
        }
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    @BeforeEach
    void connect(TestInfo info) {
        assumeTrue(cluster != null, missing);
        a = RedisSemaphores.connectCluster(cluster.uri());
        b = RedisSemaphores.connectCluster(cluster.uri());
        String base = info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + NAMES.incrementAndGet();
        names.addAll(cluster.namesOnEachMaster(base));
    }

    @AfterEach
    void disconnect() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    private static void checkInvariants(String name) {
        RedisTestSupport.checkInvariants(redis, name);
    }

    private static String major() {
        return cluster.node(0).info("server").contains("redis_version:6.") ? "6" : "7+";
    }

    @Test
    void everyKeyAndTheWakeUpChannelOfASemaphoreAreInOneSlotOfItsMaster() throws Exception {
        for (int master = 0; master < MASTERS; master++) {
            String name = names.get(master);
            RedisSemaphore sa = a.semaphore(name).permits(1).build();
            RedisSemaphore sb = b.semaphore(name).permits(1).build();
            Permit held = sa.acquire();
            CompletableFuture<Permit> waiter = sb.acquireAsync(1);
            RedisTestSupport.awaitQueueLength(sa, 1);

            int slot = SlotHash.getSlot(name);
            List<String> keys = new ArrayList<>();
            for (String k : List.of("meta", "holders", "leases", "queue")) {
                keys.add("sem:{" + name + "}:" + k);
            }
            String channel = ((LettuceSemaphore) sb).channel();
            for (String k : keys) {
                assertThat(cluster.node(master).clusterKeyslot(k)).as(k).isEqualTo(slot);
            }
            assertThat(cluster.node(master).clusterKeyslot(channel)).as(channel).isEqualTo(slot);
            assertThat(cluster.node(master).exists(keys.toArray(String[]::new))).as("all four keys on master " + master)
                    .isEqualTo(4);
            // The wake-up subscription: sharded, on the semaphore's own master, from Redis 7 on.
            if (major().equals("6")) {
                assertThat(b.sharded()).isFalse();
                assertThat(channel).doesNotEndWith("s");
            } else {
                assertThat(b.sharded()).isTrue();
                assertThat(cluster.node(master).pubsubShardChannels()).contains(channel);
                for (int other = 0; other < MASTERS; other++) {
                    if (other != master) {
                        assertThat(cluster.node(other).pubsubShardChannels()).doesNotContain(channel);
                    }
                }
            }
            held.close();
            waiter.get(20, TimeUnit.SECONDS).close();
            checkInvariants(name);
        }
    }

    @Test
    void partitionsServeAcrossClientsOnEveryMaster() throws Exception {
        for (String name : names) {
            RedisSemaphore sa = a.semaphore(name).permits(4).partition("high", 0.5).partition("low", 0.5).build();
            RedisSemaphore sb = b.semaphore(name).build(); // takes the stored partitions
            assertThat(sb.partitionNames()).containsExactly("high", "low");
            Permit all = sa.partition("low").tryAcquire(4).orElseThrow();
            CompletableFuture<Permit> own = sb.acquireAsync(1);
            RedisTestSupport.awaitQueueLength(sa, 1);
            CompletableFuture<Permit> high = sb.partition("high").acquireAsync(2); // owed 2: served before the parent's
            RedisTestSupport.awaitQueueLength(sa, 2);
            all.release(2);
            high.get(20, TimeUnit.SECONDS).close(); // its message came by the semaphore's master
            all.close();
            own.get(20, TimeUnit.SECONDS).close();
            assertThat(sa.availablePermits()).isEqualTo(4);
            RedisTestSupport.checkPartitionInvariants(redis, name);
        }
    }

    @Test
    void aKeyedFamilySpreadsItsKeysOverEveryMasterSharesEachKeysLimitAndLeavesNothingWhenIdle() throws Exception {
        String family = "fam-" + NAMES.incrementAndGet();
        KeyedSemaphore<String> fa = a.keyed(family).permits(2).expireWhenIdle(RedisSemaphore.MIN_IDLE_EXPIRY).build();
        KeyedSemaphore<String> fb = b.keyed(family).permits(2).expireWhenIdle(RedisSemaphore.MIN_IDLE_EXPIRY).build();
        // keys.get(i): its semaphore, named family:key, is on master i
        List<String> keys = cluster.namesOnEachMaster(family + ":tenant").stream()
                .map(n -> n.substring(family.length() + 1)).toList();
        for (int master = 0; master < MASTERS; master++) {
            String key = keys.get(master);
            Permit two = fa.get(key).acquire(2);
            assertThat(cluster.node(master).exists("sem:{" + family + ":" + key + "}:meta")).as("on master " + master)
                    .isOne();
            assertThat(fb.get(key).tryAcquire(1)).as("the key's limit is shared").isEmpty();
            CompletableFuture<Permit> waiter = fb.get(key).acquireAsync(1);
            RedisTestSupport.awaitQueueLength((RedisSemaphore) fa.get(key), 1);
            two.close(); // wakes the other client's waiter through the key's own master
            waiter.get(20, TimeUnit.SECONDS).close();
            checkInvariants(family + ":" + key);
        }
        assertThat(fa.size()).as("no key live in either process once idle").isZero();
        assertThat(fb.size()).isZero();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (int master = 0; master < MASTERS; master++) {
            String meta = "sem:{" + family + ":" + keys.get(master) + "}:meta";
            while (cluster.node(master).exists(meta) != 0) {
                assertThat(System.nanoTime() - deadline).as(meta + " expired when idle").isNegative();
                Thread.sleep(50);
            }
        }
    }

    @Test
    void acquireAndReleaseAreSharedAcrossClientsOnEveryMaster() throws Exception {
        for (String name : names) {
            RedisSemaphore sa = a.semaphore(name).permits(3).build();
            RedisSemaphore sb = b.semaphore(name).permits(99).build(); // exists already: the stored values win
            assertThat(sb.permits()).isEqualTo(3);
            Permit two = sa.acquire(2);
            assertThat(sb.availablePermits()).isEqualTo(1);
            assertThat(sb.tryAcquire(2)).isEmpty();
            Permit one = sb.tryAcquire(1).orElseThrow();
            assertThat(sa.availablePermits()).isZero();
            checkInvariants(name);
            two.close();
            one.close();
            assertThat(sa.availablePermits()).isEqualTo(3);
            checkInvariants(name);
        }
    }

    /**
     * Renewals (and so heartbeats) are suspended on both clients: a waiter can only learn of its grant
     * from the wake-up message, sent by the releasing client's script on the semaphore's master.
     */
    @Test
    void releaseByOneClientWakesTheQueuedWaitersOfBothInArrivalOrder() throws Exception {
        for (String name : names) {
            RedisSemaphore sa = a.semaphore(name).permits(3).build();
            RedisSemaphore sb = b.semaphore(name).permits(3).build();
            ((LettuceSemaphore) sa).renewalsSuspended = true;
            ((LettuceSemaphore) sb).renewalsSuspended = true;
            Permit all = sa.acquire(3);
            List<String> order = new CopyOnWriteArrayList<>();
            List<CompletableFuture<Permit>> futures = new ArrayList<>();
            long[] sizes = {2, 1, 3, 1};
            for (int i = 0; i < sizes.length; i++) {
                RedisSemaphore s = i % 2 == 0 ? sb : sa;
                int index = i;
                futures.add(s.acquireAsync(sizes[i]).whenComplete((p, e) -> order.add("w" + index)));
                RedisTestSupport.awaitQueueLength(sa, i + 1);
            }
            all.release(2); // 2 free: w0 (b, 2) is served, w1 (a, 1) needs one more
            Permit w0 = futures.get(0).get(20, TimeUnit.SECONDS);
            assertThat(futures.get(1)).isNotDone();
            all.close(); // w1 (a, 1) is served; w2 (b, 3) does not fit, so w3 (a, 1) waits behind it
            Permit w1 = futures.get(1).get(20, TimeUnit.SECONDS);
            assertThat(order).containsExactly("w0", "w1");
            assertThat(sb.queueLength()).isEqualTo(2);
            w0.close();
            w1.close(); // 3 free: w2 (b, 3)
            futures.get(2).get(20, TimeUnit.SECONDS).close(); // by b itself: w3 (a, 1)
            futures.get(3).get(20, TimeUnit.SECONDS).close();
            assertThat(order).containsExactly("w0", "w1", "w2", "w3");
            assertThat(sa.availablePermits()).isEqualTo(3);
            checkInvariants(name);
        }
    }

    @Test
    void timedAcquireTimesOutAndLeavesTheQueue() throws Exception {
        for (String name : names) {
            RedisSemaphore sa = a.semaphore(name).permits(1).build();
            RedisSemaphore sb = b.semaphore(name).permits(1).build();
            Permit held = sa.acquire();
            assertThatThrownBy(() -> sb.acquire(1, Duration.ofMillis(100)))
                    .isInstanceOf(TimeoutException.class).hasMessageContaining(name);
            CompletableFuture<Permit> f = sb.acquireAsync(1, Duration.ofMillis(100));
            assertThatThrownBy(() -> f.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(TimeoutException.class);
            RedisTestSupport.awaitQueueLength(sa, 0);
            CompletableFuture<Permit> later = sb.acquireAsync(1, Duration.ofSeconds(20));
            RedisTestSupport.awaitQueueLength(sa, 1);
            held.close();
            later.get(20, TimeUnit.SECONDS).close();
            assertThat(sb.availablePermits()).isEqualTo(1);
            checkInvariants(name);
        }
    }

    @Test
    void closeFailsTheWaitersOfEveryClient() throws Exception {
        for (String name : names) {
            RedisSemaphore sa = a.semaphore(name).permits(1).build();
            RedisSemaphore sb = b.semaphore(name).permits(1).build();
            ((LettuceSemaphore) sb).renewalsSuspended = true; // b learns of the close from the message only
            Permit held = sa.acquire();
            CompletableFuture<Permit> waiterB = sb.acquireAsync(1);
            CompletableFuture<Permit> waiterA = sa.acquireAsync(1);
            RedisTestSupport.awaitQueueLength(sa, 2);
            sa.close();
            for (CompletableFuture<Permit> f : List.of(waiterA, waiterB)) {
                assertThatThrownBy(() -> f.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(SemaphoreClosedException.class);
            }
            assertThat(sb.isClosed()).isTrue();
            assertThatThrownBy(() -> sb.tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
            held.close();
            assertThat(sb.availablePermits()).isEqualTo(1);
            checkInvariants(name);
        }
    }

    @Test
    void scriptsAreLoadedAgainOnEveryMasterAfterAFlush() throws Exception {
        List<RedisSemaphore> semaphores = new ArrayList<>();
        for (String name : names) {
            semaphores.add(a.semaphore(name).permits(2).build());
        }
        for (int i = 0; i < MASTERS; i++) {
            // ACQUIRE only: a release still in flight from an earlier test's close may load RELEASE again,
            // and a call of an earlier test still in flight may load ACQUIRE: flush until it is gone.
            for (int tries = 0; ; tries++) {
                cluster.node(i).scriptFlush();
                if (!cluster.node(i).scriptExists(Script.ACQUIRE.sha()).get(0)) {
                    break;
                }
                assertThat(tries).as("ACQUIRE loaded again after every flush on master " + i).isLessThan(20);
                Thread.sleep(50);
            }
        }
        for (int i = 0; i < MASTERS; i++) {
            RedisSemaphore s = semaphores.get(i);
            s.tryAcquire(2).orElseThrow().close(); // EVALSHA: NOSCRIPT, then EVAL on the same master
            assertThat(s.availablePermits()).isEqualTo(2);
            assertThat(cluster.node(i).scriptExists(Script.ACQUIRE.sha(), Script.RELEASE.sha()))
                    .as("loaded on master " + i).containsExactly(true, true);
            checkInvariants(names.get(i));
        }
    }

    /**
     * A resharding moves the semaphore to another master, while a waiter is queued and the wake-up channel
     * subscribed on the old master. Renewals are suspended on the waiter's client, so it can only learn of
     * its grant from the message: on Redis 7 the server ends the shard subscription when the slot leaves,
     * and the client subscribes again on the new master.
     */
    @Test
    void semaphoreKeepsWorkingAndWakingAfterItsSlotMovesToAnotherMaster() throws Exception {
        String name = names.get(0);
        int slot = SlotHash.getSlot(name);
        RedisSemaphore sa = a.semaphore(name).permits(2).build();
        RedisSemaphore sb = b.semaphore(name).permits(2).build();
        ((LettuceSemaphore) sb).renewalsSuspended = true;
        String channel = ((LettuceSemaphore) sb).channel();
        Permit held = sa.acquire(2);
        CompletableFuture<Permit> waiter = sb.acquireAsync(2);
        RedisTestSupport.awaitQueueLength(sa, 1);
        cluster.moveSlot(slot, 0, 1);
        try {
            assertThat(cluster.node(1).exists("sem:{" + name + "}:meta")).isEqualTo(1);
            if (b.sharded()) {
                RedisTestSupport.await("subscribed again on the new master",
                        () -> cluster.node(1).pubsubShardChannels().contains(channel));
                assertThat(cluster.node(0).pubsubShardChannels()).doesNotContain(channel);
            }
            held.close(); // MOVED: Lettuce follows it to master 1, where the script runs and sends the message
            Permit granted = waiter.get(20, TimeUnit.SECONDS);
            assertThat(sa.availablePermits()).isZero();
            granted.close();
            assertThat(sb.availablePermits()).isEqualTo(2);
            checkInvariants(name);
        } finally {
            cluster.moveSlot(slot, 1, 0);
        }
        // And back: it still works, and wakes.
        if (b.sharded()) {
            RedisTestSupport.await("subscribed again on the first master",
                    () -> cluster.node(0).pubsubShardChannels().contains(channel));
        }
        Permit again = sa.acquire(2);
        CompletableFuture<Permit> next = sb.acquireAsync(1);
        RedisTestSupport.awaitQueueLength(sa, 1);
        again.close();
        next.get(20, TimeUnit.SECONDS).close();
        assertThat(cluster.node(0).exists("sem:{" + name + "}:meta")).isEqualTo(1);
        checkInvariants(name);
    }

    /**
     * A shard subscription lost without notice (as on a master that failed): the waiter learns of its grant
     * from its heartbeat, which also subscribes again, so the next wake-up comes by message.
     */
    @Test
    void shardSubscriptionLostWithoutNoticeIsRestoredByTheNextHeartbeat() throws Exception {
        assumeTrue(b.sharded(), "sharded pub/sub needs Redis 7");
        String name = names.get(2);
        RedisSemaphore sa = a.semaphore(name).permits(1).build();
        LettuceSemaphore sb = (LettuceSemaphore) b.semaphore(name).permits(1).build();
        String channel = sb.channel();
        b.ignoreShardUnsubscribe = true;
        b.pubsub().sync().sunsubscribe(channel);
        RedisTestSupport.await("unsubscribed", () -> !cluster.node(2).pubsubShardChannels().contains(channel));
        Permit held = sa.acquire();
        CompletableFuture<Permit> waiter = sb.acquireAsync(1);
        RedisTestSupport.awaitQueueLength(sa, 1);
        held.close(); // the message is lost
        waiter.get(20, TimeUnit.SECONDS).close(); // by the heartbeat
        RedisTestSupport.await("subscribed again", () -> cluster.node(2).pubsubShardChannels().contains(channel));
        // Now by message alone.
        sb.renewalsSuspended = true;
        held = sa.acquire();
        CompletableFuture<Permit> next = sb.acquireAsync(1);
        RedisTestSupport.awaitQueueLength(sa, 1);
        held.close();
        next.get(20, TimeUnit.SECONDS).close();
        checkInvariants(name);
    }

    @Test
    void borrowedClusterClientIsNotShutDown() throws Exception {
        RedisClusterClient client = RedisClusterClient.create(cluster.uri());
        try {
            try (RedisSemaphores borrowed = RedisSemaphores.using(client)) {
                assertThat(borrowed.toString()).contains("cluster");
                for (String name : names) {
                    RedisSemaphore s = borrowed.semaphore(name).permits(1).build();
                    s.acquire().close();
                    assertThat(s.availablePermits()).isEqualTo(1);
                }
            }
            try (StatefulRedisClusterConnection<String, String> c = client.connect()) {
                assertThat(c.sync().get("sem:{" + names.get(0) + "}:nothing")).isNull();
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @Test
    void concurrentClientsNeverHoldMoreThanTheLimit() throws Exception {
        long limit = 3;
        List<AtomicLong> inUse = new ArrayList<>();
        List<RedisSemaphore> handles = new ArrayList<>();
        for (String name : names) {
            inUse.add(new AtomicLong());
            handles.add(a.semaphore(name).permits(limit).build());
            handles.add(b.semaphore(name).permits(limit).build());
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 12; t++) {
            int index = t;
            threads.add(Thread.ofVirtual().start(() -> {
                RedisSemaphore s = handles.get(index % handles.size());
                AtomicLong used = inUse.get(index % handles.size() / 2);
                try {
                    for (int i = 0; i < 10; i++) {
                        long n = 1 + (index + i) % 2;
                        try (Permit p = s.acquire(n, Duration.ofSeconds(20))) {
                            long now = used.addAndGet(n);
                            if (now > limit) {
                                throw new AssertionError(now + " permits in use on " + s.name());
                            }
                            used.addAndGet(-n);
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread t : threads) {
            t.join(40_000);
        }
        assertThat(failure.get()).isNull();
        for (String name : names) {
            assertThat(a.semaphore(name).build().availablePermits()).isEqualTo(limit);
            checkInvariants(name);
        }
    }
}
