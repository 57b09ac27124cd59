package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Permit;
import dev.sema.testing.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code replicas(n, timeout)} (API.md §6): a grant reaches its caller only once the replica has it, whether
 * the acquire's own script made it or another process's release did; without the replica, the grant is
 * given back and the acquire fails. A primary and a replica are started on loopback ports.
 */
@Tag("redis")
@Timeout(120)
class RedisReplicasTest {
    private RedisServer primary;
    private RedisServer replica;
    private RedisClient inspector;
    private StatefulRedisConnection<String, String> onReplicaConnection;
    private RedisCommands<String, String> onReplica;
    private RedisSemaphores a;
    private RedisSemaphores b;

    @BeforeEach
    void start() throws Exception {
        Optional<RedisServer.Binary> binary = RedisServer.Source.INSTALLED.find();
        assumeTrue(binary.isPresent(), RedisServer.Source.INSTALLED.missing());
        primary = RedisServer.start(binary.get());
        replica = RedisServer.builder(binary.get()).replicaOf(primary.port()).start();
        inspector = RedisClient.create(replica.uri());
        onReplicaConnection = inspector.connect();
        onReplica = onReplicaConnection.sync();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!onReplica.info("replication").contains("master_link_status:up")) {
            assertThat(System.nanoTime() - deadline).as("replica in sync").isNegative();
            Thread.sleep(20);
        }
        a = RedisSemaphores.connect(RedisTestSupport.uri(primary));
        b = RedisSemaphores.connect(RedisTestSupport.uri(primary));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : new AutoCloseable[] {a, b}) {
            if (c != null) {
                c.close();
            }
        }
        if (inspector != null) {
            onReplicaConnection.close();
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        if (replica != null) {
            replica.close();
        }
        if (primary != null) {
            primary.close();
        }
    }

    private RedisSemaphore durable(RedisSemaphores on, String name) {
        return on.semaphore(name).permits(3).replicas(1, Duration.ofSeconds(1)).build();
    }

    private long usedOnReplica(String name) {
        Long used = RedisTestSupport.metaField(onReplica, name, "used");
        return used == null ? -1 : used;
    }

    @Test
    void aGrantReachesItsCallerOnlyOnceTheReplicaHasIt() throws Exception {
        RedisSemaphore s = durable(a, "durable");
        Permit two = s.acquire(2);
        assertThat(usedOnReplica("durable")).as("already on the replica when acquire returned").isEqualTo(2);
        Permit one = s.tryAcquire(1).orElseThrow();
        assertThat(usedOnReplica("durable")).isEqualTo(3);
        Permit async = null;
        two.close();
        async = s.acquireAsync(2, Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
        assertThat(usedOnReplica("durable")).isEqualTo(3);
        one.close();
        async.close();
    }

    @Test
    void aGrantMadeByAnotherProcesssReleaseIsReplicatedBeforeItIsHandedOver() throws Exception {
        RedisSemaphore holder = a.semaphore("pushed").permits(1).build();
        RedisSemaphore waiter = durable(b, "pushed");
        Permit held = holder.acquire();
        CompletableFuture<Permit> waiting = waiter.acquireAsync();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (waiter.queueLength() != 1) {
            assertThat(System.nanoTime() - deadline).as("queued").isNegative();
            Thread.sleep(5);
        }
        held.close();
        RedisPermit granted = (RedisPermit) waiting.get(10, TimeUnit.SECONDS);
        List<Object> entry = onReplica.eval("local v = redis.call('HVALS', KEYS[1])[1]"
                + " if not v then return {} end return {struct.unpack('<dd', v)}",
                io.lettuce.core.ScriptOutputType.MULTI, "sem:{pushed}:holders");
        assertThat(entry).as("the grant is on the replica").startsWith(1L, granted.fencingToken());
        granted.close();
    }

    @Test
    void withoutTheReplicaAGrantIsGivenBackAndTheAcquireFails() throws Exception {
        RedisSemaphore s = durable(a, "lonely");
        s.acquire().close(); // works while the replica is there
        replica.close();
        replica = null;
        assertThatThrownBy(() -> s.tryAcquire(2)).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("reached 0 of the 1 replicas");
        assertThatThrownBy(() -> s.acquire(1)).isInstanceOf(RedisSemaphoreException.class);
        CompletableFuture<Permit> async = s.acquireAsync(3);
        assertThatThrownBy(() -> async.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(RedisSemaphoreException.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (s.availablePermits() != 3) { // the give-backs are sent as the failures are reported
            assertThat(System.nanoTime() - deadline).as("every grant given back").isNegative();
            Thread.sleep(10);
        }
        RedisSemaphore plain = b.semaphore("lonely").build();
        try (Permit p = plain.tryAcquire(3).orElseThrow()) {
            assertThat(p.permits()).as("a handle without replicas() still works").isEqualTo(3);
        }
    }

    @Test
    void badReplicaOptionsAreRefusedByName() throws Exception {
        RedisSemaphore.Builder builder = a.semaphore("options");
        assertThatThrownBy(() -> builder.replicas(0, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("replicas: n (0)");
        assertThatThrownBy(() -> builder.replicas(1, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("replicas: timeout (PT0S)");
        assertThatThrownBy(() -> builder.replicas(1, Duration.ofSeconds(6)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most PT5S");
        assertThatThrownBy(() -> builder.replicas(1, null)).isInstanceOf(NullPointerException.class);
        try (RedisSemaphores quick = RedisSemaphores.connect(primary.uri() + "?timeout=1s")) {
            assertThatThrownBy(() -> quick.semaphore("options").replicas(1, Duration.ofSeconds(1)).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("less than the command timeout");
        }
        assertThat(onReplica.exists("sem:{options}:meta")).isZero();
    }

    /**
     * H6: a renewal that no replica acknowledges does not extend the lease. The primary keeps renewing the
     * grant, but a replica promoted now would end it a lease after the last renewal it has: so must the holder.
     */
    @Test
    void aRenewalThatNoReplicaHasLeavesTheLeaseWhereItWas() throws Exception {
        RedisSemaphore s = a.semaphore("renewed").permits(1).lease(Duration.ofSeconds(1))
                .replicas(1, Duration.ofMillis(300)).build();
        RedisPermit held = s.acquire();
        RedisSemaphore plain = b.semaphore("renewed").permits(1).lease(Duration.ofSeconds(1)).build();
        Thread.sleep(3_000); // three leases, renewed meanwhile with the replica there
        assertThat(held.leaseLost()).as("renewed while the replica acknowledged").isNotDone();
        replica.close();
        replica = null;
        // The primary still holds the grant (renewals reach it): without H6 leaseLost() would never complete.
        held.leaseLost().get(20, TimeUnit.SECONDS);
        assertThat(plain.tryAcquire()).as("Redis itself still counts the grant as held").isEmpty();
        held.close();
    }

    /**
     * R2: WAIT counts the writes of the socket it arrives on. One sent after the connection dropped and Lettuce
     * opened it again counts none of the grant's, and answers at once for every replica still connected, even
     * one that has nothing (here: stopped): such an answer fails the grant.
     */
    @Test
    void aWaitSentAfterAReconnectDoesNotConfirmTheGrant() throws Exception {
        RedisSemaphore s = durable(a, "reconnected");
        s.acquire().close();
        RedisClient admin = RedisClient.create(RedisTestSupport.uri(primary));
        try (StatefulRedisConnection<String, String> c = admin.connect()) {
            replica.pause(); // still connected to the primary, acknowledging nothing
            a.beforeWait = () -> {
                long before = a.links(null);
                c.sync().clientKill(io.lettuce.core.KillArgs.Builder.typeNormal().skipme());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (a.links(null) < before + 2) { // down, then up again
                    assertThat(System.nanoTime() - deadline).as("reconnected").isNegative();
                    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                }
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300)); // its handshake
            };
            assertThatThrownBy(() -> s.tryAcquire(1)).isInstanceOf(RedisSemaphoreException.class)
                    .hasMessageContaining("between the write and its WAIT");
        } finally {
            a.beforeWait = null;
            replica.resume();
            admin.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        try (Permit p = s.acquire(3)) {
            assertThat(usedOnReplica("reconnected")).as("the failed grant was given back").isEqualTo(3);
        }
    }

    /**
     * L7: the renewal that precedes a grant's WAIT must find that very grant held. Here its lease ran out in Redis
     * first (renewals held back), so the renewal makes a new grant under the same id, with another fencing
     * token: the acquire fails, and both go back.
     */
    @Test
    void aGrantThatRedisNoLongerHoldsWhenItsWaitIsDueIsRefused() throws Exception {
        RedisSemaphore s = a.semaphore("expired").permits(3).lease(Duration.ofSeconds(1))
                .replicas(1, Duration.ofMillis(500)).build();
        ((LettuceSemaphore) s).renewalsSuspended = true;
        a.beforeTouch = () -> java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1_500));
        try {
            assertThatThrownBy(() -> s.tryAcquire(2)).isInstanceOf(RedisSemaphoreException.class)
                    .hasMessageContaining("the grant was gone from Redis before it reached the replicas");
        } finally {
            a.beforeTouch = null;
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (s.availablePermits() != 3) { // the give-back is sent as the failure is reported
            assertThat(System.nanoTime() - deadline).as("the new grant given back").isNegative();
            Thread.sleep(10);
        }
    }

    /** A keyed family's keys wait for the replica as a single semaphore does, and fail alike without it. */
    @Test
    void aKeyedFamilysGrantsReachTheirCallersOnlyOnceTheReplicaHasThem() throws Exception {
        dev.sema.KeyedSemaphore<String> tenants = a.keyed("tenants").permits(2)
                .replicas(1, Duration.ofMillis(500)).build();
        try {
            try (Permit p = tenants.get("acme").acquire(2)) {
                assertThat(usedOnReplica("tenants:acme")).as("on the replica when acquire returned").isEqualTo(2);
                try (Permit q = tenants.get("globex").tryAcquire(1).orElseThrow()) {
                    assertThat(usedOnReplica("tenants:globex")).isEqualTo(1);
                }
            }
            replica.close();
            replica = null;
            assertThatThrownBy(() -> tenants.get("initech").acquire(1)).isInstanceOf(RedisSemaphoreException.class)
                    .hasMessageContaining("reached 0 of the 1 replicas");
        } finally {
            tenants.close();
        }
    }

    @Test
    void badKeyedReplicaOptionsAreRefusedByName() throws Exception {
        RedisKeyedBuilder builder = a.keyed("options").permits(1);
        assertThatThrownBy(() -> builder.replicas(0, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("replicas: n (0)");
        assertThatThrownBy(() -> builder.replicas(1, Duration.ofSeconds(6)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most PT5S");
        assertThatThrownBy(() -> builder.replicas(1, null)).isInstanceOf(NullPointerException.class);
        try (RedisSemaphores quick = RedisSemaphores.connect(primary.uri() + "?timeout=1s")) {
            assertThatThrownBy(() -> quick.keyed("options").permits(1).replicas(1, Duration.ofSeconds(1)).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("less than the command timeout");
        }
    }
}
