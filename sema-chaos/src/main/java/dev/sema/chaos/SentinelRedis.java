package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.RedisServer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A primary and two replicas, each with an append-only file, watched by three Sentinels (quorum 2, a node
 * judged down after 1 s): the workers connect as users do, with a {@code redis-sentinel://} URI naming the
 * Sentinels, and follow failovers through them.
 *
 * <p>Every node is reached, by Sentinels and replicas alike, through its node proxy, whose port is the address
 * the node advertises ({@code replica-announce-port}, and the port the Sentinels monitor), so the scheduler can
 * cut the primary from its Sentinels (it is then voted down and a replica promoted, while workers that still
 * reach it go on using it: the split brain that asynchronous replication cannot survive unhurt), from its
 * replicas, or from some workers only. Besides, it kills the primary (a replica is promoted; the old primary
 * comes back from its file and Sentinel makes it a replica) and forces failovers ({@code SENTINEL FAILOVER}).
 *
 * <table>
 *   <caption>The topology's faults, beside {@link Faults}'s (L = the lease)</caption>
 *   <tr><th>kind</th><th>weight</th><th>what</th></tr>
 *   <tr><td>kill-primary</td><td>2</td><td>the primary killed (SIGKILL); restarted from its file once Sentinel
 *       promoted another node, or after 3 to 9 s</td></tr>
 *   <tr><td>partition-primary-sentinels</td><td>1</td><td>the primary cut off from the Sentinels only, both ways,
 *       0.5 to 3 L</td></tr>
 *   <tr><td>partition-primary-replicas</td><td>1</td><td>the primary cut off from its replicas only, 0.2 to 3 L</td></tr>
 *   <tr><td>partition-primary-workers</td><td>1</td><td>the primary cut off from 1 to half the workers (their
 *       links to the other nodes and the Sentinels stay), 0.2 to 3 L</td></tr>
 *   <tr><td>failover</td><td>1</td><td>{@code SENTINEL FAILOVER} on one Sentinel, waited for up to 10 s</td></tr>
 * </table>
 * A Redis restart and SCRIPT FLUSH hit the primary of the moment.
 *
 * <p>Needs Redis 7 or newer ({@code bind-source-addr}, which tells Sentinels from replicas at the node proxy).
 */
final class SentinelRedis extends Topology {
    static final String MASTER = "chaos";
    private static final int NODES = 3;
    private static final int SENTINEL_COUNT = 3;

    private final List<RedisServer> nodes = new ArrayList<>();
    private final List<FaultProxy> nodeProxies = new ArrayList<>();
    private final List<RedisServer> sentinels = new ArrayList<>();
    /** Per node killed and not yet restarted: the advertised port of the primary it followed, or -1. */
    private final Map<Integer, Integer> lastMaster = new java.util.concurrent.ConcurrentHashMap<>();

    private SentinelRedis() {
    }

    static SentinelRedis start(RedisServer.Binary binary, Path dir) throws Exception {
        if (!atLeast7(binary.version())) {
            throw new IllegalStateException("topology=sentinel needs Redis 7 or newer (bind-source-addr), found "
                    + binary);
        }
        SentinelRedis t = new SentinelRedis();
        try {
            for (int i = 0; i < NODES; i++) {
                // Every node starts as a primary, and its role is given at run time (REPLICAOF), as Sentinel gives
                // it: a node restarted comes back in the role it had (see restart), not in one fixed at its start.
                RedisServer n = RedisServer.builder(binary).appendOnly().directory(dir.resolve("n" + i))
                        .args("--protected-mode", "no", "--bind-source-addr", REPLICAS,
                                "--replica-announce-ip", "127.0.0.1", "--repl-ping-replica-period", "1").start();
                t.nodes.add(n);
                t.nodeProxies.add(FaultProxy.start("127.0.0.1", n.port()));
                t.announce(i);
                if (i > 0) {
                    t.replicaOf(i, t.nodeProxies.get(0).port());
                }
            }
            await("2 replicas in sync with n0", Duration.ofSeconds(30), () -> t.connectedReplicas(0) == 2);
            for (int i = 0; i < SENTINEL_COUNT; i++) {
                t.sentinels.add(RedisServer.builder(binary).directory(dir.resolve("s" + i)).sentinel(List.of(
                        "sentinel monitor " + MASTER + " 127.0.0.1 " + t.nodeProxies.get(0).port() + " 2",
                        "sentinel down-after-milliseconds " + MASTER + " 1000",
                        "sentinel failover-timeout " + MASTER + " 3000",
                        // Else it announces the address it connects from, where nothing listens.
                        "sentinel announce-ip 127.0.0.1",
                        "sentinel parallel-syncs " + MASTER + " 2"))
                        .args("--protected-mode", "no", "--bind-source-addr", SENTINELS).start());
            }
            await("every Sentinel knowing 2 replicas and 2 other Sentinels", Duration.ofSeconds(30),
                    t::sentinelsAgree);
            return t;
        } catch (Exception | Error e) {
            t.close();
            throw e;
        }
    }

    @Override
    String describe() {
        return "sentinel (a primary and 2 replicas, append-only files; 3 Sentinels, quorum 2, down after 1 s)";
    }

    @Override
    List<Endpoint> endpoints() {
        List<Endpoint> e = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
            e.add(new Endpoint("n" + i, nodeProxies.get(i).port(), nodes.get(i).port()));
        }
        for (int i = 0; i < SENTINEL_COUNT; i++) {
            e.add(new Endpoint("s" + i, sentinels.get(i).port(), sentinels.get(i).port()));
        }
        return e;
    }

    @Override
    String workerUri(Map<String, FaultProxy> proxies) {
        StringJoiner hosts = new StringJoiner(",");
        for (RedisServer s : sentinels) {
            hosts.add("127.0.0.1:" + s.port()); // mapped to the worker's own proxies by its client
        }
        return "redis-sentinel://" + hosts + "?timeout=1s#" + MASTER;
    }

    @Override
    boolean mapped() {
        return true;
    }

    @Override
    int locate(String semaphore) {
        int i = primaryIndex();
        return i < 0 ? -1 : nodes.get(i).port();
    }

    /** The node the Sentinels name as primary (the first that answers), or -1. */
    int primaryIndex() {
        for (RedisServer s : sentinels) {
            try {
                Object r = Resp.call(s.port(), 500, "SENTINEL", "get-master-addr-by-name", MASTER);
                if (r instanceof List<?> l && l.size() == 2) {
                    int advertised = Integer.parseInt(String.valueOf(l.get(1)));
                    for (int i = 0; i < NODES; i++) {
                        if (nodeProxies.get(i).port() == advertised) {
                            return i;
                        }
                    }
                }
            } catch (IOException | RuntimeException e) {
                // the next Sentinel
            }
        }
        return -1;
    }

    @Override
    RedisServer primary() throws IOException {
        int i = primaryIndex();
        if (i < 0) {
            throw new IOException("no Sentinel names a primary");
        }
        return nodes.get(i);
    }

    @Override
    String nameOf(RedisServer server) {
        return "n" + nodes.indexOf(server);
    }

    /**
     * Restarts a node in the role it had when it went down, as a node whose configuration file Sentinel rewrites
     * does (CONFIG REWRITE, which a node started from the command line cannot do): a replica follows its primary
     * again, a primary comes back a primary, and Sentinel makes it a replica if another was promoted meanwhile.
     */
    @Override
    void restart(RedisServer server) throws IOException, InterruptedException {
        int i = nodes.indexOf(server);
        Integer last = lastMaster.remove(i);
        int following = server.isRunning() ? masterPort(i) : last != null ? last : -1;
        server.restart();
        announce(i);
        if (following > 0) {
            replicaOf(i, following);
        }
    }

    /** A node killed by a fault, and the primary it followed then (none if it was a primary). */
    void kill(int i) throws IOException, InterruptedException {
        lastMaster.put(i, masterPort(i));
        nodes.get(i).kill();
    }

    private void replicaOf(int i, int port) throws IOException {
        Object r = Resp.call(nodes.get(i).port(), 2_000, "REPLICAOF", "127.0.0.1", Integer.toString(port));
        if (!(r instanceof String)) {
            throw new IOException("n" + i + ": REPLICAOF answered " + r);
        }
    }

    /** Whether replica {@code i} is in sync with its primary (until then, no WAIT counts it). */
    private boolean inSync(int i) {
        try {
            return String.valueOf(Resp.call(nodes.get(i).port(), 1_000, "INFO", "replication"))
                    .contains("master_link_status:up");
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** The advertised port of the primary node {@code i} follows now, or -1 if it is a primary (or silent). */
    private int masterPort(int i) {
        try {
            String s = String.valueOf(Resp.call(nodes.get(i).port(), 1_000, "INFO", "replication"));
            int at = s.indexOf("master_port:");
            if (!s.contains("role:slave") || at < 0) {
                return -1;
            }
            return Integer.parseInt(s.substring(at + 12, s.indexOf('\r', at)).trim());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The node advertises its node proxy (a restart loses what CONFIG SET gave it). */
    private void announce(int i) throws IOException {
        Object r = Resp.call(nodes.get(i).port(), 2_000, "CONFIG", "SET", "replica-announce-port",
                Integer.toString(nodeProxies.get(i).port()));
        if (!"OK".equals(r)) {
            throw new IOException("n" + i + ": CONFIG SET replica-announce-port answered " + r);
        }
    }

    private int connectedReplicas(int i) {
        try {
            Object info = Resp.call(nodes.get(i).port(), 1_000, "INFO", "replication");
            String s = String.valueOf(info);
            int at = s.indexOf("connected_slaves:");
            if (at < 0 || !s.contains("role:master")) {
                return -1;
            }
            return Integer.parseInt(s.substring(at + 17, s.indexOf('\r', at)).trim());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * Whether every Sentinel sees the primary up with nothing pending (flags exactly "master"): a primary cut
     * off longer than the down-after period may be promoted away only after the cut ended, while the Sentinels
     * still name it; until they are quiet, {@link #settle} cannot tell that from no failover at all.
     */
    private boolean sentinelsQuiet() {
        for (RedisServer s : sentinels) {
            try {
                Object r = Resp.call(s.port(), 1_000, "SENTINEL", "master", MASTER);
                if (!(r instanceof List<?> l) || !"master".equals(field(l, "flags"))) {
                    return false;
                }
            } catch (IOException | RuntimeException e) {
                return false;
            }
        }
        return true;
    }

    private boolean sentinelsAgree() {
        for (RedisServer s : sentinels) {
            try {
                Object r = Resp.call(s.port(), 1_000, "SENTINEL", "master", MASTER);
                if (!(r instanceof List<?> l)) {
                    return false;
                }
                String slavesCount = field(l, "num-slaves");
                String others = field(l, "num-other-sentinels");
                if (!"2".equals(slavesCount) || !"2".equals(others)) {
                    return false;
                }
            } catch (IOException | RuntimeException e) {
                return false;
            }
        }
        return true;
    }

    private static String field(List<?> pairs, String name) {
        for (int i = 0; i + 1 < pairs.size(); i += 2) {
            if (name.equals(pairs.get(i))) {
                return String.valueOf(pairs.get(i + 1));
            }
        }
        return null;
    }

    /** Waits (up to {@code within}) until the Sentinels name a primary other than {@code old}; true if they did. */
    private boolean awaitNewPrimary(int old, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (System.nanoTime() - deadline < 0) {
            int now = primaryIndex();
            if (now >= 0 && now != old) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    @Override
    List<Fault> faults() {
        return List.of(
                fault("kill-primary", 2, (f, r) -> {
                    int p = primaryIndexOrFail();
                    RedisServer n = nodes.get(p);
                    String target = "n" + p;
                    f.begin("kill-primary", target);
                    try {
                        kill(p);
                        // Dead for long enough to be voted down and replaced, most of the time (down after 1 s).
                        boolean replaced = awaitNewPrimary(p, Duration.ofMillis(3_000 + r.nextInt(6_000)));
                        restart(n);
                        f.note("kill-primary " + target + (replaced ? ": replaced by n" + primaryIndex()
                                : ": back before a failover"));
                        if (replaced) {
                            settle(f, "kill-primary " + target, p);
                        }
                    } finally {
                        f.end("kill-primary", target);
                    }
                }),
                fault("partition-primary-sentinels", 1, (f, r) -> cut(f, "partition-primary-sentinels",
                        from(SENTINELS), f.leases(0.5, 3))),
                fault("partition-primary-replicas", 1, (f, r) -> cut(f, "partition-primary-replicas",
                        from(REPLICAS), f.leases(0.2, 3))),
                fault("partition-primary-workers", 1, (f, r) -> {
                    int p = primaryIndexOrFail();
                    List<Fleet.Slot> some = new ArrayList<>(f.slots());
                    Collections.shuffle(some, r);
                    some = some.subList(0, 1 + r.nextInt(Math.max(1, some.size() / 2)));
                    String target = "n" + p + " from " + Faults.names(some);
                    f.begin("partition-primary-workers", target);
                    try {
                        for (Fleet.Slot s : some) {
                            s.proxies.get("n" + p).partition(FaultProxy.Direction.BOTH);
                        }
                        Faults.sleep(f.leases(0.2, 3));
                    } finally {
                        for (Fleet.Slot s : some) {
                            s.proxies.get("n" + p).heal();
                        }
                        f.end("partition-primary-workers", target);
                    }
                }),
                fault("failover", 1, (f, r) -> {
                    int p = primaryIndexOrFail();
                    RedisServer s = sentinels.get(r.nextInt(sentinels.size()));
                    String target = "n" + p + " via s" + sentinels.indexOf(s);
                    f.begin("failover", target);
                    try {
                        Object said = Resp.call(s.port(), 2_000, "SENTINEL", "FAILOVER", MASTER);
                        boolean done = said instanceof String && awaitNewPrimary(p, Duration.ofSeconds(10));
                        f.note("failover " + target + (done ? ": n" + primaryIndex() + " promoted"
                                : ": refused, " + said));
                        if (done) {
                            settle(f, "failover " + target, p);
                        }
                    } finally {
                        f.end("failover", target);
                    }
                }));
    }

    private int primaryIndexOrFail() throws IOException {
        int p = primaryIndex();
        if (p < 0) {
            throw new IOException("no Sentinel names a primary");
        }
        return p;
    }

    /**
     * Cuts the primary's node proxy for the links {@code which} selects, both ways, for {@code length}; the fault
     * ends once the Sentinels settled what it caused (see {@link #settle}).
     */
    private void cut(Faults f, String kind, Predicate<FaultProxy.Link> which, Duration length) throws Exception {
        int p = primaryIndexOrFail();
        String target = "n" + p;
        f.begin(kind, target);
        try {
            nodeProxies.get(p).partition(FaultProxy.Direction.BOTH, which);
            Faults.sleep(length);
            nodeProxies.get(p).heal();
            settle(f, kind + " " + target, p);
        } finally {
            nodeProxies.get(p).heal();
            f.end(kind, target);
        }
    }

    /**
     * Waits (up to 20 s) until node {@code old}, the primary when a fault began, is the primary the Sentinels
     * name again with none of them seeing it down or failing it over, or follows the one they promoted and is in
     * sync with it (until then a WAIT for every
     * replica fails, and the grants it holds back are counted in Redis and believed by nobody). Until then, processes that still reach it go on using it:
     * a Sentinel turns a primary it replaced into a replica only once it has seen it, back, claim to be a primary
     * for 8 s (four hello periods), and it then ends the clients' connections (CLIENT KILL), which sends them to
     * the new primary. The fault lasts until then, so that the run's recovery clock starts once Sentinel has done
     * its part, and measures the client.
     */
    private void settle(Faults f, String what, int old) throws InterruptedException {
        long started = System.nanoTime();
        long deadline = started + TimeUnit.SECONDS.toNanos(20);
        for (;;) {
            int now = primaryIndex();
            if (now == old && sentinelsQuiet()
                    || now >= 0 && now != old && masterPort(old) == nodeProxies.get(now).port() && inSync(old)) {
                if (now != old) {
                    f.note(what + ": n" + old + " made a replica of n" + now + ", "
                            + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms later");
                }
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                f.note(what + ": not settled 20 s after the fault (primary n" + now + ")");
                return;
            }
            Thread.sleep(100);
        }
    }

    @Override
    void heal(PrintStream out) throws Exception {
        for (FaultProxy p : nodeProxies) {
            p.heal();
        }
        for (RedisServer n : nodes) {
            if (!n.isRunning()) {
                restart(n);
            }
        }
        long started = System.nanoTime();
        try {
            await("primary with 2 replicas in sync", Duration.ofSeconds(30), () -> {
                int p = primaryIndex();
                return p >= 0 && connectedReplicas(p) == 2;
            });
        } catch (IllegalStateException e) {
            out.println("chaos: " + e.getMessage() + " (primary n" + primaryIndex() + ")");
            return;
        }
        out.printf("chaos: primary n%d with 2 replicas, %d ms after the faults%n", primaryIndex(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
    }

    @Override
    public void close() throws Exception {
        List<AutoCloseable> all = new ArrayList<>(sentinels);
        all.addAll(nodeProxies);
        all.addAll(nodes);
        closeAll(all);
    }
}
