package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.RedisServer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

/**
 * A Redis Cluster of three primaries with a replica each, every node with an append-only file and a node
 * timeout of 2 s: the workers connect as users do, with a cluster client given every node, and follow
 * redirections and failovers.
 *
 * <p>Each node advertises its node proxies ({@code cluster-announce-port}, {@code cluster-announce-bus-port}),
 * so replication, the cluster bus and MIGRATE all go through them, and connects from a loopback address of its
 * own ({@code bind-source-addr} 127.0.1.<i>i+1</i>), so a node proxy tells which node a link comes from: the
 * scheduler can cut one node from everything, or a primary from the other nodes while workers still reach it.
 *
 * <table>
 *   <caption>The topology's faults, beside {@link Faults}'s (L = the lease)</caption>
 *   <tr><th>kind</th><th>weight</th><th>what</th></tr>
 *   <tr><td>kill-primary</td><td>2</td><td>a primary killed (SIGKILL); restarted from its file once its replica
 *       took over, or after 4 to 10 s</td></tr>
 *   <tr><td>migrate-slot</td><td>3</td><td>the slot of one of the run's semaphores moved to another primary while
 *       it is used: IMPORTING and MIGRATING, 0 to 1 L, MIGRATE of its keys (all at once), 0 to 1 L, then the
 *       new owner on every node</td></tr>
 *   <tr><td>partition-node</td><td>2</td><td>one node (primary or replica) cut off from everything, both ways,
 *       0.5 to 3 L</td></tr>
 *   <tr><td>partition-primary-cluster</td><td>1</td><td>with {@code splitbrain} only: a primary cut off from the
 *       other nodes only; the workers still reach it, 0.5 to 3 L</td></tr>
 * </table>
 * Without {@code splitbrain}, every fault cuts a primary from the workers as well as from its replica, so a
 * holder's renewals stop with its replication; a primary that stays reachable while its replica is promoted
 * grants and renews what the replica never learns of, which only WAIT prevents: the workers'
 * {@code replicas(1, timeout)} (the run's default here), whose WAIT follows each grant and renewal on its
 * slot's primary.
 * A Redis restart and SCRIPT FLUSH hit one primary of the moment.
 *
 * <p>Needs Redis 7 or newer ({@code bind-source-addr}, {@code CLUSTER MEET} with a bus port).
 */
final class ClusterRedis extends Topology {
    static final int SLOTS = 16384;
    private static final int PRIMARIES = 3;

    private final List<RedisServer> nodes = new ArrayList<>();
    private final List<FaultProxy> clientProxies = new ArrayList<>();
    private final List<FaultProxy> busProxies = new ArrayList<>();
    /**
     * Slot to the advertised port of its owner, as CLUSTER SLOTS last said, and when: replaced whole by
     * {@link #refresh} (the sampler's thread and the scheduler's both refresh it), never changed in place.
     */
    private record SlotMap(int[] owners, long at) {
    }

    private volatile SlotMap slots = new SlotMap(new int[SLOTS], System.nanoTime() - TimeUnit.HOURS.toNanos(1));

    private final boolean splitBrain;

    private ClusterRedis(boolean splitBrain) {
        this.splitBrain = splitBrain;
    }

