package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.RedisServer;
import dev.sema.testing.history.HistoryWriter;
import dev.sema.testing.history.Recorder;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The chaos run ({@code bin/chaos}): several worker JVMs ({@link ChaosWorker}) share a few RedisSemaphores,
 * each through a {@link FaultProxy} of its own, while a scheduler injects faults at random (see
 * {@link Faults}); every process records its history, the scheduler records the faults and samples the
 * semaphores in Redis, and at the end the {@link dev.sema.testing.history.Checker} checks the merged
 * histories: never more believed held than a limit, fencing tokens in grant order, one outcome per request,
 * nobody hung, every permit back once the faults stopped.
 *
 * <p>Usage: {@code ChaosRun [quick|full] [broken] [splitbrain] [key=value...]}: {@code quick} (default) runs 3 minutes of
 * faults, {@code full} 15; {@code broken} turns off, in the workers, the check that keeps a late grant from
 * reaching its caller, to show that the checker flags what that lets through. Keys: {@code processes} (6),
 * {@code minutes}, {@code seed}, {@code threads} per process (8), {@code lease} in ms (2000), {@code out}
 * (the directory for the histories, the logs and the report; default
 * {@code sema-chaos/target/chaos/<time>}), {@code topology} ({@code single}, {@code sentinel} or
 * {@code cluster}: see {@link Topology}) and {@code replicas} (how many replicas every grant and renewal
 * waits for: by default every replica, 2 on sentinel, 1 on cluster; none on single); {@code splitbrain}
 * (cluster only) adds the fault that cuts a primary from the other nodes while workers still reach it, which
 * Redis Cluster's asynchronous replication does not survive unhurt without {@code replicas}. Exit status 0
 * when the checker finds no violation, 1 when it finds some, 2 when the run itself failed.
 */
public final class ChaosRun {

    /**
     * The run's semaphores: limits 1 to 16, weights up to half the limit; one partitioned semaphore whose
     * requests come through each partition and through the parent, the hard limit holding over them all; and a
     * keyed family of 6 keys, each its own semaphore of limit 2, whose idle keys expire from Redis after a
     * second and are created again by their next request.
     */
    static final String SEMAPHORES = "chaos-1:1,chaos-2:2,chaos-4:4,chaos-16:16,chaos-p8:8:gold=0.5/silver=0.25,"
            + "chaos-k[6]:2";

    /** The topologies {@code topology=} names. */
    enum Kind { SINGLE, SENTINEL, CLUSTER }

