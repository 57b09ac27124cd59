package dev.sema.bench.partitions;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Partitions under overload: does a partitioned limit shed the traffic it should, and only that? Sema's
 * partitioned semaphore (API.md §11a) against one flat Sema semaphore, a static split (one Sema semaphore per
 * class with its guarantee as its limit) and Netflix {@code concurrency-limits}' partitioned limiter, on the
 * same workload, in one JVM, in real time.
 *
 * <p>The model. A downstream serves {@value #LIMIT} requests at once, each for a service time drawn uniformly
 * from 0.8x-1.2x {@value #SERVICE_MILLIS} ms; a request beyond those waits for a slot in arrival order (only
 * a limiter that lets more than its limit in makes that happen). In front of it, a limiter with the limit
 * L = {@value #LIMIT}. Three classes of clients, in priority order checkout (share 0.6), browse (0.3) and
 * batch (0.1). Every client is closed-loop, on a virtual thread of its own: it thinks (exponential, mean
 * {@value #THINK_MILLIS} ms), asks the limiter for one permit waiting at most {@value #MAX_WAIT_MILLIS} ms
 * (refused otherwise: it counts the refusal and thinks again), calls the downstream holding the permit, and
 * releases it. A client that never waits keeps a request in flight {@code 50 / (50 + 450)} = 1/10 of the
 * time, so a class of N clients <em>offers</em> N/10 requests in flight on average (N/0.5 requests/s): its
 * offered load. Checkout and browse offer their share of L (30 and 15 in flight: 300 and 150 clients), batch
 * three times its share in the overload (15: 150 clients), its share when all are at theirs (5: 50 clients), and
 * 1.5 L when alone (750 clients).
 *
 * <p>Each client draws its think and service times from its own seeded generator, two draws per request
 * whatever happens to it, so every limiter faces the same sequence of requests from every client.
 *
 * <p>Phases, each run with every limiter, fresh, one limiter after the other: <b>checkout alone</b> and
 * <b>browse alone</b> at their normal load (the unloaded baselines), <b>all at their share</b> (batch too:
 * exactly L offered, a second baseline that tells what the surge itself costs from what sharing a full limit
 * costs), <b>overload</b> (all three, batch 3x over its share), <b>batch alone</b> (how much of the limit one
 * class reaches when nobody else wants it).
 * A run starts every client at once, lets it settle, then measures a window; only requests whose acquire
 * starts inside the window count. Each limiter's runs are interleaved with the others' (phase by phase, the
 * order rotated every round), so the machine's noise falls on all of them alike.
 *
 * <p>Reported per limiter, phase and class: goodput (requests completed per second), refusals, p50 and p99
 * wait for a permit (of granted requests), p99 response (wait + downstream, queue included), the mean
 * number in flight (the class's permit-holding time over the window) and the most ever in flight. In
 * flight is counted outside the limiters: an {@code AtomicInteger} incremented once the permit is granted
 * and decremented before it is released, its maximum kept, for the whole run including the settling. If
 * one of Sema's limiters ever had more than L in flight, the run says so and exits with status 1.
 *
 * <p>Modes: {@code full} 3 rounds, each run 0.5 s settling + 5.5 s measured, after a warm-up of 1 s per
 * limiter and phase (about 6.5 minutes); {@code quick} 1 round, 0.5 s + 2 s, after 0.4 s of warm-up (about a
 * minute); {@code smoke} 1 round, 0.2 s + 0.5 s, no warm-up (seconds; its numbers mean nothing). Run it with
 * a fixed heap ({@code -Xms1g -Xmx1g}, as {@code bin/benchmarks} does): a collection runs before each run,
 * and a heap that shrinks after it would collect again inside the window.
 *
 * <p>Run: {@code bin/benchmarks partitions [full|quick|smoke]}, which writes section 14 of
 * {@code docs/BENCHMARKS.md}; or {@code java -Xms1g -Xmx1g -cp sema-benchmarks/target/benchmarks.jar
 * dev.sema.bench.partitions.PartitionSimulation [full|quick|smoke] [--out file.md] [--only a,b]}.
 */
public final class PartitionSimulation {
    static final int LIMIT = 50;
    static final List<String> CLASSES = List.of("checkout", "browse", "batch");
    static final double[] SHARES = {0.6, 0.3, 0.1};
    static final int SERVICE_MILLIS = 50;
    static final int THINK_MILLIS = 450;
    static final int MAX_WAIT_MILLIS = 125;
    static final long SEED = 20_240_611;
    private static final long SERVICE_NANOS = TimeUnit.MILLISECONDS.toNanos(SERVICE_MILLIS);
    private static final long THINK_NANOS = TimeUnit.MILLISECONDS.toNanos(THINK_MILLIS);
    private static final Duration MAX_WAIT = Duration.ofMillis(MAX_WAIT_MILLIS);
    private static final int CHECKOUT = 0;
    private static final int BATCH = 2;

    /** The phases, with each class's offered load in requests in flight (0: absent). */
    enum Phase {
        CHECKOUT_ALONE("checkout alone", 0.6 * LIMIT, 0, 0),
        BROWSE_ALONE("browse alone", 0, 0.3 * LIMIT, 0),
        AT_SHARE("all at their share", 0.6 * LIMIT, 0.3 * LIMIT, 0.1 * LIMIT),
        OVERLOAD("overload", 0.6 * LIMIT, 0.3 * LIMIT, 3 * 0.1 * LIMIT),
        BATCH_ALONE("batch alone", 0, 0, 1.5 * LIMIT);

        final String label;
        final double[] offered;

        Phase(String label, double... offered) {
            this.label = label;
            this.offered = offered;
        }

        int clients(int cls) {
            return (int) Math.round(offered[cls] * (SERVICE_MILLIS + THINK_MILLIS) / SERVICE_MILLIS);
        }
    }

    /** {@code warmUp}: how long each limiter first runs each phase, discarded (zero: none). */
    record Settings(String mode, int rounds, Duration settle, Duration window, Duration warmUp) {
        static Settings of(String mode) {
            return switch (mode) {
                case "full" -> new Settings(mode, 3, Duration.ofMillis(500), Duration.ofMillis(5_500), Duration.ofSeconds(1));
                case "smoke" -> new Settings(mode, 1, Duration.ofMillis(200), Duration.ofMillis(500), Duration.ZERO);
                default -> new Settings(mode, 1, Duration.ofMillis(500), Duration.ofMillis(2_000), Duration.ofMillis(400));
            };
        }
    }

    private PartitionSimulation() {
    }

    public static void main(String[] args) throws Exception {
        String mode = "quick";
        Path out = null;
        List<String> kinds = ClassLimiter.KINDS;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "quick", "full", "smoke" -> mode = args[i];
                case "--out" -> out = Path.of(args[++i]);
                case "--only" -> kinds = List.of(args[++i].split(","));
                default -> {
                    System.err.println("usage: PartitionSimulation [full|quick|smoke] [--out file.md] [--only a,b]");
                    System.exit(2);
                }
            }
        }
        Settings settings = Settings.of(mode);
        String loadBefore = loadAverage();
        Map<String, Integer> warmUpMost = new LinkedHashMap<>();
        if (!settings.warmUp().isZero()) {
            // Discarded: at about 1,000 requests/s a limiter's paths take seconds to be compiled, each phase its
            // own (a class alone never queues), and a limiter measured on colder code than the others loses its
            // tail to the compiler, not to its rules: a fresh partitioned semaphore's first half second under
            // this load has a p99 wait of 50-130 ms. Only its most in flight is kept, for the limit's check.
            for (String kind : kinds) {
                for (Phase phase : Phase.values()) {
                    RunStats warm = new RunStats();
                    run(kind, phase, Duration.ZERO, settings.warmUp(), warm);
                    warmUpMost.merge(kind, warm.maxInFlight, Math::max);
                }
            }
        }
        Map<String, Map<Phase, RunStats>> results = new LinkedHashMap<>();
        Map<String, Map<Phase, List<RunStats>>> rounds = new LinkedHashMap<>();
        for (String kind : kinds) {
            results.put(kind, new EnumMap<>(Phase.class));
            rounds.put(kind, new EnumMap<>(Phase.class));
        }
        for (int round = 0; round < settings.rounds(); round++) {
            for (Phase phase : Phase.values()) {
                for (int k = 0; k < kinds.size(); k++) {
                    // rotated each round: no limiter always runs first after a phase change
                    String kind = kinds.get((k + round) % kinds.size());
                    RunStats one = new RunStats();
                    run(kind, phase, settings.settle(), settings.window(), one);
                    System.err.println(String.format(Locale.ROOT, "round %d %-18s %-20s %s", round + 1, phase.label,
                            kind, one.summary()));
                    results.get(kind).computeIfAbsent(phase, p -> new RunStats()).add(one);
                    rounds.get(kind).computeIfAbsent(phase, p -> new ArrayList<>()).add(one);
                }
            }
        }
        String report = report(results, rounds, warmUpMost, settings) + String.format(Locale.ROOT, "%nMachine load average (1 min) "
                + "before / after the run: %s / %s on %d cores.%n", loadBefore, loadAverage(),
                Runtime.getRuntime().availableProcessors());
        System.out.println(report);
        if (out != null) {
            Files.writeString(out, report);
        }
        List<String> over = new ArrayList<>();
        results.forEach((kind, phases) -> {
            int most = mostInFlight(phases, warmUpMost.getOrDefault(kind, 0));
            if (ClassLimiter.isSema(kind) && most > LIMIT) {
                over.add(kind + " had " + most + " in flight");
            }
        });
        if (!over.isEmpty()) {
            System.err.println("LIMIT EXCEEDED (limit " + LIMIT + "): " + String.join("; ", over));
            System.exit(1);
        }
        System.exit(0);
    }

    /** The 1-minute load average, where the system gives it: other work on the machine moves every figure. */
    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (java.io.IOException | RuntimeException e) {
            return "?";
        }
    }

    // ---------------------------------------------------------------- the run

    /** A growable array of longs, one per thread. */
    static final class Longs {
        long[] values = new long[256];
        int size;

        void add(long v) {
            if (size == values.length) {
                values = Arrays.copyOf(values, size * 2);
            }
            values[size++] = v;
        }

        void addAll(Longs o) {
            for (int i = 0; i < o.size; i++) {
                add(o.values[i]);
            }
        }

        long[] sorted() {
            long[] s = Arrays.copyOf(values, size);
            Arrays.sort(s);
            return s;
        }
    }

    /** One class's numbers in one phase (one client's while it runs, then the class's, pooled over rounds). */
    static final class ClassStats {
        long attempts;
        long completed;
        long refused;
        long heldNanos;
        int maxInFlight;
        final Longs waits = new Longs();
        final Longs responses = new Longs();

        void add(ClassStats o) {
            attempts += o.attempts;
            completed += o.completed;
            refused += o.refused;
            heldNanos += o.heldNanos;
            maxInFlight = Math.max(maxInFlight, o.maxInFlight);
            waits.addAll(o.waits);
            responses.addAll(o.responses);
        }
    }

    /** One limiter's numbers in one phase. */
    static final class RunStats {
        final ClassStats[] classes = {new ClassStats(), new ClassStats(), new ClassStats()};
        int maxInFlight;
        long windowNanos;

        synchronized void add(RunStats o) {
            for (int i = 0; i < classes.length; i++) {
                classes[i].add(o.classes[i]);
            }
            maxInFlight = Math.max(maxInFlight, o.maxInFlight);
            windowNanos += o.windowNanos;
        }

        synchronized void addClient(int cls, ClassStats c) {
            classes[cls].add(c);
        }

        double seconds() {
            return windowNanos / 1e9;
        }

        String summary() {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < classes.length; i++) {
                ClassStats c = classes[i];
                if (c.attempts == 0) {
                    continue;
                }
                b.append(String.format(Locale.ROOT, " %s %.0f/s p99 %s refused %d;", CLASSES.get(i),
                        c.completed / seconds(), time(percentile(c.waits.sorted(), 0.99)), c.refused));
            }
            return b.append(" most in flight ").append(maxInFlight).toString();
        }
    }

    /**
     * The service behind the limit: {@value #LIMIT} requests at once, the others wait for a slot in arrival
     * order. Its own slots are a JDK semaphore, so that the model does not lean on the code it measures.
     */
    static final class Downstream {
        private final java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(LIMIT, true);

        void serve(long serviceNanos) throws InterruptedException {
            slots.acquire();
            try {
                Thread.sleep(Duration.ofNanos(serviceNanos));
            } finally {
                slots.release();
            }
        }
    }

    /** What every client of one run shares. */
    record Run(ClassLimiter limiter, Downstream downstream, AtomicInteger inFlight, AtomicInteger maxInFlight,
            AtomicInteger[] classInFlight, AtomicInteger[] classMax, long windowStart, long end, RunStats stats) {
    }

    static void run(String kind, Phase phase, Duration settle, Duration window, RunStats stats) throws InterruptedException {
        // A young collection pauses every client for 10-20 ms here, which is a p99 of its own when it falls in a
        // window of an unloaded class; collecting the previous run's garbage now keeps it out of this one's.
        System.gc();
        ClassLimiter limiter = ClassLimiter.create(kind, LIMIT, CLASSES, SHARES, MAX_WAIT);
        AtomicInteger[] classInFlight = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        AtomicInteger[] classMax = {new AtomicInteger(), new AtomicInteger(), new AtomicInteger()};
        long start = System.nanoTime();
        Run run = new Run(limiter, new Downstream(), new AtomicInteger(), new AtomicInteger(), classInFlight, classMax,
                start + settle.toNanos(), start + settle.toNanos() + window.toNanos(), stats);
        List<Thread> clients = new ArrayList<>();
        for (int cls = 0; cls < CLASSES.size(); cls++) {
            for (int i = 0; i < phase.clients(cls); i++) {
                int c = cls;
                long seed = SEED + 1_000_000L * cls + i;
                clients.add(Thread.ofVirtual().name(CLASSES.get(cls) + "-" + i).start(() -> client(run, c, seed)));
            }
        }
        for (Thread t : clients) {
            t.join();
        }
        stats.maxInFlight = run.maxInFlight().get();
        for (int cls = 0; cls < CLASSES.size(); cls++) {
            stats.classes[cls].maxInFlight = classMax[cls].get();
        }
        stats.windowNanos = window.toNanos();
    }

    private static void client(Run run, int cls, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        ClassStats mine = new ClassStats();
        try {
            while (true) {
                long think = (long) (-Math.log(1 - random.nextDouble()) * THINK_NANOS);
                long service = (long) (SERVICE_NANOS * (0.8 + 0.4 * random.nextDouble()));
                long now = System.nanoTime();
                if (now - run.end() >= 0) {
                    break;
                }
                Thread.sleep(Duration.ofNanos(Math.min(think, run.end() - now)));
                long t0 = System.nanoTime();
                if (t0 - run.end() >= 0) {
                    break;
                }
                boolean counted = t0 - run.windowStart() >= 0;
                ClassLimiter.Grant grant = run.limiter().acquire(cls);
                long t1 = System.nanoTime();
                if (counted) {
                    mine.attempts++;
                }
                if (grant == null) {
                    if (counted) {
                        mine.refused++;
                    }
                    continue;
                }
                long t2;
                enter(run.inFlight(), run.maxInFlight());
                enter(run.classInFlight()[cls], run.classMax()[cls]);
                try {
                    run.downstream().serve(service);
                } finally {
                    t2 = System.nanoTime();
                    run.classInFlight()[cls].decrementAndGet();
                    run.inFlight().decrementAndGet();
                    grant.release();
                }
                if (counted) {
                    mine.completed++;
                    mine.waits.add(t1 - t0);
                    mine.responses.add(t2 - t0);
                }
                // the time this permit was held inside the window: their sum over the window is the mean in flight
                long from = Math.max(t1 - run.windowStart(), 0);
                long to = Math.min(t2 - run.windowStart(), run.end() - run.windowStart());
                mine.heldNanos += Math.max(0, to - from);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            run.stats().addClient(cls, mine);
        }
    }

    private static void enter(AtomicInteger count, AtomicInteger max) {
        int n = count.incrementAndGet();
        if (n > max.get()) {
            max.accumulateAndGet(n, Math::max);
        }
    }

    // ---------------------------------------------------------------- the report

    static String report(Map<String, Map<Phase, RunStats>> results, Map<String, Map<Phase, List<RunStats>>> rounds,
            Map<String, Integer> warmUpMost, Settings s) {
        StringBuilder b = new StringBuilder();
        double cycle = SERVICE_MILLIS + THINK_MILLIS;
        b.append(String.format(Locale.ROOT, "Mode %s: %d round%s of %d phases × %d limiters, each run %s settling + %s measured, "
                + "the limiters one after the other within each phase (their order rotated each round), all in one JVM%s. "
                + "Limit L = %d, and the downstream serves %d requests at once (%d ms each, uniformly %d-%d ms: at most "
                + "%,.0f requests/s); beyond that they queue there. Every client, in a loop: think %d ms (exponential), wait "
                + "at most %d ms for one permit (refused otherwise), call, release. A client that never waits has a request "
                + "in flight %d/%d of the time, so a class's *offered load* is its clients / %.0f in flight on average "
                + "(clients / %.1f s requests/s). The same seeded times for every limiter.%n%n",
                s.mode(), s.rounds(), s.rounds() == 1 ? "" : "s", Phase.values().length, results.size(), secs(s.settle()),
                secs(s.window()), s.warmUp().isZero() ? ", no warm-up" : ", after a discarded warm-up of " + secs(s.warmUp())
                        + " per limiter and phase", LIMIT, LIMIT, SERVICE_MILLIS, SERVICE_MILLIS * 8 / 10, SERVICE_MILLIS * 12 / 10,
                LIMIT * 1000.0 / SERVICE_MILLIS, THINK_MILLIS, MAX_WAIT_MILLIS, SERVICE_MILLIS, (int) cycle,
                cycle / SERVICE_MILLIS, cycle / 1000));

        b.append("| class | priority | share | guarantee (Sema: floor(share × L); the static split's limit) "
                + "| Netflix partition limit | offered alone | offered, all at their share | offered in the overload |\n");
        b.append("|---|---:|---:|---:|---:|---|---|---|\n");
        Phase[] alone = {Phase.CHECKOUT_ALONE, Phase.BROWSE_ALONE, Phase.BATCH_ALONE};
        for (int c = 0; c < CLASSES.size(); c++) {
            b.append(String.format(Locale.ROOT, "| %s | %d | %.1f | %d | %d | %s | %s | %s |%n", CLASSES.get(c), c + 1,
                    SHARES[c], ClassLimiter.guarantee(SHARES[c], LIMIT), (int) Math.max(1, Math.ceil(SHARES[c] * LIMIT)),
                    offered(alone[c].clients(c), cycle), offered(Phase.AT_SHARE.clients(c), cycle),
                    offered(Phase.OVERLOAD.clients(c), cycle)));
        }
        double total = 0;
        for (int c = 0; c < CLASSES.size(); c++) {
            total += Phase.OVERLOAD.clients(c) * SERVICE_MILLIS / cycle;
        }
        b.append(String.format(Locale.ROOT, "%nIn the overload the three offer %.0f in flight together (%.2f L: %,.0f requests/s "
                + "against %,.0f/s served at most); all at their share, exactly L.%n%n", total, total / LIMIT,
                total * 1000 / SERVICE_MILLIS, LIMIT * 1000.0 / SERVICE_MILLIS));

        b.append("### Overload: all three classes, batch at 3 × its share\n\n");
        b.append("*vs alone*: against the same limiter's run of that class alone (the unloaded baseline). *refused*: of "
                + "the requests made. Waits are of granted requests; *p99 response* is wait + downstream (its queue "
                + "included). *mean in flight*: the class's permit-holding time over the window; *most*: the most in "
                + "flight at once (the *all* row: all classes together, against L = " + LIMIT + ").\n\n");
        b.append("| limiter | class | goodput (req/s) | vs alone | refused | p50 wait | p99 wait | p99 wait vs alone "
                + "| p99 response | mean in flight | most in flight |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (var e : results.entrySet()) {
            RunStats over = e.getValue().get(Phase.OVERLOAD);
            if (over == null) {
                continue;
            }
            for (int c = 0; c < CLASSES.size(); c++) {
                RunStats base = c == BATCH ? null : e.getValue().get(alone[c]);
                b.append(String.format(Locale.ROOT, "| %s | %s | %,.0f | %s | %s | %s | %s | %s | %s | %.1f | %d |%n",
                        c == 0 ? "**" + e.getKey() + "**" : "", CLASSES.get(c), goodput(over, c),
                        base == null ? "" : pct(goodput(over, c) / goodput(base, c)), pct(refused(over, c)),
                        time(wait(over, c, 0.5)), time(wait(over, c, 0.99)),
                        base == null ? "" : times(wait(over, c, 0.99), wait(base, c, 0.99)),
                        time(response(over, c, 0.99)), meanInFlight(over, c), over.classes[c].maxInFlight));
            }
            b.append(String.format(Locale.ROOT, "| | all | %,.0f | | | | | | | %.1f | %s |%n", goodput(over, -1),
                    meanInFlight(over, -1), bold(over.maxInFlight)));
        }

        b.append("\n### Baselines: each class alone at its normal load, and all three at their share\n\n");
        b.append("| limiter | phase | class | goodput (req/s) | refused | p50 wait | p99 wait | p99 response "
                + "| mean in flight | most in flight |\n");
        b.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for (var e : results.entrySet()) {
            boolean first = true;
            for (Phase phase : List.of(Phase.CHECKOUT_ALONE, Phase.BROWSE_ALONE, Phase.AT_SHARE)) {
                RunStats r = e.getValue().get(phase);
                if (r == null) {
                    continue;
                }
                for (int c = 0; c < CLASSES.size(); c++) {
                    if (r.classes[c].attempts == 0) {
                        continue;
                    }
                    b.append(String.format(Locale.ROOT, "| %s | %s | %s | %,.0f | %s | %s | %s | %s | %.1f | %d |%n",
                            first ? "**" + e.getKey() + "**" : "", c == 0 || phase != Phase.AT_SHARE ? phase.label : "",
                            CLASSES.get(c), goodput(r, c), pct(refused(r, c)), time(wait(r, c, 0.5)),
                            time(wait(r, c, 0.99)), time(response(r, c, 0.99)), meanInFlight(r, c),
                            r.classes[c].maxInFlight));
                    first = false;
                }
            }
        }

        b.append(String.format(Locale.ROOT, "%n### Batch alone, offering %.1f L: how much of the limit one class reaches%n%n",
                Phase.BATCH_ALONE.offered[BATCH] / LIMIT));
        b.append("| limiter | goodput (req/s) | refused | p99 wait | mean in flight | of L | most in flight |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|\n");
        for (var e : results.entrySet()) {
            RunStats r = e.getValue().get(Phase.BATCH_ALONE);
            if (r == null) {
                continue;
            }
            b.append(String.format(Locale.ROOT, "| %s | %,.0f | %s | %s | %.1f | %s | %d |%n", e.getKey(), goodput(r, BATCH),
                    pct(refused(r, BATCH)), time(wait(r, BATCH, 0.99)), meanInFlight(r, BATCH),
                    pct(meanInFlight(r, BATCH) / LIMIT), r.classes[BATCH].maxInFlight));
        }

        b.append("\n### Targets\n\n");
        b.append("Checked on the runs pooled over the rounds");
        b.append(s.rounds() > 1 ? "; *each round* gives the same figure per round, to show the noise.\n\n" : ".\n\n");
        b.append("| target | measured | each round | met |\n|---|---|---|---|\n");
        Map<Phase, RunStats> sp = results.get("sema-partitioned");
        Map<Phase, List<RunStats>> spRounds = rounds.get("sema-partitioned");
        if (sp != null && sp.containsKey(Phase.OVERLOAD) && sp.containsKey(Phase.CHECKOUT_ALONE)) {
            RunStats over = sp.get(Phase.OVERLOAD);
            for (Phase base : List.of(Phase.CHECKOUT_ALONE, Phase.AT_SHARE)) {
                RunStats b0 = sp.get(base);
                if (b0 == null) {
                    continue;
                }
                boolean context = base != Phase.CHECKOUT_ALONE;
                String against = context ? "all at their share" : "alone";
                double g = goodput(over, CHECKOUT);
                double g0 = goodput(b0, CHECKOUT);
                b.append(String.format(Locale.ROOT, "| %s | %,.0f/s against %,.0f/s %s: %s | %s | %s |%n", context
                        ? "(context) the same against the run with all at their share: what batch's surge alone costs"
                        : "Sema partitioned: checkout keeps ≥ 99% of its unloaded goodput while batch offers 3 × its share",
                        g, g0, against, pct(g / g0), perRound(spRounds, base, (o, a) -> pct(goodput(o, CHECKOUT)
                                / goodput(a, CHECKOUT))), met(g >= 0.99 * g0)));
                long w = wait(over, CHECKOUT, 0.99);
                long w0 = wait(b0, CHECKOUT, 0.99);
                b.append(String.format(Locale.ROOT, "| %s | %s against %s %s (%s) | %s | %s |%n", context
                        ? "(context) the same against the run with all at their share"
                        : "Sema partitioned: checkout's p99 wait within 1.5 × its unloaded p99 wait",
                        time(w), time(w0), against, times(w, w0), perRound(spRounds, base,
                                (o, a) -> times(wait(o, CHECKOUT, 0.99), wait(a, CHECKOUT, 0.99))), met(w <= 1.5 * w0)));
                if (!context) {
                    long r = response(over, CHECKOUT, 0.99);
                    long r0 = response(b0, CHECKOUT, 0.99);
                    b.append(String.format(Locale.ROOT, "| (context) the same on checkout's p99 response (wait + downstream) "
                            + "| %s against %s alone (%s) | %s | %s |%n", time(r), time(r0), times(r, r0),
                            perRound(spRounds, base, (o, a) -> times(response(o, CHECKOUT, 0.99),
                                    response(a, CHECKOUT, 0.99))), met(r <= 1.5 * r0)));
                }
            }
        }
        for (String kind : List.of("sema-partitioned", "static-split")) {
            RunStats r = results.getOrDefault(kind, Map.of()).get(Phase.BATCH_ALONE);
            if (r == null) {
                continue;
            }
            double frac = meanInFlight(r, BATCH) / LIMIT;
            List<RunStats> each = rounds.get(kind).get(Phase.BATCH_ALONE);
            b.append(String.format(Locale.ROOT, "| %s: a class alone (batch) reaches ≥ 95%% of the limit | mean in flight %s "
                    + "of L, most %d of %d | %s | %s |%n", kind.equals("static-split") ? "(context) the static split"
                    : "Sema partitioned", pct(frac), r.classes[BATCH].maxInFlight, LIMIT,
                    String.join(", ", each.stream().map(x -> pct(meanInFlight(x, BATCH) / LIMIT)).toList()),
                    kind.equals("static-split") ? (frac >= 0.95 ? "reaches it" : "cannot") : met(frac >= 0.95)));
        }
        StringBuilder most = new StringBuilder();
        boolean within = true;
        boolean anySema = false;
        for (var e : results.entrySet()) {
            if (!ClassLimiter.isSema(e.getKey())) {
                continue;
            }
            anySema = true;
            int m = mostInFlight(e.getValue(), warmUpMost.getOrDefault(e.getKey(), 0));
            within &= m <= LIMIT;
            most.append(most.isEmpty() ? "" : ", ").append(e.getKey()).append(' ').append(m);
        }
        if (anySema) {
            b.append(String.format(Locale.ROOT, "| Sema never has more than L = %d in flight (every run, settling%s "
                    + "included) | most in flight: %s | | %s |%n", LIMIT, warmUpMost.isEmpty() ? "" : " and warm-up", most,
                    met(within)));
        }
        return b.toString();
    }

    /** The most in flight at once in any of a limiter's runs, its warm-up's {@code warmUp} included. */
    private static int mostInFlight(Map<Phase, RunStats> phases, int warmUp) {
        return Math.max(warmUp, phases.values().stream().mapToInt(x -> x.maxInFlight).max().orElse(0));
    }

    /** A figure of the overload against a baseline phase, for each round. */
    private static String perRound(Map<Phase, List<RunStats>> rounds, Phase base,
            java.util.function.BiFunction<RunStats, RunStats, String> figure) {
        List<RunStats> over = rounds.get(Phase.OVERLOAD);
        List<RunStats> b0 = rounds.get(base);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < Math.min(over.size(), b0.size()); i++) {
            out.add(figure.apply(over.get(i), b0.get(i)));
        }
        return String.join(", ", out);
    }

    /** Requests completed per second by class {@code c}, or by all classes when {@code c} is -1. */
    private static double goodput(RunStats r, int c) {
        long done = c >= 0 ? r.classes[c].completed : Arrays.stream(r.classes).mapToLong(x -> x.completed).sum();
        return done / r.seconds();
    }

    private static double meanInFlight(RunStats r, int c) {
        long held = c >= 0 ? r.classes[c].heldNanos : Arrays.stream(r.classes).mapToLong(x -> x.heldNanos).sum();
        return held / 1e9 / r.seconds();
    }

    private static double refused(RunStats r, int c) {
        return r.classes[c].attempts == 0 ? 0 : (double) r.classes[c].refused / r.classes[c].attempts;
    }

    private static long wait(RunStats r, int c, double q) {
        return percentile(r.classes[c].waits.sorted(), q);
    }

    private static long response(RunStats r, int c, double q) {
        return percentile(r.classes[c].responses.sorted(), q);
    }

    private static String offered(int clients, double cycleMillis) {
        if (clients == 0) {
            return "";
        }
        double inFlight = clients * SERVICE_MILLIS / cycleMillis;
        return String.format(Locale.ROOT, "%.0f in flight (%.2f L), %,.0f req/s", inFlight, inFlight / LIMIT,
                clients * 1000 / cycleMillis);
    }

    private static String bold(int mostInFlight) {
        return mostInFlight > LIMIT ? "**" + mostInFlight + "**" : Integer.toString(mostInFlight);
    }

    private static String met(boolean ok) {
        return ok ? "met" : "**not met**";
    }

    private static String secs(Duration d) {
        return String.format(Locale.ROOT, "%.1f s", d.toNanos() / 1e9);
    }

    private static String pct(double x) {
        return String.format(Locale.ROOT, "%.1f%%", 100 * x);
    }

    private static String times(long x, long base) {
        if (x < 0 || base <= 0) {
            return "-";
        }
        double r = (double) x / base;
        return String.format(Locale.ROOT, r >= 10 ? "%.0f×" : "%.2f×", r);
    }

    static long percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    static String time(long nanos) {
        if (nanos < 0) {
            return "-";
        }
        if (nanos < 1_000_000) {
            return String.format(Locale.ROOT, "%.0f µs", nanos / 1e3);
        }
        return String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
    }
}