    /**
     * Starts the cluster; with {@code splitBrain}, its faults include cutting a primary from the other nodes
     * while workers still reach it.
     */
    static ClusterRedis start(RedisServer.Binary binary, Path dir, boolean splitBrain) throws Exception {
        if (!atLeast7(binary.version())) {
            throw new IllegalStateException("topology=cluster needs Redis 7 or newer (bind-source-addr), found "
                    + binary);
        }
        ClusterRedis t = new ClusterRedis(splitBrain);
        try {
            int count = 2 * PRIMARIES;
            for (int i = 0; i < count; i++) {
                RedisServer n = RedisServer.builder(binary).cluster().appendOnly().directory(dir.resolve("n" + i))
                        .args("--protected-mode", "no", "--bind-source-addr", source(i),
                                "--cluster-node-timeout", "2000", "--cluster-announce-ip", "127.0.0.1",
                                "--cluster-replica-validity-factor", "0", "--repl-ping-replica-period", "1")
                        .start();
                t.nodes.add(n);
                t.clientProxies.add(FaultProxy.start("127.0.0.1", n.port()));
                t.busProxies.add(FaultProxy.start("127.0.0.1", n.port() + 10_000));
                t.announce(i);
            }
            for (int i = 0; i < PRIMARIES; i++) {
                t.call(i, "CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
                int from = i * SLOTS / PRIMARIES;
                int to = (i + 1) * SLOTS / PRIMARIES - 1;
                t.call(i, "CLUSTER", "ADDSLOTSRANGE", Integer.toString(from), Integer.toString(to));
            }
            for (int i = 1; i < count; i++) {
                t.call(0, "CLUSTER", "MEET", "127.0.0.1", Integer.toString(t.clientProxies.get(i).port()),
                        Integer.toString(t.busProxies.get(i).port()));
            }
            await("every node knowing the 6", Duration.ofSeconds(30), () -> {
                for (int i = 0; i < count; i++) {
                    if (!t.info(i).contains("cluster_known_nodes:" + count + "\r")) {
                        return false;
                    }
                }
                return true;
            });
            for (int i = PRIMARIES; i < count; i++) {
                String primaryId = String.valueOf(t.call(i - PRIMARIES, "CLUSTER", "MYID"));
                t.call(i, "CLUSTER", "REPLICATE", primaryId);
            }
            await("the cluster serving every slot, each primary with its replica in sync", Duration.ofSeconds(60),
                    t::healthy);
            t.refresh();
            return t;
        } catch (Exception | Error e) {
            t.close();
            throw e;
        }
    }

    /** The loopback address node {@code i} connects from. */
    static String source(int i) {
        return "127.0.1." + (i + 1);
    }

    private Object call(int node, String... command) throws IOException {
        Object r = Resp.call(nodes.get(node).port(), 5_000, command);
        if (r instanceof Resp.Error e) {
            throw new IOException("n" + node + ": " + String.join(" ", command) + " answered " + e.message());
        }
        return r;
    }

    private String info(int node) {
        try {
            return String.valueOf(Resp.call(nodes.get(node).port(), 1_000, "CLUSTER", "INFO"));
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /** The node advertises its node proxies (a restart loses what CONFIG SET gave it). */
    private void announce(int i) throws IOException {
        call(i, "CONFIG", "SET", "cluster-announce-port", Integer.toString(clientProxies.get(i).port()),
                "cluster-announce-bus-port", Integer.toString(busProxies.get(i).port()));
    }

    /** Every node running says the cluster is ok, and every primary has a replica in sync. */
    private boolean healthy() {
        int primaries = 0;
        for (int i = 0; i < nodes.size(); i++) {
            if (!nodes.get(i).isRunning()) {
                return false;
            }
            String ci = info(i);
            if (!ci.contains("cluster_state:ok") || !ci.contains("cluster_slots_ok:" + SLOTS + "\r")) {
                return false;
            }
            String repl = replication(i);
            if (repl.contains("role:master")) {
                primaries++;
                if (!repl.contains("connected_slaves:1") || !openSlots(i).isEmpty()) {
                    return false;
                }
            } else if (!repl.contains("master_link_status:up")) {
                return false;
            }
        }
        return primaries == PRIMARIES;
    }

    /** The slots node {@code i} is migrating or importing, by its own CLUSTER NODES line ({@code [slot->-id]}). */
    private List<Integer> openSlots(int i) {
        List<Integer> open = new ArrayList<>();
        try {
            for (String line : String.valueOf(Resp.call(nodes.get(i).port(), 1_000, "CLUSTER", "NODES")).split("\n")) {
                if (!line.contains("myself")) {
                    continue;
                }
                for (String f : line.trim().split(" ")) {
                    if (f.startsWith("[")) {
                        open.add(Integer.parseInt(f.substring(1, f.indexOf('-'))));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // unknown: healthy() asks again
        }
        return open;
    }

    private String replication(int i) {
        try {
            return String.valueOf(Resp.call(nodes.get(i).port(), 1_000, "INFO", "replication"));
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    @Override
    String describe() {
        return "cluster (3 primaries with a replica each, append-only files, node timeout 2 s)";
    }

    @Override
    List<Endpoint> endpoints() {
        List<Endpoint> e = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            e.add(new Endpoint("n" + i, clientProxies.get(i).port(), nodes.get(i).port()));
        }
        return e;
    }

    @Override
    String workerUri(Map<String, FaultProxy> proxies) {
        StringJoiner seeds = new StringJoiner(",");
        for (FaultProxy p : clientProxies) {
            seeds.add("127.0.0.1:" + p.port()); // advertised: mapped to the worker's own proxies by its client
        }
        return "cluster:redis://" + seeds + "?timeout=1s";
    }

    @Override
    boolean mapped() {
        return true;
    }

    @Override
    int locate(String semaphore) {
        SlotMap m = slots;
        if (System.nanoTime() - m.at() > TimeUnit.SECONDS.toNanos(1)) {
            m = refresh();
        }
        return target(m.owners()[slot(semaphore)]);
    }

    @Override
    void moved() {
        refresh();
    }

    /** The hash slot of a semaphore's keys ({@code sem:{name}:...}): CRC16 (XMODEM) of the name, mod 16384. */
    static int slot(String semaphore) {
        int crc = 0;
        for (byte b : semaphore.getBytes(StandardCharsets.UTF_8)) {
            crc ^= (b & 0xff) << 8;
            for (int k = 0; k < 8; k++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
        }
        return (crc & 0xffff) % SLOTS;
    }

    /**
     * Reads CLUSTER SLOTS from the first node that says the cluster is ok (one cut off, or just restarted, may
     * still hold an old map), else from the first that answers; keeps the old map if none does.
     */
    private SlotMap refresh() {
        for (boolean needOk : new boolean[] {true, false}) {
            for (int i = 0; i < nodes.size(); i++) {
                try {
                    if (needOk && !info(i).contains("cluster_state:ok")) {
                        continue;
                    }
                    Object r = Resp.call(nodes.get(i).port(), 1_000, "CLUSTER", "SLOTS");
                    if (!(r instanceof List<?> ranges) || ranges.isEmpty()) {
                        continue;
                    }
                    int[] owners = new int[SLOTS];
                    for (Object o : ranges) {
                        List<?> range = (List<?>) o;
                        int from = ((Long) range.get(0)).intValue();
                        int to = ((Long) range.get(1)).intValue();
                        int port = ((Long) ((List<?>) range.get(2)).get(1)).intValue();
                        for (int s = from; s <= to; s++) {
                            owners[s] = port;
                        }
                    }
                    SlotMap m = new SlotMap(owners, System.nanoTime());
                    slots = m;
                    return m;
                } catch (IOException | RuntimeException e) {
                    // the next node
                }
            }
        }
        return slots;
    }

    /** The primaries of the moment, by node index. */
    private List<Integer> primaries() {
        List<Integer> p = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            if (nodes.get(i).isRunning() && replication(i).contains("role:master")) {
                p.add(i);
            }
        }
        return p;
    }

    @Override
    RedisServer primary() throws IOException {
        List<Integer> p = primaries();
        if (p.isEmpty()) {
            throw new IOException("no primary answers");
        }
        return nodes.get(p.get(0));
    }

    @Override
    String nameOf(RedisServer server) {
        return "n" + nodes.indexOf(server);
    }

    /**
     * Restarts a node; its nodes file brings back its place in the cluster. It advertises its node proxies again
     * once it answers: until then (milliseconds) its first gossip may carry its own ports, which its peers and
     * the workers' clients then use, past the proxies, until its next ping corrects them.
     */
    @Override
    void restart(RedisServer server) throws IOException, InterruptedException {
        server.restart();
        announce(nodes.indexOf(server));
    }

    /**
     * The primary that owns {@code slot} by its own account (CLUSTER NODES, its "myself" line), by index; -1 if
     * none says so. Another node's CLUSTER SLOTS may still name an owner that a failover replaced.
     */
    private int ownerOf(int slot) {
        for (int i : primaries()) {
            if (owns(i, slot)) {
                return i;
            }
        }
        return -1;
    }

    /** Whether a CLUSTER NODES line lists {@code slot} among its node's slots (fields 9 on: a, a-b, [migrating]). */
    static boolean owns(String line, int slot) {
        String[] f = line.trim().split(" ");
        for (int k = 8; k < f.length; k++) {
            String range = f[k];
            if (range.startsWith("[")) {
                continue;
            }
            int dash = range.indexOf('-');
            int from = Integer.parseInt(dash < 0 ? range : range.substring(0, dash));
            int to = dash < 0 ? from : Integer.parseInt(range.substring(dash + 1));
            if (slot >= from && slot <= to) {
                return true;
            }
        }
        return false;
    }

    @Override
    List<Fault> faults() {
        List<Fault> faults = new ArrayList<>(List.of(
                fault("kill-primary", 2, (f, r) -> {
                    List<Integer> p = primaries();
                    if (p.isEmpty()) {
                        throw new IOException("no primary answers");
                    }
                    int victim = p.get(r.nextInt(p.size()));
                    String target = "n" + victim;
                    f.begin("kill-primary", target);
                    try {
                        nodes.get(victim).kill();
                        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(4_000 + r.nextInt(6_000));
                        boolean replaced = false;
                        while (!replaced && System.nanoTime() - deadline < 0) {
                            Thread.sleep(100);
                            replaced = primaries().size() == PRIMARIES;
                        }
                        restart(nodes.get(victim));
                        f.note("kill-primary " + target + (replaced ? ": its replica took over"
                                : ": back before a failover"));
                    } finally {
                        f.end("kill-primary", target);
                    }
                }),
                fault("migrate-slot", 3, this::migrate),
                fault("partition-node", 2, (f, r) -> isolate(f, "partition-node", r.nextInt(nodes.size()), true,
                        f.leases(0.5, 3)))));
        if (splitBrain) {
            faults.add(fault("partition-primary-cluster", 1, (f, r) -> {
                List<Integer> p = primaries();
                if (p.isEmpty()) {
                    throw new IOException("no primary answers");
                }
                isolate(f, "partition-primary-cluster", p.get(r.nextInt(p.size())), false, f.leases(0.5, 3));
            }));
        }
        return faults;
    }

    /**
     * Cuts node {@code victim} from the other nodes, both ways: its own node proxies, and the other nodes' proxies
     * for links from its address; with {@code workers}, from every worker too.
     */
    private void isolate(Faults f, String kind, int victim, boolean workers, Duration length) throws Exception {
        String target = "n" + victim;
        f.begin(kind, target);
        try {
            // Node proxies carry only the nodes' own links (replication, the bus, MIGRATE): workers have proxies
            // of their own, and the sampler reads the nodes directly.
            clientProxies.get(victim).partition(FaultProxy.Direction.BOTH);
            busProxies.get(victim).partition(FaultProxy.Direction.BOTH);
            for (int i = 0; i < nodes.size(); i++) {
                if (i != victim) {
                    clientProxies.get(i).partition(FaultProxy.Direction.BOTH, from(source(victim)));
                    busProxies.get(i).partition(FaultProxy.Direction.BOTH, from(source(victim)));
                }
            }
            if (workers) {
                for (Fleet.Slot s : f.slots()) {
                    s.proxies.get(target).partition(FaultProxy.Direction.BOTH);
                }
            }
            Faults.sleep(length);
        } finally {
            healProxies();
            if (workers) {
                for (Fleet.Slot s : f.slots()) {
                    s.proxies.get(target).heal();
                }
            }
            f.end(kind, target);
        }
    }

    private void healProxies() {
        clientProxies.forEach(FaultProxy::heal);
        busProxies.forEach(FaultProxy::heal);
    }

    /**
     * Moves the slot of one of the run's semaphores, one that Redis has now, to another primary while it is
     * used, as a resharding does.
     */
    private void migrate(Faults f, Random r) throws Exception {
        List<String> names = new ArrayList<>(f.semaphores());
        java.util.Collections.shuffle(names, r);
        String name = null;
        int from = -1;
        for (String n : names) {
            int owner = ownerOf(slot(n));
            if (owner >= 0 && Long.valueOf(1).equals(Resp.call(nodes.get(owner).port(), 1_000, "EXISTS",
                    "sem:{" + n + "}:meta"))) {
                name = n;
                from = owner;
                break;
            }
        }
        List<Integer> others = primaries();
        others.remove(Integer.valueOf(from));
        if (name == null || others.isEmpty()) {
            f.note("migrate-slot: skipped, no semaphore stored on a primary that says it owns its slot");
            return;
        }
        int slot = slot(name);
        int to = others.get(r.nextInt(others.size()));
        String target = name + " slot " + slot + " n" + from + ">n" + to;
        String s = Integer.toString(slot);
        f.begin("migrate-slot", target);
        try {
            String fromId = String.valueOf(call(from, "CLUSTER", "MYID"));
            String toId = String.valueOf(call(to, "CLUSTER", "MYID"));
            call(to, "CLUSTER", "SETSLOT", s, "IMPORTING", fromId);
            call(from, "CLUSTER", "SETSLOT", s, "MIGRATING", toId);
            Faults.sleep(f.leases(0, 1));
            int moved = 0;
            for (;;) {
                List<?> keys = (List<?>) call(from, "CLUSTER", "GETKEYSINSLOT", s, "100");
                if (keys.isEmpty()) {
                    break;
                }
                List<String> command = new ArrayList<>(List.of("MIGRATE", "127.0.0.1",
                        Integer.toString(clientProxies.get(to).port()), "", "0", "5000", "KEYS"));
                for (Object k : keys) {
                    command.add(String.valueOf(k));
                }
                // Up to 100 keys in one MIGRATE, atomic on the source: a semaphore's few keys move together.
                call(from, command.toArray(String[]::new));
                moved += keys.size();
            }
            Faults.sleep(f.leases(0, 1));
            call(to, "CLUSTER", "SETSLOT", s, "NODE", toId);
            call(from, "CLUSTER", "SETSLOT", s, "NODE", toId);
            for (int i : primaries()) {
                if (i != from && i != to) {
                    call(i, "CLUSTER", "SETSLOT", s, "NODE", toId);
                }
            }
            f.note("migrate-slot " + target + ": " + moved + " keys");
        } catch (IOException | RuntimeException e) {
            f.note("migrate-slot " + target + ": failed (" + e.getMessage() + "); settling the slot");
            settle(slot);
        } finally {
            f.end("migrate-slot", target);
        }
        refresh();
    }

    /**
     * Ends a move of {@code slot} that failed half-way: every primary is told that the slot belongs to the
     * primary holding most of its keys (all of them, unless a MIGRATE of more than 100 failed between two).
     */
    private void settle(int slot) {
        String s = Integer.toString(slot);
        int owner = -1;
        long most = -1;
        for (int i : primaries()) {
            try {
                long keys = (Long) call(i, "CLUSTER", "COUNTKEYSINSLOT", s);
                if (keys > most || keys == most && owns(i, slot)) {
                    most = keys;
                    owner = i;
                }
            } catch (IOException | RuntimeException e) {
                // not this one
            }
        }
        if (owner < 0) {
            return; // heal() waits for a cluster without open slots, and says so if it finds one
        }
        try {
            String id = String.valueOf(call(owner, "CLUSTER", "MYID"));
            for (int i : primaries()) {
                call(i, "CLUSTER", "SETSLOT", s, "NODE", id);
            }
        } catch (IOException | RuntimeException e) {
            // as above
        }
    }

    /** Whether node {@code i} says it owns {@code slot}. */
    private boolean owns(int i, int slot) {
        try {
            for (String line : String.valueOf(Resp.call(nodes.get(i).port(), 1_000, "CLUSTER", "NODES")).split("\n")) {
                if (line.contains("myself") && owns(line, slot)) {
                    return true;
                }
            }
        } catch (IOException | RuntimeException e) {
            // no answer: not known to own it
        }
        return false;
    }

    @Override
    void heal(PrintStream out) throws Exception {
        healProxies();
        for (RedisServer n : nodes) {
            if (!n.isRunning()) {
                restart(n);
            }
        }
        for (int i : primaries()) {
            for (int slot : openSlots(i)) {
                out.println("chaos: slot " + slot + " left open on n" + i + "; settling it");
                settle(slot);
            }
        }
        long started = System.nanoTime();
        try {
            await("cluster serving every slot, each primary with its replica in sync", Duration.ofSeconds(60),
                    this::healthy);
        } catch (IllegalStateException e) {
            out.println("chaos: " + e.getMessage());
            return;
        }
        refresh();
        out.printf("chaos: cluster whole again, %d ms after the faults%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    }

    @Override
    public void close() throws Exception {
        List<AutoCloseable> all = new ArrayList<>(clientProxies);
        all.addAll(busProxies);
        all.addAll(nodes);
        closeAll(all);
    }
}
