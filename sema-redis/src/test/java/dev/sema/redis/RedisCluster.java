package dev.sema.redis;

import dev.sema.testing.RedisServer;
import io.lettuce.core.MigrateArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * A throw-away Redis Cluster of local {@link RedisServer}s on random loopback ports, masters only (or with a
 * replica each: {@link #startWithReplicas}), formed
 * without {@code redis-cli} (so that it works with the bundled binary too): each node gets its own config
 * epoch and a third of the slots, the first node meets the others, then we wait until every node reports
 * {@code cluster_state:ok} and knows every other.
 */
final class RedisCluster implements AutoCloseable {
    static final int SLOTS = 16384;

    final List<RedisServer> nodes = new ArrayList<>();
    /** With {@link #startWithReplicas}: replicas.get(i) replicates master i (stopped by {@link #killReplica}). */
    final List<RedisServer> replicas = new ArrayList<>();
    private final List<RedisCommands<String, String>> replicaAdmin = new ArrayList<>();
    private final List<RedisClient> clients = new ArrayList<>();
    private final List<RedisCommands<String, String>> admin = new ArrayList<>();

    private RedisCluster() {
    }

    static RedisCluster start(RedisServer.Binary binary, int masters) throws IOException, InterruptedException {
        RedisCluster cluster = new RedisCluster();
        try {
            cluster.form(binary, masters);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            cluster.close();
            throw e;
        }
    }

    /**
     * As {@link #start}, then one replica per master: each meets the cluster, follows its master (CLUSTER
     * REPLICATE), and we wait until every replica is in sync and every master counts it.
     */
    static RedisCluster startWithReplicas(RedisServer.Binary binary, int masters)
            throws IOException, InterruptedException {
        RedisCluster cluster = new RedisCluster();
        try {
            cluster.form(binary, masters);
            cluster.addReplicas(binary);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            cluster.close();
            throw e;
        }
    }

    private void addReplicas(RedisServer.Binary binary) throws IOException, InterruptedException {
        int masters = nodes.size();
        for (int i = 0; i < masters; i++) {
            RedisServer node = RedisServer.builder(binary).cluster().args("--cluster-node-timeout", "5000").start();
            replicas.add(node);
            RedisClient client = RedisClient.create(RedisTestSupport.uri(node));
            clients.add(client);
            RedisCommands<String, String> c = client.connect().sync();
            replicaAdmin.add(c);
            admin.get(0).clusterMeet("127.0.0.1", node.port());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int i = 0; i < masters; i++) {
            String masterId = admin.get(i).clusterMyId();
            RedisCommands<String, String> replica = replicaAdmin.get(i);
            // CLUSTER REPLICATE needs the replica to know its master first.
            while (!replica.clusterNodes().contains(masterId)) {
                check(deadline, "replica " + i + " to learn of its master");
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
            replica.clusterReplicate(masterId);
        }
        for (int i = 0; i < masters; i++) {
            while (!replicaAdmin.get(i).info("replication").contains("master_link_status:up")
                    || !admin.get(i).info("replication").contains("connected_slaves:1")
                    || !formed(2 * masters, admin) || !formed(2 * masters, replicaAdmin)) {
                check(deadline, "replica " + i + " in sync, and every node to know every other");
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
            replicaAdmin.get(i).readOnly(); // so that a test reads the replica's own copy
        }
    }

    private void check(long deadline, String what) {
        if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("waited 30 s for " + what + ": "
                    + admin.stream().map(RedisCommands::clusterNodes).collect(Collectors.joining("\n")));
        }
    }

    /** A plain connection to the replica of master {@code i}, in READONLY mode: its own copy of the data. */
    RedisCommands<String, String> replica(int i) {
        return replicaAdmin.get(i);
    }

    /** Stops the replica of master {@code i}: its master then has none. */
    void killReplica(int i) throws IOException, InterruptedException {
        replicas.get(i).close();
    }

    private void form(RedisServer.Binary binary, int masters) throws IOException, InterruptedException {
        for (int i = 0; i < masters; i++) {
            RedisServer node = RedisServer.builder(binary).cluster().args("--cluster-node-timeout", "5000").start();
            nodes.add(node);
            RedisClient client = RedisClient.create(RedisTestSupport.uri(node));
            clients.add(client);
            StatefulRedisConnection<String, String> c = client.connect();
            admin.add(c.sync());
        }
        for (int i = 0; i < masters; i++) {
            RedisCommands<String, String> node = admin.get(i);
            node.clusterSetConfigEpoch(i + 1);
            int from = i * SLOTS / masters;
            int to = (i + 1) * SLOTS / masters; // exclusive
            int[] slots = new int[to - from];
            for (int s = from; s < to; s++) {
                slots[s - from] = s;
            }
            node.clusterAddSlots(slots); // ADDSLOTSRANGE would need Redis 7
        }
        for (int i = 1; i < masters; i++) {
            admin.get(0).clusterMeet("127.0.0.1", nodes.get(i).port());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!formed(masters, admin)) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("the cluster did not form within 20 s: "
                        + admin.stream().map(RedisCommands::clusterInfo).collect(Collectors.joining("\n")));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    private static boolean formed(int known, List<RedisCommands<String, String>> nodes) {
        for (RedisCommands<String, String> node : nodes) {
            String info = node.clusterInfo();
            if (!info.contains("cluster_state:ok") || !info.contains("cluster_known_nodes:" + known + "\r")
                    || !info.contains("cluster_slots_ok:" + SLOTS)) {
                return false;
            }
        }
        return true;
    }

    /** Every node, comma-separated, as {@link RedisSemaphores#connectCluster(String)} takes them. */
    String uri() {
        return "redis://" + nodes.stream().map(n -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","))
                + "?timeout=5s";
    }

    /** A plain (non-cluster) connection to node {@code i}, for its own view: INFO, PUBSUB, SCRIPT. */
    RedisCommands<String, String> node(int i) {
        return admin.get(i);
    }

    /** For each master i, in order, the first name {@code prefix-N} whose slot master i was given. */
    List<String> namesOnEachMaster(String prefix) {
        List<String> names = new ArrayList<>();
        for (int master = 0; master < nodes.size(); master++) {
            for (int i = 0; ; i++) {
                String name = prefix + "-" + i;
                if (nodeOf(SlotHash.getSlot(name)) == master) {
                    names.add(name);
                    break;
                }
            }
        }
        return names;
    }

    /** The node that was given {@code slot} when the cluster formed. */
    int nodeOf(int slot) {
        for (int i = 0; i < nodes.size(); i++) {
            if (slot < (i + 1) * SLOTS / nodes.size()) {
                return i;
            }
        }
        throw new IllegalArgumentException("no slot " + slot);
    }

    /**
     * Moves {@code slot} and its keys from master {@code from} to master {@code to}, as a resharding does:
     * IMPORTING and MIGRATING, MIGRATE of every key, then the new owner on every node.
     */
    void moveSlot(int slot, int from, int to) {
        String fromId = admin.get(from).clusterMyId();
        String toId = admin.get(to).clusterMyId();
        admin.get(to).clusterSetSlotImporting(slot, fromId);
        admin.get(from).clusterSetSlotMigrating(slot, toId);
        for (List<String> keys; !(keys = admin.get(from).clusterGetKeysInSlot(slot, 100)).isEmpty(); ) {
            admin.get(from).migrate("127.0.0.1", nodes.get(to).port(), 0, 5000, MigrateArgs.Builder.keys(keys));
        }
        admin.get(to).clusterSetSlotNode(slot, toId);
        admin.get(from).clusterSetSlotNode(slot, toId);
        for (int i = 0; i < nodes.size(); i++) {
            if (i != from && i != to) {
                admin.get(i).clusterSetSlotNode(slot, toId);
            }
        }
    }

    @Override
    public void close() throws IOException, InterruptedException {
        for (RedisClient c : clients) {
            c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        for (RedisServer n : nodes) {
            n.close();
        }
        for (RedisServer n : replicas) {
            n.close();
        }
    }
}
