package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.testing.RedisServer;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * {@code replicas(n, timeout)} on Redis Cluster (RedisSemaphores R1): a WAIT answers for the node it reaches
 * only, so each grant is confirmed, and each renewal runs, on the connection to its own slot's master. Three
 * masters with a replica each, a fresh cluster per test (some stop a replica).
 */
@Tag("redis")
@Timeout(180)
class RedisClusterReplicasTest {
    private static final int MASTERS = 3;

    private RedisCluster cluster;
    private RedisSemaphores a;
    private RedisSemaphores b;
    /** names.get(i) is served by master i. */
    private final List<String> names = new ArrayList<>();

    @BeforeEach
    void start(TestInfo info) throws Exception {
        Optional<RedisServer.Binary> binary = RedisServer.Source.INSTALLED.find();
        assumeTrue(binary.isPresent(), RedisServer.Source.INSTALLED.missing());
        cluster = RedisCluster.startWithReplicas(binary.get(), MASTERS);
        a = RedisSemaphores.connectCluster(cluster.uri());
        b = RedisSemaphores.connectCluster(cluster.uri());
        String base = info.getTestMethod().map(m -> m.getName()).orElse("t");
        names.addAll(cluster.namesOnEachMaster(base));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : new AutoCloseable[] {a, b, cluster}) {
            if (c != null) {
                c.close();
            }
        }
    }

    private RedisSemaphore durable(RedisSemaphores on, String name) {
        return on.semaphore(name).permits(3).replicas(1, Duration.ofMillis(500)).build();
    }

    /** The permits counted used on master {@code i}'s replica, or -1 if it has no such semaphore. */
    private long usedOnReplica(int i, String name) {
        Long used = RedisTestSupport.metaField(cluster.replica(i), name, "used");
        return used == null ? -1 : used;
    }

    @Test
    void aGrantReachesItsCallerOnlyOnceTheReplicaOfItsSlotsMasterHasIt() throws Exception {
        for (int i = 0; i < MASTERS; i++) {
            RedisSemaphore s = durable(a, names.get(i));
            Permit two = s.acquire(2);
            assertThat(usedOnReplica(i, names.get(i))).as("on replica %d when acquire returned", i).isEqualTo(2);
            Permit one = s.tryAcquire(1).orElseThrow();
            assertThat(usedOnReplica(i, names.get(i))).isEqualTo(3);
            two.close();
            Permit async = s.acquireAsync(2, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
            assertThat(usedOnReplica(i, names.get(i))).isEqualTo(3);
            one.close();
            async.close();
        }
    }

    /**
     * Without its master's replica a grant is given back, while the semaphores of the other masters, whose
     * replicas are there, still grant: a WAIT sent to any other node than the grant's would answer at once.
     */
    @Test
    void withoutTheReplicaOfItsSlotsMasterAGrantIsGivenBackAndOtherMastersStillGrant() throws Exception {
        RedisSemaphore lonely = durable(a, names.get(0));
        lonely.acquire().close();
        cluster.killReplica(0);
        assertThatThrownBy(() -> lonely.tryAcquire(2)).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("reached 0 of the 1 replicas");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (lonely.availablePermits() != 3) { // the give-back is sent as the failure is reported
            assertThat(System.nanoTime() - deadline).as("the grant given back").isNegative();
            Thread.sleep(10);
        }
        for (int i = 1; i < MASTERS; i++) {
            try (Permit p = durable(a, names.get(i)).acquire(3)) {
                assertThat(usedOnReplica(i, names.get(i))).isEqualTo(3);
            }
        }
    }

    /** A grant made for a waiter by another process's release is confirmed on the slot's master too. */
    @Test
    void aGrantMadeByAnotherProcesssReleaseIsReplicatedBeforeItIsHandedOver() throws Exception {
        String name = names.get(1);
        RedisSemaphore holder = a.semaphore(name).permits(1).build();
        RedisSemaphore waiter = b.semaphore(name).permits(1).replicas(1, Duration.ofMillis(500)).build();
        Permit held = holder.acquire();
        var waiting = waiter.acquireAsync();
        RedisTestSupport.awaitQueueLength(waiter, 1);
        held.close();
        try (Permit granted = waiting.get(10, TimeUnit.SECONDS)) {
            assertThat(usedOnReplica(1, name)).isEqualTo(1);
        }
    }

    /**
     * A grant whose slot moved to another master after the client read the slot map: the grant's script follows
     * MOVED there, and its confirmation, sent on the stale master's connection, is refused (MOVED), so the slot
     * map is read again and the confirmation runs, and waits, on the new master.
     */
    @Test
    void aGrantWhoseSlotMovedIsConfirmedOnItsNewMaster() throws Exception {
        String name = names.get(0);
        RedisSemaphore s = durable(a, name);
        s.acquire().close();
        cluster.moveSlot(SlotHash.getSlot(name), 0, 2);
        try (Permit p = s.acquire(2)) {
            assertThat(usedOnReplica(2, name)).as("on the new master's replica").isEqualTo(2);
        }
    }

    /** H6 on Redis Cluster: a renewal that the slot's replica does not acknowledge does not extend the lease. */
    @Test
    void aRenewalThatTheReplicaOfItsSlotsMasterLacksLeavesTheLeaseWhereItWas() throws Exception {
        String name = names.get(2);
        RedisSemaphore s = a.semaphore(name).permits(1).lease(Duration.ofSeconds(2))
                .replicas(1, Duration.ofMillis(300)).build();
        RedisPermit held = s.acquire();
        RedisSemaphore plain = b.semaphore(name).permits(1).lease(Duration.ofSeconds(2)).build();
        Thread.sleep(5_000); // two leases and more, renewed meanwhile with the replica there
        assertThat(held.leaseLost()).as("renewed while the replica acknowledged").isNotDone();
        cluster.killReplica(2);
        // The master still holds the grant (renewals reach it): without H6 leaseLost() would never complete.
        held.leaseLost().get(20, TimeUnit.SECONDS);
        assertThat(plain.tryAcquire()).as("Redis itself still counts the grant as held").isEmpty();
        held.close();
    }

    @Test
    void aKeyedFamilysGrantsWaitForTheReplicaOfEachKeysMaster() throws Exception {
        KeyedSemaphore<String> tenants = a.keyed("tenants").permits(2).replicas(1, Duration.ofMillis(500)).build();
        try {
            List<String> keys = cluster.namesOnEachMaster("tenants:k").stream()
                    .map(n -> n.substring("tenants:".length())).toList();
            for (int i = 0; i < MASTERS; i++) {
                try (Permit p = tenants.get(keys.get(i)).acquire(2)) {
                    assertThat(usedOnReplica(i, "tenants:" + keys.get(i))).isEqualTo(2);
                }
            }
            cluster.killReplica(1);
            assertThatThrownBy(() -> tenants.get(keys.get(1)).acquire(1)).isInstanceOf(RedisSemaphoreException.class)
                    .hasMessageContaining("reached 0 of the 1 replicas");
            tenants.get(keys.get(0)).acquire(1).close();
        } finally {
            tenants.close();
        }
    }
}
