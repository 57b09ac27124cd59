package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.RedisServer;
import dev.sema.testing.history.Recorder;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The fault scheduler of a chaos run: one fault at a time, at random, with a random quiet spell between
 * two, until the run's end. Each fault is recorded as it begins and ends.
 *
 * <table>
 *   <caption>Faults, with their weights and durations (L = the lease)</caption>
 *   <tr><th>kind</th><th>weight</th><th>what</th></tr>
 *   <tr><td>partition</td><td>5</td><td>one process cut off both ways (3) or one way (1 each), 0.2 to 3 L</td></tr>
 *   <tr><td>partition-many</td><td>2</td><td>2 to half the processes cut off both ways, 0.2 to 3 L</td></tr>
 *   <tr><td>partition-pubsub</td><td>1</td><td>only one process's wake-up connection cut off, 1 to 3 L</td></tr>
 *   <tr><td>latency</td><td>2</td><td>10 to 200 ms each way on 1 to all processes, 1 to 5 s</td></tr>
 *   <tr><td>reset</td><td>2</td><td>every connection of one process reset, 1 to 3 times, 200 ms apart</td></tr>
 *   <tr><td>sigstop</td><td>2</td><td>one process paused (SIGSTOP, then SIGCONT), 0.1 to 3 L</td></tr>
 *   <tr><td>sigkill</td><td>1</td><td>one process killed (SIGKILL); a new one takes its place 0.5 to 2 s later</td></tr>
 *   <tr><td>redis-restart</td><td>1</td><td>Redis (the primary) killed and restarted from its append-only file</td></tr>
 *   <tr><td>script-flush</td><td>1</td><td>SCRIPT FLUSH on the primary: every process must load its scripts again</td></tr>
 * </table>
 * A process's faults act on all its proxies (one per Redis process it reaches). The topology adds faults of
 * its own ({@link Topology#faults()}), each with its weight beside these.
 */
final class Faults {
    private final ChaosRun.Options o;
    private final Topology topology;
    private final Fleet fleet;
    private final Recorder rec;
    private final Random random;
    private final PrintStream out;
    private final Map<String, Integer> counts = new TreeMap<>();

    Faults(ChaosRun.Options o, Topology topology, Fleet fleet, Recorder rec, Random random, PrintStream out) {
        this.o = o;
        this.topology = topology;
        this.fleet = fleet;
        this.rec = rec;
        this.random = random;
        this.out = out;
    }

    /**
     * Injects faults until {@code end}: first each of the topology's own faults once, the first of them first
     * and the others in random order (so that even a short run fails over), then faults drawn at random by
     * weight. The opening round completes even past {@code end}: a short run whose faults settle slowly (a
     * Sentinel takes seconds to convert an old primary) still meets each of them.
     */
    void runUntil(long end) throws Exception {
        long lastReport = System.nanoTime();
        List<Topology.Fault> opening = new ArrayList<>(topology.faults());
        if (!opening.isEmpty()) {
            Collections.shuffle(opening.subList(1, opening.size()), random); // the first first: see Topology.faults
        }
        while (!opening.isEmpty() || System.nanoTime() - end < 0) {
            sleep(Duration.ofMillis(300 + random.nextInt(1_700)));
            if (opening.isEmpty() && System.nanoTime() - end >= 0) {
                break;
            }
            if (!opening.isEmpty()) {
                inject(opening.remove(0));
            } else {
                inject();
            }
            if (System.nanoTime() - lastReport > TimeUnit.SECONDS.toNanos(30)) {
                lastReport = System.nanoTime();
                out.printf("chaos: %d s left; faults so far: %s%n",
                        Math.max(0, TimeUnit.NANOSECONDS.toSeconds(end - System.nanoTime())), summary());
            }
        }
    }

    /** What was injected so far, by kind. */
    String summary() {
        return counts.toString();
    }

    Map<String, Integer> counts() {
        return counts;
    }

    /**
     * Ends every fault still in force (none should be, as each ends before the next begins), and waits until
     * the topology serves again.
     */
    void healAll() throws Exception {
        for (Fleet.Slot s : fleet.slots()) {
            for (FaultProxy p : s.proxies.values()) {
                p.heal();
                p.latency(Duration.ZERO);
            }
            fleet.resume(s);
        }
        topology.heal(out);
    }

    /** The semaphores of the run, as Redis names them (each key of a keyed family), for a topology's faults. */
    List<String> semaphores() {
        return ChaosWorker.parse(o.semaphores()).stream().flatMap(x -> x.semaphores().stream()).toList();
    }

    /** The workers' slots, for a topology's faults. */
    List<Fleet.Slot> slots() {
        return fleet.slots();
    }

    /**
     * A topology's fault; one that could not act (a node that did not answer its command) is reported and the
     * run goes on, the fault's end recorded if it began (each topology fault ends in a finally).
     */
    private void inject(Topology.Fault f) throws Exception {
        try {
            f.inject(this, random);
        } catch (IOException e) {
            note(f.kind() + " could not act: " + e.getMessage());
        }
    }

    private void inject() throws Exception {
        int extra = 0;
        for (Topology.Fault f : topology.faults()) {
            extra += f.weight();
        }
        int pick = random.nextInt(17 + extra);
        if (pick >= 17) {
            pick -= 17;
            for (Topology.Fault f : topology.faults()) {
                if (pick < f.weight()) {
                    inject(f);
                    return;
                }
                pick -= f.weight();
            }
        }
        if (pick < 5) {
            Fleet.Slot s = any();
            FaultProxy.Direction d = switch (random.nextInt(5)) {
                case 0 -> FaultProxy.Direction.TO_SERVER;
                case 1 -> FaultProxy.Direction.TO_CLIENT;
                default -> FaultProxy.Direction.BOTH;
            };
            partition("partition-" + d.name().toLowerCase(java.util.Locale.ROOT), List.of(s), d, l -> true,
                    leases(0.2, 3));
        } else if (pick < 7) {
            List<Fleet.Slot> many = new ArrayList<>(fleet.slots());
            Collections.shuffle(many, random);
            int n = 2 + random.nextInt(Math.max(1, many.size() / 2 - 1));
            partition("partition-many", many.subList(0, Math.min(n, many.size())), FaultProxy.Direction.BOTH,
                    l -> true, leases(0.2, 3));
        } else if (pick < 8) {
            partition("partition-pubsub", List.of(any()), FaultProxy.Direction.BOTH, FaultProxy.Link::subscriber,
                    leases(1, 3));
        } else if (pick < 10) {
            List<Fleet.Slot> some = new ArrayList<>(fleet.slots());
            Collections.shuffle(some, random);
            some = some.subList(0, 1 + random.nextInt(some.size()));
            Duration each = Duration.ofMillis(10 + random.nextInt(191));
            String target = names(some) + " " + each.toMillis() + "ms";
            begin("latency", target);
            for (Fleet.Slot s : some) {
                s.proxies.values().forEach(p -> p.latency(each));
            }
            sleep(Duration.ofMillis(1_000 + random.nextInt(4_000)));
            for (Fleet.Slot s : some) {
                s.proxies.values().forEach(p -> p.latency(Duration.ZERO));
            }
            end("latency", target);
        } else if (pick < 12) {
            Fleet.Slot s = any();
            int times = 1 + random.nextInt(3);
            begin("reset", s.name + " x" + times);
            for (int i = 0; i < times; i++) {
                if (i > 0) {
                    sleep(Duration.ofMillis(200));
                }
                s.proxies.values().forEach(FaultProxy::resetAll);
            }
            end("reset", s.name + " x" + times);
        } else if (pick < 14) {
            Fleet.Slot s = any();
            String target = s.name;
            begin("sigstop", target);
            fleet.pause(s);
            sleep(leases(0.1, 3));
            fleet.resume(s);
            end("sigstop", target);
        } else if (pick < 15) {
            Fleet.Slot s = any();
            String target = s.name;
            begin("sigkill", target);
            fleet.kill(s);
            sleep(Duration.ofMillis(500 + random.nextInt(1_500)));
            fleet.start(s); // under a new name: its history starts afresh
            end("sigkill", target);
        } else if (pick < 16) {
            RedisServer primary = topology.primary();
            String target = topology.nameOf(primary);
            begin("redis-restart", target);
            topology.restart(primary);
            end("redis-restart", target);
        } else {
            RedisServer primary = topology.primary();
            String target = topology.nameOf(primary);
            begin("script-flush", target);
            scriptFlush(primary.port());
            end("script-flush", target);
        }
    }

    private void partition(String kind, List<Fleet.Slot> targets, FaultProxy.Direction d,
            java.util.function.Predicate<FaultProxy.Link> which, Duration length) throws InterruptedException {
        String target = names(targets);
        begin(kind, target);
        for (Fleet.Slot s : targets) {
            s.proxies.values().forEach(p -> p.partition(d, which));
        }
        sleep(length);
        for (Fleet.Slot s : targets) {
            s.proxies.values().forEach(FaultProxy::heal);
        }
        end(kind, target);
    }

    void begin(String kind, String target) {
        counts.merge(kind, 1, Integer::sum);
        rec.faultBegin(kind, target);
    }

    void end(String kind, String target) {
        rec.faultEnd(kind, target);
    }

    /** What a fault found out (which replica Sentinel promoted, say), for the run's output. */
    void note(String what) {
        out.println("chaos: " + what);
    }

    private Fleet.Slot any() {
        return fleet.slots().get(random.nextInt(fleet.slots().size()));
    }

    /** A random length between {@code from} and {@code to} leases. */
    Duration leases(double from, double to) {
        double f = from + random.nextDouble() * (to - from);
        return Duration.ofMillis((long) (o.lease().toMillis() * f));
    }

    static String names(List<Fleet.Slot> slots) {
        List<String> n = new ArrayList<>();
        for (Fleet.Slot s : slots) {
            n.add(s.name);
        }
        return String.join(",", n);
    }

    static void sleep(Duration d) throws InterruptedException {
        Thread.sleep(d.toMillis());
    }

    /** SCRIPT FLUSH, in plain RESP on a connection of its own (the scheduler needs no client for one command). */
    private static void scriptFlush(int port) throws IOException {
        Object said = Resp.call(port, 5_000, "SCRIPT", "FLUSH");
        if (!"OK".equals(said)) {
            throw new IOException("SCRIPT FLUSH answered " + said);
        }
    }
}