    /**
     * What the command line asked for.
     *
     * @param replicas the workers' {@code replicas(n, 500 ms)} on every semaphore (0: none), for a topology with
     *                 replicas
     */
    record Options(int processes, double minutes, long seed, int threads, Duration lease, Path out, boolean broken,
            String semaphores, Kind topology, int replicas, boolean splitBrain) {

        static Options parse(String... args) {
            boolean full = false;
            boolean broken = false;
            int processes = 6;
            Double minutes = null;
            long seed = System.nanoTime();
            int threads = 8;
            long leaseMs = 2_000;
            Path out = null;
            Kind topology = Kind.SINGLE;
            Integer replicas = null;
            boolean splitBrain = false;
            for (String a : args) {
                switch (a) {
                    case "quick" -> full = false;
                    case "full" -> full = true;
                    case "broken" -> broken = true;
                    case "splitbrain" -> splitBrain = true;
                    default -> {
                        int eq = a.indexOf('=');
                        if (eq < 0) {
                            throw new IllegalArgumentException("unknown argument '" + a + "': quick, full, broken,"
                                    + " splitbrain or key=value (processes, minutes, seed, threads, lease, out, topology,"
                                    + " replicas)");
                        }
                        String k = a.substring(0, eq);
                        String v = a.substring(eq + 1);
                        try {
                            switch (k) {
                                case "processes" -> processes = positive(k, Integer.parseInt(v));
                                case "minutes" -> minutes = Double.parseDouble(v);
                                case "seed" -> seed = Long.parseLong(v);
                                case "threads" -> threads = positive(k, Integer.parseInt(v));
                                case "lease" -> leaseMs = positive(k, Long.parseLong(v));
                                case "out" -> out = Path.of(v);
                                case "topology" -> topology = topology(v);
                                case "replicas" -> replicas = Integer.parseInt(v);
                                default -> throw new IllegalArgumentException("unknown key '" + k + "' in '" + a
                                        + "': processes, minutes, seed, threads, lease, out, topology or replicas");
                            }
                        } catch (NumberFormatException e) {
                            throw new IllegalArgumentException("'" + a + "': " + v + " is not a number");
                        }
                    }
                }
            }
            if (leaseMs < 100) {
                throw new IllegalArgumentException("lease=" + leaseMs + ": at least 100 (ms), the shortest lease");
            }
            if (processes < 2) {
                throw new IllegalArgumentException("processes=" + processes + ": at least 2");
            }
            double m = minutes != null ? minutes : full ? 15 : 3;
            if (!(m > 0)) {
                throw new IllegalArgumentException("minutes=" + m + ": must be positive");
            }
            // Every replica by default: only then does no failover lose a grant (see RELIABILITY.md).
            int r = replicas != null ? replicas : topology == Kind.SENTINEL ? 2 : topology == Kind.CLUSTER ? 1 : 0;
            if (r > 0 && topology == Kind.SINGLE) {
                throw new IllegalArgumentException("replicas=" + r + ": the single topology has no replica");
            }
            if (r < 0 || r > 2 || topology == Kind.CLUSTER && r > 1) {
                throw new IllegalArgumentException("replicas=" + r + ": " + (topology == Kind.CLUSTER
                        ? "0 or 1 (each primary of the cluster topology has 1)"
                        : "0, 1 or 2 (the sentinel topology has 2)"));
            }
            if (out == null) {
                out = Path.of("sema-chaos", "target", "chaos",
                        LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT))
                                + (topology == Kind.SINGLE ? "" : "-" + topology.name().toLowerCase(Locale.ROOT))
                                + (broken ? "-broken" : ""));
            }
            if (splitBrain && topology != Kind.CLUSTER) {
                throw new IllegalArgumentException("splitbrain: a fault of the cluster topology (topology=cluster);"
                        + " the sentinel topology always has its own");
            }
            return new Options(processes, m, seed, threads, Duration.ofMillis(leaseMs), out, broken, SEMAPHORES,
                    topology, r, splitBrain);
        }

        private static Kind topology(String v) {
            try {
                return Kind.valueOf(v.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("topology=" + v + ": single, sentinel or cluster");
            }
        }

        private static <N extends Number> N positive(String key, N n) {
            if (n.longValue() <= 0) {
                throw new IllegalArgumentException(key + "=" + n + ": must be positive");
            }
            return n;
        }
    }

    public static void main(String[] args) {
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("chaos: " + e.getMessage());
            System.exit(2);
            return;
        }
        int code;
        try {
            code = run(o, System.out);
        } catch (Exception e) {
            e.printStackTrace();
            code = 2;
        }
        System.exit(code);
    }

    /** Runs the whole chaos run; returns the exit status. */
    static int run(Options o, PrintStream out) throws Exception {
        Files.createDirectories(o.out());
        RedisServer.Binary binary = RedisServer.Source.INSTALLED_OR_BUNDLED.find()
                .orElseThrow(() -> new IllegalStateException(RedisServer.Source.INSTALLED_OR_BUNDLED.missing()));
        out.printf("chaos: %d processes x %d threads, %s of faults, lease %d ms, seed %d%s%n", o.processes(),
                o.threads(), minutes(o.minutes()), o.lease().toMillis(), o.seed(),
                o.broken() ? ", BROKEN BUILD (late grants unchecked)" : "");
        out.println("chaos: " + binary + ", histories in " + o.out().toAbsolutePath());
        List<ChaosWorker.Sem> sems = ChaosWorker.parse(o.semaphores());
        try (Topology topology = switch (o.topology()) {
                    case SINGLE -> SingleRedis.start(binary);
                    case SENTINEL -> SentinelRedis.start(binary, o.out());
                    case CLUSTER -> ClusterRedis.start(binary, o.out(), o.splitBrain());
                };
                HistoryWriter writer = HistoryWriter.toFile(o.out().resolve("scheduler.hist"))) {
            out.println("chaos: topology " + topology.describe() + (o.replicas() > 0
                    ? "; every grant waits for " + o.replicas() + " replica" + (o.replicas() > 1 ? "s" : "")
                    + " (replicas(" + o.replicas() + ", 500 ms))"
                    : o.topology() == Kind.SINGLE ? "" : "; grants do not wait for replicas"));
            Recorder rec = new Recorder(writer, "scheduler");
            for (ChaosWorker.Sem s : sems) {
                // A key created again after its idle expiry gets the family's limit again (nothing in the run
                // changes a stored limit): one declaration holds for all its lives in Redis.
                for (String name : s.semaphores()) {
                    rec.declare(name, s.limit(), o.lease());
                }
            }
            try (Fleet fleet = new Fleet(o, topology, rec);
                    Sampler sampler = new Sampler(topology, sems, rec)) {
                fleet.startAll();
                sampler.start();
                // Faults begin once the workers made the run's semaphores: on a replicated topology, a semaphore
                // created a moment before its primary is killed may be lost with it (as a grant may be: the
                // price of asynchronous replication), which says nothing of the run.
                sampler.awaitStored(sems.stream().filter(s -> s.keys() == 0).map(ChaosWorker.Sem::name).toList(),
                        Duration.ofSeconds(60), out);
                Faults faults = new Faults(o, topology, fleet, rec, new Random(o.seed()), out);
                long end = System.nanoTime() + (long) (o.minutes() * 60e9);
                faults.runUntil(end);
                faults.healAll();
                Duration calm = o.lease().multipliedBy(2).plusSeconds(3);
                out.printf("chaos: faults over (%s); %d s without faults, then the workers stop%n", faults.summary(),
                        calm.toSeconds());
                Thread.sleep(calm.toMillis());
                fleet.stopAll(out);
                sampler.close();
                sampler.finalCounts(o.lease().plusSeconds(10), out);
                out.println("chaos: gone from Redis and back (stored, then gone, then stored again): " + returns(sampler));
            }
        }
        return Verdict.check(o, out);
    }

    private static String returns(Sampler sampler) {
        Map<String, Integer> returns = sampler.returns();
        if (returns.isEmpty()) {
            return "none";
        }
        return returns.values().stream().mapToInt(Integer::intValue).sum() + " times (" + returns.entrySet().stream()
                .map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", ")) + ")";
    }

    static String minutes(double m) {
        return m == Math.rint(m) ? (long) m + " min" : String.format(Locale.ROOT, "%.1f min", m);
    }

    /** Runs {@code command} and waits for it, for the signals {@code kill} sends. */
    static void exec(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + said.trim());
        }
    }

    private ChaosRun() {
    }
}
