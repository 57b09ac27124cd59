package dev.sema.bench.redis;

import dev.sema.bench.Program;
import dev.sema.testing.RedisServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
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
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Sema's {@code RedisSemaphore} against Redisson's {@code RPermitExpirableSemaphore} on the same Redis, in
 * one run. A plain timed program rather than JMH: both clients keep connections, I/O threads and timers,
 * and the interesting numbers (commands per operation, wake-up latency percentiles) are not JMH scores.
 * Every grant has the same lease ({@link Impl#LEASE}, 30 s).
 *
 * <ol>
 *   <li><b>Round trips.</b> With only one implementation's client connected: {@code n} uncontended
 *       acquires (limit {@code n}), then their {@code n} releases, then {@code n} acquire + release pairs
 *       (limit 1), each in a window of its own. Each window resets {@code INFO commandstats}
 *       ({@code CONFIG RESETSTAT}) and reads it at the end, less the observer's own commands, and
 *       watches {@code MONITOR}: MONITOR tells the commands a client sent (round trips) from those its
 *       Lua scripts ran, and attributes them to the client by connection name.
 *   <li><b>Throughput.</b> Both clients connected. Uncontended: one thread acquires and releases one
 *       permit in a loop. Contended: 4 platform threads through one client on a limit of 2. A warm-up per
 *       implementation, then timed rounds that alternate the implementations (order reversed every
 *       round); ops/s per round. Commands per contended operation from {@code commandstats} over the
 *       rounds, and from one extra MONITOR round (not timed).
 *   <li><b>Wake-up latency.</b> Holder A and waiter B are separate clients (as two processes would be).
 *       A holds the only permit; B blocks in {@code acquire}; once B is seen waiting (in Redis: queued
 *       for Sema, subscribed for Redisson; in the JVM: its thread parked, for Redisson on its
 *       subscription latch), A releases. Latency is from just before A's {@code release} call to just
 *       after B's {@code acquire} returns, both {@code System.nanoTime()} in this JVM.
 *   <li><b>Idle waiting.</b> A holds, B waits for some seconds: the commands each client sends meanwhile
 *       (MONITOR), i.e. whether a waiter polls.
 *   <li><b>Several waiting clients.</b> {@value #HERD} waiter clients block behind A; A releases and each
 *       in turn holds the permit {@value #HERD_HOLD_MILLIS} ms: what the waiters send for those hand-offs
 *       (MONITOR), i.e. whether a release wakes one waiter or all of them.
 * </ol>
 *
 * <p>Also written: {@code INFO commandstats} time in scripts, so heavier scripts show; the Netty
 * artifacts loaded (one version for Lettuce and Redisson); the machine's load average before and after.
 *
 * <p>Run: {@code java -cp sema-benchmarks/target/benchmarks.jar dev.sema.bench.redis.RedisComparison
 * [quick|full|smoke] [--out results.json]} (bin/benchmarks does; report.py renders the JSON). Redis: a
 * {@code redis-server} started on a random loopback port, or the server named by {@code -Dsema.redis.uri} /
 * {@code SEMA_REDIS_URI} (its statistics are reset and MONITOR runs on it). Exit status 3 means skipped: no
 * {@code redis-server} and no URI.
 */
public final class RedisComparison {
    /** Exit status when there is no Redis to run against. */
    static final int SKIPPED = 3;

    private static final PrintStream OUT = System.out;

    record Settings(int roundTripOps, int warmupOps, double warmupSeconds, int rounds, double roundSeconds,
            int threads, int contendedPermits, double countedSeconds, int wakeupTrials, int wakeupWarmup,
            double idleSeconds, int herdRounds) {

        static Settings of(String mode) {
            return switch (mode) {
                case "quick" -> new Settings(500, 300, 2, 3, 2, 4, 2, 1, 300, 30, 3, 5);
                case "full" -> new Settings(2000, 1000, 5, 5, 5, 4, 2, 2, 1000, 100, 10, 20);
                case "smoke" -> new Settings(50, 20, 0.3, 1, 0.5, 4, 2, 0.3, 20, 3, 1, 1);
                default -> throw new IllegalArgumentException("mode must be quick, full or smoke: " + mode);
            };
        }
    }

    private final Settings settings;
    private final Endpoint redis;
    private final RawRedis observer;
    private final Map<Impl, Map<String, Object>> results = new EnumMap<>(Impl.class);
    private final AtomicLong names = new AtomicLong();
    /** Script SHA-1 -> name: Sema's from sema-redis's resources, Redisson's learned in the round-trip phase. */
    private final Map<String, String> scriptNames = new java.util.HashMap<>(semaScripts());
    private final String run = Long.toString(System.currentTimeMillis(), 36);

    private RedisComparison(Settings settings, Endpoint redis, RawRedis observer) {
        this.settings = settings;
        this.redis = redis;
        this.observer = observer;
        for (Impl impl : Impl.values()) {
            results.put(impl, new LinkedHashMap<>());
        }
    }

    /**
     * Runs the comparison and exits: 0 done, 1 failed, 2 bad arguments, 3 skipped (no Redis).
     *
     * @param args {@code [quick|full|smoke] [--out FILE]}
     */
    public static void main(String[] args) {
        Program.exit(() -> run(args), () -> { });
    }

    @SuppressWarnings("unchecked")
    private static int run(String[] args) throws Exception {
        String mode = "quick";
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--out") && i + 1 < args.length) {
                out = Path.of(args[++i]);
            } else if (!args[i].startsWith("-")) {
                mode = args[i];
            } else {
                System.err.println("usage: RedisComparison [quick|full|smoke] [--out FILE]");
                return 2;
            }
        }
        Settings settings = Settings.of(mode);
        Optional<String> uri = RedisServer.givenUri();
        RedisServer.Source source = RedisServer.Source.INSTALLED;
        Optional<RedisServer.Binary> binary = uri.isPresent() ? Optional.empty() : source.find();
        if (uri.isEmpty() && binary.isEmpty()) {
            System.err.println("Redis comparison skipped: no SEMA_REDIS_URI, and " + source.missing());
            return SKIPPED;
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        long started = System.nanoTime();
        try (RedisServer server = binary.isPresent() ? RedisServer.start(binary.get()) : null) {
            Endpoint redis = server != null ? Endpoint.of(server) : Endpoint.given(uri.get());
            try (RawRedis observer = RawRedis.connect(redis.host(), redis.port())) {
                observer.call("CLIENT", "SETNAME", "bench-observer");
                RedisComparison c = new RedisComparison(settings, redis, observer);
                doc.put("mode", mode);
                doc.put("settings", c.settingsMap());
                doc.put("environment", c.environment());
                OUT.printf("== Redis comparison (%s) against %s %s%n", mode, redis.uri(),
                        redis.started() ? "(started here)" : "(given)");
                c.run();
                ((Map<String, Object>) doc.get("environment")).put("loadAverageAfter", loadAverage());
                Map<String, Object> impls = new LinkedHashMap<>();
                c.results.forEach((impl, r) -> impls.put(impl.name(), r));
                doc.put("implementations", impls);
            }
        }
        doc.put("seconds", Math.round((System.nanoTime() - started) / 1e7) / 100.0);
        if (out != null) {
            Files.createDirectories(out.toAbsolutePath().getParent());
            Files.writeString(out, Json.write(doc), StandardCharsets.UTF_8);
            OUT.println("== wrote " + out);
        }
        OUT.printf("== Redis comparison took %.0f s%n", (System.nanoTime() - started) / 1e9);
        return 0;
    }

    private void run() throws Exception {
        for (Impl impl : Impl.values()) {
            roundTrips(impl);
        }
        Map<Impl, Impl.Client> holders = new EnumMap<>(Impl.class);
        Map<Impl, Impl.Client> waiters = new EnumMap<>(Impl.class);
        try {
            for (Impl impl : Impl.values()) {
                holders.put(impl, impl.connect(redis, "A"));
                waiters.put(impl, impl.connect(redis, "B"));
            }
            throughput(holders);
            contended(holders);
            for (Impl impl : Impl.values()) {
                wakeUp(impl, holders.get(impl), waiters.get(impl));
            }
            for (Impl impl : Impl.values()) {
                idleWait(impl, holders.get(impl), waiters.get(impl));
            }
            for (Impl impl : Impl.values()) {
                herd(impl, holders.get(impl));
            }
        } finally {
            for (Impl.Client c : holders.values()) {
                c.close();
            }
            for (Impl.Client c : waiters.values()) {
                c.close();
            }
        }
    }

    private String name(String what) {
        return "bench-" + run + "-" + what + "-" + names.incrementAndGet();
    }

    // ---------------------------------------------------------------- 1. round trips

    private void roundTrips(Impl impl) throws Exception {
        int n = settings.roundTripOps();
        Map<String, Object> r = new LinkedHashMap<>();
        try (Impl.Client client = impl.connect(redis, "A")) {
            Impl.Handle many = client.semaphore(name("rt-many"), n);
            Impl.Handle one = client.semaphore(name("rt-one"), 1);
            for (int i = 0; i < settings.warmupOps(); i++) {
                one.release(one.acquire());
                many.release(many.acquire());
            }
            List<Object> grants = new ArrayList<>(n);
            CommandWindow w = CommandWindow.open(observer, redis, true);
            long t = System.nanoTime();
            for (int i = 0; i < n; i++) {
                grants.add(many.acquire());
            }
            CommandWindow.Counts c = w.close();
            learn(impl, c, "acquire");
            r.put("acquire", window(impl, c, n, System.nanoTime() - t));
            w = CommandWindow.open(observer, redis, true);
            t = System.nanoTime();
            for (Object g : grants) {
                many.release(g);
            }
            c = w.close();
            learn(impl, c, "release");
            r.put("release", window(impl, c, n, System.nanoTime() - t));
            w = CommandWindow.open(observer, redis, true);
            t = System.nanoTime();
            for (int i = 0; i < n; i++) {
                one.release(one.acquire());
            }
            r.put("acquireRelease", window(impl, w.close(), n, System.nanoTime() - t));
        }
        results.get(impl).put("roundTrips", r);
        OUT.printf("%-36s round trips per op (MONITOR): acquire %s, release %s, acquire+release %s%n", impl.label,
                perOp(r.get("acquire")), perOp(r.get("release")), perOp(r.get("acquireRelease")));
    }

    /**
     * Names the script {@code impl}'s client ran most in a round-trip window after the operation measured
     * there, unless it has a name already (Sema's have theirs from the start).
     */
    private void learn(Impl impl, CommandWindow.Counts c, String operation) {
        CommandWindow.Counts.sumFor(c.scriptsByClient(), impl.prefix).entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .ifPresent(e -> scriptNames.putIfAbsent(e.getKey(), operation.toUpperCase(Locale.ROOT)));
    }

    /** EVALSHA counts by script name ({@link #scriptNames}; else the SHA-1's first 8 digits). */
    private Map<String, Long> scripts(Map<String, Map<String, Long>> bySha, String clientPrefix) {
        Map<String, Long> out = new TreeMap<>();
        CommandWindow.Counts.sumFor(bySha, clientPrefix).forEach((sha, n) -> out.merge(
                scriptNames.getOrDefault(sha, "script " + sha.substring(0, Math.min(8, sha.length()))), n,
                Long::sum));
        return out;
    }

    /** A window's counts for {@code impl}'s clients, with the number of operations it covered. */
    private Map<String, Object> window(Impl impl, CommandWindow.Counts c, long ops, long nanos) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ops", ops);
        m.put("seconds", nanos / 1e9);
        m.put("issued", CommandWindow.Counts.sumFor(c.issuedByClient(), impl.prefix));
        m.put("scripts", scripts(c.scriptsByClient(), impl.prefix));
        m.put("inScripts", CommandWindow.Counts.sumFor(c.inScriptsByClient(), impl.prefix));
        m.put("issuedByClient", c.issuedByClient());
        m.put("executed", c.executed());
        m.put("executedMicros", c.executedMicros());
        return m;
    }

    @SuppressWarnings("unchecked")
    private static String perOp(Object window) {
        Map<String, Object> w = (Map<String, Object>) window;
        Map<String, Long> issued = new TreeMap<>((Map<String, Long>) w.get("issued"));
        issued.remove("evalsha");
        ((Map<String, Long>) w.get("scripts")).forEach((name, n) -> issued.put("evalsha " + name, n));
        long ops = (Long) w.get("ops");
        StringBuilder sb = new StringBuilder();
        long total = 0;
        for (Map.Entry<String, Long> e : issued.entrySet()) {
            if (!e.getKey().equals("ping")) {
                total += e.getValue();
                sb.append(sb.length() == 0 ? "" : ", ").append(e.getKey().toUpperCase(Locale.ROOT)).append(' ')
                        .append(String.format("%.3f", e.getValue() / (double) ops));
            }
        }
        return String.format("%.2f (%s)", total / (double) ops, sb);
    }

    // ---------------------------------------------------------------- 2. throughput

    private void throughput(Map<Impl, Impl.Client> holders) throws Exception {
        Map<Impl, Impl.Handle> h = new EnumMap<>(Impl.class);
        Map<Impl, List<Double>> rounds = new EnumMap<>(Impl.class);
        for (Impl impl : Impl.values()) {
            h.put(impl, holders.get(impl).semaphore(name("uncontended"), 1));
            rounds.put(impl, new ArrayList<>());
            loop(h.get(impl), seconds(settings.warmupSeconds()));
        }
        Map<Impl, Map<String, Long>> executed = new EnumMap<>(Impl.class);
        Map<Impl, Map<String, Long>> micros = new EnumMap<>(Impl.class);
        Map<Impl, Long> totalOps = new EnumMap<>(Impl.class);
        for (int round = 0; round < settings.rounds(); round++) {
            for (Impl impl : order(round)) {
                CommandWindow w = CommandWindow.open(observer, redis, false);
                long t = System.nanoTime();
                long ops = loop(h.get(impl), seconds(settings.roundSeconds()));
                rounds.get(impl).add(ops / ((System.nanoTime() - t) / 1e9));
                CommandWindow.Counts c = w.close();
                c.executed().forEach((k, v) -> executed.computeIfAbsent(impl, x -> new TreeMap<>()).merge(k, v,
                        Long::sum));
                c.executedMicros().forEach((k, v) -> micros.computeIfAbsent(impl, x -> new TreeMap<>()).merge(k, v,
                        Long::sum));
                totalOps.merge(impl, ops, Long::sum);
            }
        }
        for (Impl impl : Impl.values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("threads", 1);
            m.put("opsPerSecond", rounds.get(impl));
            m.put("ops", totalOps.get(impl));
            m.put("executed", executed.get(impl));
            m.put("executedMicros", micros.get(impl));
            results.get(impl).put("uncontended", m);
            OUT.printf("%-36s uncontended, 1 thread: %s ops/s per round%n", impl.label, fmt(rounds.get(impl)));
        }
    }

    private static long loop(Impl.Handle h, long nanos) throws InterruptedException {
        long end = System.nanoTime() + nanos;
        long ops = 0;
        do {
            h.release(h.acquire());
            ops++;
        } while (System.nanoTime() - end < 0);
        return ops;
    }

    private static List<Impl> order(int round) {
        List<Impl> o = new ArrayList<>(List.of(Impl.values()));
        if (round % 2 == 1) {
            java.util.Collections.reverse(o);
        }
        return o;
    }

    private void contended(Map<Impl, Impl.Client> holders) throws Exception {
        int threads = settings.threads();
        Map<Impl, Impl.Handle> h = new EnumMap<>(Impl.class);
        Map<Impl, List<Double>> rounds = new EnumMap<>(Impl.class);
        Map<Impl, List<List<Long>>> perThread = new EnumMap<>(Impl.class);
        Map<Impl, Map<String, Long>> executed = new EnumMap<>(Impl.class);
        Map<Impl, Map<String, Long>> micros = new EnumMap<>(Impl.class);
        Map<Impl, Long> totalOps = new EnumMap<>(Impl.class);
        for (Impl impl : Impl.values()) {
            h.put(impl, holders.get(impl).semaphore(name("contended"), settings.contendedPermits()));
            rounds.put(impl, new ArrayList<>());
            perThread.put(impl, new ArrayList<>());
            executed.put(impl, new TreeMap<>());
            micros.put(impl, new TreeMap<>());
            totalOps.put(impl, 0L);
            contendedRound(h.get(impl), threads, seconds(settings.warmupSeconds()));
        }
        for (int round = 0; round < settings.rounds(); round++) {
            for (Impl impl : order(round)) {
                CommandWindow w = CommandWindow.open(observer, redis, false);
                long t = System.nanoTime();
                long[] ops = contendedRound(h.get(impl), threads, seconds(settings.roundSeconds()));
                double elapsed = (System.nanoTime() - t) / 1e9;
                CommandWindow.Counts c = w.close();
                long sum = Arrays.stream(ops).sum();
                rounds.get(impl).add(sum / elapsed);
                perThread.get(impl).add(Arrays.stream(ops).boxed().toList());
                c.executed().forEach((k, v) -> executed.get(impl).merge(k, v, Long::sum));
                c.executedMicros().forEach((k, v) -> micros.get(impl).merge(k, v, Long::sum));
                totalOps.merge(impl, sum, Long::sum);
            }
        }
        for (Impl impl : Impl.values()) {
            CommandWindow w = CommandWindow.open(observer, redis, true);
            long t = System.nanoTime();
            long[] ops = contendedRound(h.get(impl), threads, seconds(settings.countedSeconds()));
            Map<String, Object> counted = window(impl, w.close(), Arrays.stream(ops).sum(), System.nanoTime() - t);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("threads", threads);
            m.put("permits", settings.contendedPermits());
            m.put("opsPerSecond", rounds.get(impl));
            m.put("opsPerThread", perThread.get(impl));
            m.put("ops", totalOps.get(impl));
            m.put("executed", executed.get(impl));
            m.put("executedMicros", micros.get(impl));
            m.put("counted", counted);
            results.get(impl).put("contended", m);
            OUT.printf("%-36s contended, %d threads, limit %d: %s ops/s per round; round trips per op (MONITOR "
                    + "round) %s%n", impl.label, threads, settings.contendedPermits(), fmt(rounds.get(impl)),
                    perOp(counted));
        }
    }

    /** {@code threads} platform threads acquire and release for {@code nanos}; operations per thread. */
    private static long[] contendedRound(Impl.Handle h, int threads, long nanos) throws InterruptedException {
        long[] ops = new long[threads];
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long[] end = new long[1];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            int me = i;
            ts[i] = Thread.ofPlatform().name("contender-" + i).start(() -> {
                try {
                    start.await();
                    long stop = end[0];
                    long n = 0;
                    while (System.nanoTime() - stop < 0) {
                        h.release(h.acquire());
                        if (System.nanoTime() - stop < 0) {
                            n++;
                        }
                    }
                    ops[me] = n;
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
        }
        end[0] = System.nanoTime() + nanos;
        start.countDown(); // publishes end[0] to the threads
        for (Thread t : ts) {
            t.join(TimeUnit.SECONDS.toMillis(60) + TimeUnit.NANOSECONDS.toMillis(nanos));
            if (t.isAlive()) {
                throw new IllegalStateException(t.getName() + " did not finish: stuck in acquire?");
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a contender failed", failure.get());
        }
        return ops;
    }

    // ---------------------------------------------------------------- 3. wake-up latency

    private void wakeUp(Impl impl, Impl.Client holder, Impl.Client waiter) throws Exception {
        String name = name("wakeup");
        Impl.Handle a = holder.semaphore(name, 1);
        Impl.Handle b = waiter.semaphore(name, 1);
        try (Waiter w = new Waiter(b)) {
            for (int i = 0; i < settings.wakeupWarmup(); i++) {
                w.trial(a, observer);
            }
            int n = settings.wakeupTrials();
            long[] latency = new long[n];
            long[] releaseCall = new long[n];
            CommandWindow win = CommandWindow.open(observer, redis, false);
            for (int i = 0; i < n; i++) {
                long[] t = w.trial(a, observer);
                latency[i] = t[0];
                releaseCall[i] = t[1];
            }
            CommandWindow.Counts c = win.close();
            // The same cycle again, untimed, under MONITOR: what the holder and the waiter each send.
            int counted = Math.min(n, 50);
            win = CommandWindow.open(observer, redis, true);
            for (int i = 0; i < counted; i++) {
                w.trial(a, observer);
            }
            CommandWindow.Counts cc = win.close();
            Map<String, Object> cycle = new LinkedHashMap<>();
            cycle.put("trials", counted);
            cycle.put("holderIssued", CommandWindow.Counts.sumFor(cc.issuedByClient(), impl.prefix + "A"));
            cycle.put("waiterIssued", CommandWindow.Counts.sumFor(cc.issuedByClient(), impl.prefix + "B"));
            cycle.put("holderScripts", scripts(cc.scriptsByClient(), impl.prefix + "A"));
            cycle.put("waiterScripts", scripts(cc.scriptsByClient(), impl.prefix + "B"));
            cycle.put("issuedByClient", cc.issuedByClient());
            cycle.put("inScriptsByClient", cc.inScriptsByClient());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("trials", n);
            m.put("latencyMicros", percentiles(latency));
            m.put("releaseCallMicros", percentiles(releaseCall));
            m.put("executed", c.executed());
            m.put("executedMicros", c.executedMicros());
            m.put("counted", cycle);
            results.get(impl).put("wakeup", m);
            Map<String, Double> p = percentiles(latency);
            OUT.printf("%-36s wake-up latency over %d trials: p50 %.0f us, p90 %.0f us, p99 %.0f us, max %.0f us; "
                    + "sent in %d more cycles (MONITOR): holder %s %s, waiter %s %s%n", impl.label, n, p.get("p50"),
                    p.get("p90"), p.get("p99"), p.get("max"), counted, cycle.get("holderIssued"),
                    cycle.get("holderScripts"), cycle.get("waiterIssued"), cycle.get("waiterScripts"));
        }
    }

    /** B's thread: acquires when told to, notes the time, releases, reports. */
    private static final class Waiter implements AutoCloseable {
        private final BlockingQueue<Boolean> go = new ArrayBlockingQueue<>(1);
        private final BlockingQueue<Object> done = new ArrayBlockingQueue<>(1);
        private final Impl.Handle b;
        private final Thread thread;

        Waiter(Impl.Handle b) {
            this(b, 0);
        }

        /** A waiter that holds each grant for {@code holdNanos} (its work) before releasing it. */
        Waiter(Impl.Handle b, long holdNanos) {
            this.b = b;
            thread = Thread.ofPlatform().daemon().name("waiter-B").start(() -> {
                try {
                    while (go.take()) {
                        Object g = b.acquire();
                        long acquired = System.nanoTime();
                        if (holdNanos > 0) {
                            Thread.sleep(Duration.ofNanos(holdNanos)); // the work done with the permit
                        }
                        b.release(g);
                        done.put(acquired);
                    }
                } catch (Throwable e) {
                    done.offer(e);
                }
            });
        }

        /** One trial: {latency, duration of A's release call}, in nanoseconds. */
        long[] trial(Impl.Handle a, RawRedis observer) throws Exception {
            Object held = a.acquire();
            startBlocked(observer);
            return finish(a, held);
        }

        /** Lets B acquire, and returns once B is blocked (A holds the only permit). */
        void startBlocked(RawRedis observer) throws Exception {
            startBlocked(1, observer);
        }

        /** Lets B acquire, and returns once B is blocked as the {@code nth} waiting client. */
        void startBlocked(int nth, RawRedis observer) throws Exception {
            go.put(Boolean.TRUE);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!b.blocked(thread, nth, observer)) {
                if (!done.isEmpty()) {
                    throw new IllegalStateException("the waiter acquired while the holder held the only permit: "
                            + done.peek());
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new TimeoutException("the waiter did not block within 10 s");
                }
                LockSupport.parkNanos(100_000);
            }
        }

        /** A releases {@code held}; returns {latency, duration of A's release call} once B has acquired. */
        long[] finish(Impl.Handle a, Object held) throws Exception {
            long t0 = System.nanoTime();
            a.release(held);
            long released = System.nanoTime();
            return new long[] {awaitAcquired() - t0, released - t0};
        }

        /** Waits until B has acquired (and released again); returns when it acquired ({@code nanoTime}). */
        long awaitAcquired() throws Exception {
            Object r = done.poll(30, TimeUnit.SECONDS);
            if (r == null) {
                throw new TimeoutException("the waiter was not woken within 30 s of the release");
            }
            if (r instanceof Throwable e) {
                throw new IllegalStateException("the waiter failed", e);
            }
            return (Long) r;
        }

        @Override
        public void close() throws InterruptedException {
            go.offer(Boolean.FALSE, 1, TimeUnit.SECONDS);
            thread.join(5_000);
        }
    }

    // ---------------------------------------------------------------- 4. idle waiting

    private void idleWait(Impl impl, Impl.Client holder, Impl.Client waiter) throws Exception {
        String name = name("idle");
        Impl.Handle a = holder.semaphore(name, 1);
        Impl.Handle b = waiter.semaphore(name, 1);
        try (Waiter w = new Waiter(b)) {
            Object held = a.acquire();
            w.startBlocked(observer);
            CommandWindow win = CommandWindow.open(observer, redis, true);
            long t = System.nanoTime();
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(seconds(settings.idleSeconds()))); // the measured idle time
            CommandWindow.Counts c = win.close();
            double elapsed = (System.nanoTime() - t) / 1e9;
            w.finish(a, held);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("seconds", elapsed);
            m.put("holderIssued", CommandWindow.Counts.sumFor(c.issuedByClient(), impl.prefix + "A"));
            m.put("waiterIssued", CommandWindow.Counts.sumFor(c.issuedByClient(), impl.prefix + "B"));
            m.put("holderScripts", scripts(c.scriptsByClient(), impl.prefix + "A"));
            m.put("waiterScripts", scripts(c.scriptsByClient(), impl.prefix + "B"));
            m.put("holderInScripts", CommandWindow.Counts.sumFor(c.inScriptsByClient(), impl.prefix + "A"));
            m.put("waiterInScripts", CommandWindow.Counts.sumFor(c.inScriptsByClient(), impl.prefix + "B"));
            m.put("issuedByClient", c.issuedByClient());
            results.get(impl).put("idleWait", m);
            OUT.printf("%-36s while one waiter waits %.1f s: holder sent %s, waiter sent %s %s%n", impl.label,
                    elapsed, m.get("holderIssued"), m.get("waiterIssued"), m.get("waiterScripts"));
        }
    }

    // ---------------------------------------------------------------- 5. several waiting clients

    /**
     * {@code HERD} waiter clients (as many processes) each block in {@code acquire} on a limit of 1 held by
     * A; A releases, and each waiter in turn acquires, holds the permit {@code HERD_HOLD_MILLIS} and
     * releases it, until all have had it: {@code HERD} hand-offs, repeated for some rounds. Counts
     * (MONITOR) what the waiters sent.
     */
    private void herd(Impl impl, Impl.Client holder) throws Exception {
        String name = name("herd");
        Impl.Handle a = holder.semaphore(name, 1);
        List<Impl.Client> clients = new ArrayList<>();
        List<Waiter> waiters = new ArrayList<>();
        try {
            for (int i = 0; i < HERD; i++) {
                Impl.Client c = impl.connect(redis, "W" + i);
                clients.add(c);
                waiters.add(new Waiter(c.semaphore(name, 1), TimeUnit.MILLISECONDS.toNanos(HERD_HOLD_MILLIS)));
            }
            int rounds = settings.herdRounds();
            List<Double> millis = new ArrayList<>();
            Map<String, Long> waitersIssued = new TreeMap<>();
            Map<String, Long> waitersScripts = new TreeMap<>();
            Map<String, Long> holderIssued = new TreeMap<>();
            Map<String, Long> executed = new TreeMap<>();
            for (int round = -1; round < rounds; round++) { // round -1 warms the new clients up
                Object held = a.acquire();
                for (int i = 0; i < waiters.size(); i++) {
                    waiters.get(i).startBlocked(i + 1, observer);
                }
                if (round < 0) {
                    a.release(held);
                    for (Waiter w : waiters) {
                        w.awaitAcquired();
                    }
                    continue;
                }
                CommandWindow win = CommandWindow.open(observer, redis, true);
                long t0 = System.nanoTime();
                a.release(held);
                long last = t0;
                for (Waiter w : waiters) {
                    last = Math.max(last, w.awaitAcquired());
                }
                CommandWindow.Counts c = win.close();
                millis.add((last - t0) / 1e6);
                merge(waitersIssued, CommandWindow.Counts.sumFor(c.issuedByClient(), impl.prefix + "W"));
                merge(waitersScripts, scripts(c.scriptsByClient(), impl.prefix + "W"));
                merge(holderIssued, CommandWindow.Counts.sumFor(c.issuedByClient(), impl.prefix + "A"));
                merge(executed, c.executed());
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("waiters", HERD);
            m.put("rounds", rounds);
            m.put("handOffs", HERD * rounds);
            m.put("holdMillis", HERD_HOLD_MILLIS);
            m.put("millisToLast", millis);
            m.put("waitersIssued", waitersIssued);
            m.put("waitersScripts", waitersScripts);
            m.put("holderIssued", holderIssued);
            m.put("executed", executed);
            results.get(impl).put("herd", m);
            OUT.printf("%-36s %d waiting clients, %d rounds of %d hand-offs: the waiters sent %s %s%n", impl.label,
                    HERD, rounds, HERD, waitersIssued, waitersScripts);
        } finally {
            for (Waiter w : waiters) {
                w.close();
            }
            for (Impl.Client c : clients) {
                c.close();
            }
        }
    }

    /** The number of waiting clients in {@link #herd}. */
    static final int HERD = 4;

    /** How long each waiter in {@link #herd} holds the permit: long enough for the others to try and fail. */
    static final long HERD_HOLD_MILLIS = 10;

    // ---------------------------------------------------------------- helpers

    /**
     * The SHA-1 of each of Sema's scripts, put together as sema-redis's {@code Script.compose} does
     * ({@code prelude.lua}, the operation's fast path before its {@code --@common} line, {@code common.lua},
     * the rest of the operation), so that MONITOR's EVALSHA lines can be named.
     */
    static Map<String, String> semaScripts() {
        Map<String, String> m = new java.util.HashMap<>();
        ClassLoader cl = RedisComparison.class.getClassLoader();
        try {
            String prelude = resource(cl, "dev/sema/redis/prelude.lua");
            String common = resource(cl, "dev/sema/redis/common.lua");
            for (String op : List.of("acquire", "release", "split", "merge", "forget", "cancel", "renew",
                    "set_limit", "close", "status")) {
                String file = resource(cl, "dev/sema/redis/" + op + ".lua");
                int at = file.indexOf("--@common\n");
                String source = prelude + "\n" + (at < 0 ? "" : file.substring(0, at)) + common + "\n"
                        + (at < 0 ? file : file.substring(at + "--@common\n".length()));
                byte[] d = java.security.MessageDigest.getInstance("SHA-1").digest(
                        source.getBytes(StandardCharsets.UTF_8));
                m.put(java.util.HexFormat.of().formatHex(d), op.toUpperCase(Locale.ROOT));
            }
        } catch (IOException | java.security.NoSuchAlgorithmException e) {
            OUT.println("(Sema's scripts cannot be named: " + e + ")");
        }
        return m;
    }

    private static String resource(ClassLoader cl, String name) throws IOException {
        try (InputStream in = cl.getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException(name + " not found");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static long seconds(double s) {
        return (long) (s * 1e9);
    }

    private static Map<String, Double> percentiles(long[] nanos) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("min", s[0] / 1e3);
        m.put("p50", rank(s, 0.50) / 1e3);
        m.put("p90", rank(s, 0.90) / 1e3);
        m.put("p99", rank(s, 0.99) / 1e3);
        m.put("max", s[s.length - 1] / 1e3);
        m.put("mean", Arrays.stream(s).average().orElse(Double.NaN) / 1e3);
        return m;
    }

    private static void merge(Map<String, Long> into, Map<String, Long> counts) {
        counts.forEach((k, v) -> into.merge(k, v, Long::sum));
    }

    /** Nearest-rank percentile. */
    private static long rank(long[] sorted, double p) {
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    private static String fmt(List<Double> xs) {
        StringBuilder sb = new StringBuilder();
        for (double x : xs) {
            sb.append(sb.length() == 0 ? "" : ", ").append(String.format("%,.0f", x));
        }
        return sb.toString();
    }

    private Map<String, Object> settingsMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("roundTripOps", settings.roundTripOps());
        m.put("warmupOps", settings.warmupOps());
        m.put("warmupSeconds", settings.warmupSeconds());
        m.put("rounds", settings.rounds());
        m.put("roundSeconds", settings.roundSeconds());
        m.put("threads", settings.threads());
        m.put("contendedPermits", settings.contendedPermits());
        m.put("countedSeconds", settings.countedSeconds());
        m.put("wakeupTrials", settings.wakeupTrials());
        m.put("wakeupWarmup", settings.wakeupWarmup());
        m.put("idleSeconds", settings.idleSeconds());
        m.put("herdRounds", settings.herdRounds());
        m.put("leaseMillis", Impl.LEASE.toMillis());
        return m;
    }

    /** The 1-minute load average, from {@code /proc/loadavg} where there is one. */
    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException | RuntimeException e) {
            return "n/a";
        }
    }

    private Map<String, Object> environment() throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        String info = (String) observer.call("INFO", "server");
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                m.put("redis", line.substring("redis_version:".length()));
            }
        }
        m.put("redisStarted", redis.started());
        Properties p = new Properties();
        try (InputStream in = RedisComparison.class.getResourceAsStream("versions.properties")) {
            if (in != null) {
                p.load(in);
            }
        }
        m.put("redisson", p.getProperty("redisson", "?"));
        m.put("lettuce", p.getProperty("lettuce", "?"));
        Map<String, String> netty = new TreeMap<>();
        io.netty.util.Version.identify().forEach((artifact, v) -> netty.put(artifact, v.artifactVersion()));
        m.put("netty", netty);
        m.put("nettyVersions", netty.values().stream().distinct().sorted().toList());
        m.put("jdk", Runtime.version().toString() + " (" + System.getProperty("java.vm.name") + ")");
        m.put("cores", Runtime.getRuntime().availableProcessors());
        m.put("loadAverageBefore", loadAverage());
        m.put("redissonConfig", Impl.redissonSettings(redis));
        OUT.println("Netty artifacts loaded: " + netty);
        return m;
    }
}
