package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.RedisServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Predicate;

/**
 * Where a chaos run's Redis lives and how its workers reach it: one Redis ({@link SingleRedis}), a primary
 * with replicas watched by Sentinels ({@link SentinelRedis}), or a Redis Cluster ({@link ClusterRedis}).
 *
 * <p>Every Redis process a worker talks to is an {@link Endpoint}; each worker reaches each endpoint through a
 * {@link FaultProxy} of its own (see {@link Fleet}), so the scheduler can cut one worker from one node. On a
 * topology whose clients learn addresses from Redis itself (Sentinel answers with the primary's address),
 * the worker's client maps each endpoint's advertised port to its own proxy, so every address it learns leads
 * through a proxy too. Links between Redis processes (replication, Sentinel's checks) go through one
 * <em>node proxy</em> per node, which tells Sentinels and replicas apart by their source addresses
 * ({@link #SENTINELS}, {@link #REPLICAS}): cutting the primary from its Sentinels spares its replicas.
 *
 * <p>Rules: a topology fault records its {@code begin} before it acts and its {@code end} once it stopped
 * acting (as {@link Faults}'s own do); {@link #heal} leaves every process running and one primary serving, so
 * that the run's end finds the permits back on the primary that the sampler reads.
 */
abstract sealed class Topology implements AutoCloseable permits SingleRedis, SentinelRedis, ClusterRedis {

    /** The loopback address Sentinels connect from ({@code bind-source-addr}). */
    static final String SENTINELS = "127.0.0.2";
    /** The loopback address replicas connect from ({@code bind-source-addr}). */
    static final String REPLICAS = "127.0.0.3";

    /**
     * A Redis process the workers reach.
     *
     * @param name       its name in fault targets ({@code n0}, {@code s1})
     * @param advertised the port clients are told of (by Sentinel, by the cluster)
     * @param target     the port where it answers, which a worker's proxy forwards to
     */
    record Endpoint(String name, int advertised, int target) {
    }

    /** A fault of the topology itself, injected with the weight given, among {@link Faults}'s own. */
    interface Fault {
        String kind();

        int weight();

        void inject(Faults faults, Random random) throws Exception;
    }

    /** What the report's first lines say of it. */
    abstract String describe();

    abstract List<Endpoint> endpoints();

    /** The URI a worker connects with, given its proxies by endpoint name. */
    abstract String workerUri(Map<String, FaultProxy> proxies);

    /** Whether workers map advertised ports to their proxies (their client learns addresses from Redis). */
    abstract boolean mapped();

    /** The port where {@code semaphore}'s primary answers now, or -1 if none is known at the moment. */
    abstract int locate(String semaphore);

    /** The port where the node advertised at {@code advertised} answers, or -1 (a redirection names it so). */
    int target(int advertised) {
        for (Endpoint e : endpoints()) {
            if (e.advertised() == advertised) {
                return e.target();
            }
        }
        return -1;
    }

    /** Told when a read was redirected ({@code -MOVED}): the topology reads where slots live again. */
    void moved() {
    }

    /** The server that a Redis restart and SCRIPT FLUSH hit: the primary, now. */
    abstract RedisServer primary() throws IOException;

    /** The name of {@code server} in fault targets. */
    abstract String nameOf(RedisServer server);

    /** Restarts {@code server} (killed, then started from its append-only file), as the topology needs it. */
    void restart(RedisServer server) throws IOException, InterruptedException {
        server.restart();
    }

    /** The topology's own faults; the first is the run's first fault (a primary killed, on a fresh topology). */
    abstract List<Fault> faults();

    /** Ends every topology fault and waits until one primary serves, every node running. */
    abstract void heal(PrintStream out) throws Exception;

    @Override
    public abstract void close() throws Exception;

    /** Closes each of {@code all}, all of them whatever fails; then throws the first failure. */
    static void closeAll(List<AutoCloseable> all) throws Exception {
        Exception first = null;
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Whether a Redis version is 7 or newer ({@code bind-source-addr}, which tells node links apart). */
    static boolean atLeast7(String version) {
        try {
            return Integer.parseInt(version.split("\\.")[0]) >= 7;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** The links a process connecting from {@code address} opened. */
    static Predicate<FaultProxy.Link> from(String address) {
        return l -> {
            InetAddress a = l.client();
            return a != null && a.getHostAddress().equals(address);
        };
    }

    /** A condition a topology waits for. */
    interface Check {
        boolean ok() throws Exception;
    }

    /** Waits until {@code check} holds; fails naming {@code what} if it does not within {@code within}. */
    static void await(String what, Duration within, Check check) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (!check.ok()) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("no " + what + " within " + within.toSeconds() + " s");
            }
            Thread.sleep(100);
        }
    }

    /** What a topology fault does. */
    interface Action {
        void inject(Faults f, Random r) throws Exception;
    }

    static Fault fault(String kind, int weight, Action action) {
        return new Fault() {
            @Override
            public String kind() {
                return kind;
            }

            @Override
            public int weight() {
                return weight;
            }

            @Override
            public void inject(Faults faults, Random random) throws Exception {
                action.inject(faults, random);
            }
        };
    }
}
