package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Permit;
import dev.sema.testing.RedisServer;
import io.lettuce.core.KillArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Redis watched by Sentinel (API.md §6: {@code connect} takes Lettuce's {@code redis-sentinel://} form): a
 * primary, a replica and three sentinels started here on loopback ports. The handle finds the primary
 * through the sentinels, and follows a failover when the primary is killed: the permits granted before it
 * are still held on the promoted replica (they had been replicated), and the semaphore goes on working.
 */
@Tag("redis")
@Timeout(120)
class RedisSentinelTest {
    private static final String MASTER = "sema-primary";

    private final List<RedisServer> sentinels = new ArrayList<>();
    private final List<RedisServer> servers = new ArrayList<>();

    @AfterEach
    void stopAll() throws Exception {
        // (also called between the two runs of one test)
        for (RedisServer s : sentinels) {
            s.close();
        }
        for (RedisServer s : servers) {
            s.close();
        }
    }

    private RedisServer.Binary binary() throws IOException {
        Optional<RedisServer.Binary> b = RedisServer.Source.INSTALLED.find();
        assumeTrue(b.isPresent(), RedisServer.Source.INSTALLED.missing());
        return b.get();
    }

    /** Starts a sentinel watching {@code primaryPort}, with quorum {@code quorum}; returns its port. */
    private int sentinel(RedisServer.Binary binary, int primaryPort, int quorum) throws Exception {
        RedisServer s = RedisServer.builder(binary).sentinel(List.of(
                "sentinel monitor " + MASTER + " 127.0.0.1 " + primaryPort + " " + quorum,
                "sentinel down-after-milliseconds " + MASTER + " 1000",
                "sentinel failover-timeout " + MASTER + " 5000",
                "sentinel parallel-syncs " + MASTER + " 1")).start();
        sentinels.add(s);
        return s.port();
    }

    /** A primary, a replica of it and three sentinels watching the primary (quorum 2). */
    private record Setup(RedisServer.Binary binary, RedisServer primary, RedisServer replica, List<Integer> sentinels) {
    }

    private Setup primaryReplicaAndSentinels() throws Exception {
        RedisServer.Binary binary = binary();
        RedisServer primary = RedisServer.start(binary);
        servers.add(primary);
        RedisServer replica = RedisServer.builder(binary).replicaOf(primary.port()).start();
        servers.add(replica);
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ports.add(sentinel(binary, primary.port(), 2));
        }
        return new Setup(binary, primary, replica, ports);
    }

    private static String sentinelUri(List<Integer> ports) {
        StringBuilder b = new StringBuilder("redis-sentinel://");
        for (int i = 0; i < ports.size(); i++) {
            b.append(i == 0 ? "" : ",").append("127.0.0.1:").append(ports.get(i));
        }
        return b.append("?timeout=2s#").append(MASTER).toString();
    }

    @Test
    void aHandleFindsThePrimaryThroughSentinelAndFollowsAFailover() throws Exception {
        Setup setup = primaryReplicaAndSentinels();
        RedisServer primary = setup.primary();
        RedisServer replica = setup.replica();
        List<Integer> ports = setup.sentinels();
        RedisClient inspector = RedisClient.create(replica.uri());
        try (StatefulRedisConnection<String, String> c = inspector.connect();
                RedisSemaphores fleet = RedisSemaphores.connect(sentinelUri(ports))) {
            RedisCommands<String, String> onReplica = c.sync();
            awaitTrue("the replica in sync", () -> onReplica.info("replication").contains("master_link_status:up"));

            RedisSemaphore s = fleet.semaphore("sentinel").permits(3).lease(Duration.ofSeconds(30)).build();
            RedisPermit held = s.acquire(2);
            awaitTrue("the grant replicated", () -> Long.valueOf(2).equals(RedisTestSupport.metaField(onReplica, "sentinel", "used")));

            primary.kill(); // the primary dies; the sentinels promote the replica
            awaitTrue("the replica promoted", () -> onReplica.info("replication").contains("role:master"));
            awaitTrue("the handle reaches the new primary", () -> {
                try {
                    return s.availablePermits() == 1;
                } catch (RedisSemaphoreException notYet) {
                    return false;
                }
            });
            assertThat(s.tryAcquire(2)).as("the 2 permits held before the failover are still held").isEmpty();
            try (Permit one = s.tryAcquire(1).orElseThrow()) {
                assertThat(((RedisPermit) one).fencingToken()).isGreaterThan(held.fencingToken());
            }
            held.close();
            awaitTrue("all back", () -> s.availablePermits() == 3);
            assertThat(RedisTestSupport.metaField(onReplica, "sentinel", "used")).isZero();
        } finally {
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * Over-granting across a failover, with and without {@code replicas(1, timeout)}. The replica's link is
     * cut so that it misses what the primary does next, a client takes permits, the primary is killed, and
     * the replica is promoted: any grant the client was told about but the replica never
     * received is counted as free by the new primary, which grants it again. Without {@code replicas} those
     * grants are acknowledged and lost; with it, they fail and are given back, and nothing is over-granted.
     */
    @Test
    void aFailoverOverGrantsWithoutReplicasAndNothingWithThem() throws Exception {
        long without = overGrantedAcrossAFailover(false);
        stopAll();
        sentinels.clear();
        servers.clear();
        long with = overGrantedAcrossAFailover(true);
        System.out.printf("failover: %d permits over-granted without replicas(), %d with replicas(1, 1s)%n", without,
                with);
        assertThat(without).as("without replicas(), the unreplicated grants were lost").isEqualTo(5);
        assertThat(with).as("with replicas(), nothing").isZero();
    }

    private long overGrantedAcrossAFailover(boolean durable) throws Exception {
        Setup setup = primaryReplicaAndSentinels();
        RedisServer primary = setup.primary();
        RedisServer replica = setup.replica();
        List<Integer> ports = setup.sentinels();
        RedisClient inspector = RedisClient.create(replica.uri());
        try (StatefulRedisConnection<String, String> c = inspector.connect();
                RedisSemaphores first = RedisSemaphores.connect(sentinelUri(ports));
                RedisSemaphores second = RedisSemaphores.connect(sentinelUri(ports))) {
            RedisCommands<String, String> onReplica = c.sync();
            awaitTrue("the replica in sync", () -> onReplica.info("replication").contains("master_link_status:up"));
            RedisSemaphore.Builder builder = first.semaphore("failover").permits(10).lease(Duration.ofSeconds(60));
            RedisSemaphore s = (durable ? builder.replicas(1, Duration.ofSeconds(1)) : builder).build();
            RedisSemaphore other = second.semaphore("failover").build();
            List<Permit> held = new ArrayList<>();
            held.add(s.acquire(2));
            awaitTrue("the first grant replicated", () -> Long.valueOf(2).equals(RedisTestSupport.metaField(onReplica, "failover", "used")));

            // Cut the replica's link and keep it from coming back (its handshake now fails on a password the
            // primary does not have), so that it misses what follows before the primary dies.
            onReplica.configSet("masterauth", "not-the-password");
            try (StatefulRedisConnection<String, String> toPrimary = inspector.connect(
                    RedisURI.create(primary.uri()))) {
                toPrimary.sync().clientKill(KillArgs.Builder.typeSlave());
            }
            for (int i = 0; i < 5; i++) {
                try {
                    held.add(s.tryAcquire(1).orElseThrow());
                } catch (RedisSemaphoreException notReplicated) {
                    assertThat(durable).as("only replicas() refuses: " + notReplicated).isTrue();
                }
            }
            primary.kill();
            awaitTrue("the replica promoted", () -> onReplica.info("replication").contains("role:master"));

            long believed = held.stream().mapToLong(Permit::permits).sum();
            long grantable = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            for (;;) {
                try {
                    grantable = other.availablePermits();
                    break;
                } catch (RedisSemaphoreException notYet) {
                    assertThat(System.nanoTime() - deadline).as("the handle reaches the new primary").isNegative();
                    Thread.sleep(50);
                }
            }
            return Math.max(0, believed + grantable - 10);
        } finally {
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * {@code replicas(1, timeout)} after a failover that leaves the new primary without a replica: every
     * grant is refused (the safe choice: an unreplicated grant could be lost in the next failover), with a
     * message that says why, until a replica joins the new primary.
     */
    @Test
    void withReplicasEveryGrantIsRefusedUntilTheNewPrimaryHasAReplicaAgain() throws Exception {
        Setup setup = primaryReplicaAndSentinels();
        RedisServer.Binary binary = setup.binary();
        RedisServer primary = setup.primary();
        RedisServer replica = setup.replica();
        List<Integer> ports = setup.sentinels();
        RedisClient inspector = RedisClient.create(replica.uri());
        try (StatefulRedisConnection<String, String> c = inspector.connect();
                RedisSemaphores fleet = RedisSemaphores.connect(sentinelUri(ports))) {
            RedisCommands<String, String> onReplica = c.sync();
            awaitTrue("the replica in sync", () -> onReplica.info("replication").contains("master_link_status:up"));
            RedisSemaphore s = fleet.semaphore("lonely").permits(3).replicas(1, Duration.ofMillis(300)).build();
            s.acquire().close(); // replicated: granted

            primary.kill();
            awaitTrue("the replica promoted", () -> onReplica.info("replication").contains("role:master"));
            int refused = 0;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() - until < 0) {
                try {
                    s.tryAcquire().ifPresent(Permit::close);
                    throw new AssertionError("a grant was acknowledged by a primary without a replica");
                } catch (RedisSemaphoreException e) {
                    if (e.getMessage().contains("reached 0 of the 1 replicas")) {
                        assertThat(e.getMessage()).contains("until enough replicas join");
                        refused++;
                    }
                }
                Thread.sleep(100);
            }
            assertThat(refused).as("grants refused while the new primary has no replica").isPositive();
            assertThat(RedisTestSupport.metaField(onReplica, "lonely", "used")).as("each was given back").isZero();

            RedisServer joined = RedisServer.builder(binary).replicaOf(replica.port()).start();
            servers.add(joined);
            awaitTrue("a grant is acknowledged again once a replica joined", () -> {
                try {
                    s.tryAcquire().ifPresent(Permit::close);
                    return true;
                } catch (RedisSemaphoreException stillAlone) {
                    return false;
                }
            });
        } finally {
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    private static void awaitTrue(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!holds(condition)) {
            assertThat(System.nanoTime() - deadline).as("timed out waiting until " + what).isNegative();
            Thread.sleep(50);
        }
    }

    /** A sentinel that promotes a replica kills its normal clients, the inspector's too: not yet, then. */
    private static boolean holds(java.util.function.BooleanSupplier condition) {
        try {
            return condition.getAsBoolean();
        } catch (io.lettuce.core.RedisException reset) {
            return false;
        }
    }
}
