package dev.sema.bench.redis;

import dev.sema.Permit;
import dev.sema.bench.Program;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one semaphore operation costs Redis, in CPU instructions: Sema's {@code RedisSemaphore} against
 * Redisson's {@code RPermitExpirableSemaphore}, each through its real client, on a {@code redis-server} run
 * under valgrind's callgrind, which counts every instruction the server executes.
 *
 * <p><b>Why instructions.</b> {@link RedisComparison} reports the time Redis spends in scripts from
 * {@code INFO commandstats}; that is wall-clock time, and on a small shared machine it moves by a factor of
 * two from run to run with whatever else runs. The number of instructions the server executes for the
 * same commands does not depend on load, frequency scaling or the other processes, so it moves only when
 * the scripts, the clients' commands or the Redis build change: it tells which side's scripts are heavier,
 * and by how much, reproducibly. It is not time: instructions differ in cost (cache misses, system calls),
 * and the server's network work counts only as far as it runs in user space.
 *
 * <p><b>What runs.</b> One {@code redis-server} ({@code $SEMA_REDIS_SERVER}, else {@code redis-server} on
 * the {@code PATH}, {@code /usr/bin} or {@code /usr/local/bin}: {@link RedisServer.Source#INSTALLED}) is started as
 * {@code valgrind --tool=callgrind --collect-atstart=yes redis-server --port P --bind 127.0.0.1 --save ''
 * --appendonly no} on a free loopback port, in a temporary directory that is deleted at the end. Each
 * measurement is a window: the counters are zeroed ({@code callgrind_control -z}), the operations run, the
 * counters are dumped ({@code callgrind_control -d}), and the dump's {@code summary:} line is the number of
 * instructions the server executed in between. The commands Redis executed in the window, those run by
 * scripts included, are counted as well ({@code INFO commandstats}, reset before the zeroing and read after
 * the dump, by an observer connection that stays connected and idle meanwhile). The windows, in order:
 * <ol>
 *   <li><b>Idle server</b>: no client connected (but the observer, idle), for a second or two: what the
 *       server does on its own, that is its timer ({@code serverCron}, 10 times a second), and the zeroing and
 *       dumping requests. Again at the end; the mean of the two, per second, is the timer's rate.
 *   <li><b>PING</b>: {@code n} PINGs from a minimal raw client ({@link RawRedis}): the floor of one round
 *       trip (reading, parsing and answering a command).
 *   <li><b>Empty script</b>: {@code n} {@code EVALSHA} calls of {@code return 0} with 4 keys and 4
 *       arguments, the shape of Sema's ACQUIRE call: the floor of one script call.
 *   <li>For each implementation ({@link Impl}), with only its own client connected: {@code warm-up}
 *       acquire + release pairs on a semaphore of limit 2, then a window of {@code n} pairs from one thread
 *       (<b>uncontended</b>); then a semaphore of limit 1, a warm-up, and a window of {@code n} pairs in all
 *       from 2 threads of the same client (<b>contended</b>: one thread often waits for the other's
 *       release).
 *   <li><b>Through a partition</b>: the same two windows for Sema's {@code RedisSemaphore} through a partition
 *       of a partitioned semaphore (API.md §11a: partitions checkout 0.6, browse 0.3, batch 0.1; acquires and
 *       releases through {@code partition("browse")}), whose scripts keep each partition's counts and queue
 *       too. The report gives its ratio to the unpartitioned rows.
 * </ol>
 *
 * <p><b>What counts.</b> Everything the server executes in a window: the commands and scripts the client
 * sends for the operations, and also whatever else the client sends meanwhile (connection pings,
 * heartbeats, renewals, subscriptions), which is fair, as it is load the client puts on Redis. One thing is
 * taken out: the server's own timer, at the idle windows' rate times the window's length. It is no part of
 * the operations, and its share depends on how long the window lasts (seconds: the server runs tens of
 * times slower under valgrind), hence on the machine's load and on the client's own speed, the very noise
 * the instruction count is meant to avoid; it is an estimate, good to a few thousand instructions per
 * window. The report shows the figure with the timer too. Only the server's instructions count: nothing
 * the clients do in their own JVM does.
 *
 * <p><b>Run:</b> {@code bin/benchmarks redis-cost [full|quick|smoke]} (writes
 * {@code sema-benchmarks/target/results/redis-cost.md} and {@code .json}), or {@code java -cp
 * sema-benchmarks/target/benchmarks.jar dev.sema.bench.redis.RedisCost [full|quick|smoke] [--out FILE.md]}.
 * {@code n} is 5000 (full), 2000 (quick, the default) or 200 (smoke). It needs {@code valgrind} and
 * {@code callgrind_control} on the {@code PATH} and a {@code redis-server}; without them it exits with
 * status 3. It always starts its own server: {@code SEMA_REDIS_URI} is not used.
 */
public final class RedisCost {
    /** Exit status when there is no redis-server, valgrind or callgrind_control to run with. */
    static final int SKIPPED = 3;

    private static final PrintStream OUT = System.out;
    /** How long valgrind may take to start the server (it instruments the whole binary first). */
    private static final long START_SECONDS = 60;
    /** How long one callgrind_control request may take. */
    private static final long CONTROL_SECONDS = 60;

    record Settings(int n, int warmup, double idleSeconds) {
        static Settings of(String mode) {
            return switch (mode) {
                case "full" -> new Settings(5000, 500, 2);
                case "quick" -> new Settings(2000, 300, 2);
                case "smoke" -> new Settings(200, 100, 1);
                default -> throw new IllegalArgumentException("mode must be full, quick or smoke: " + mode);
            };
        }
    }

    /** One window's result: {@code ops} operations cost {@code instructions} ({@code summary:}). */
    record Row(String implementation, String scenario, String unit, long ops, long instructions, long totals,
            double seconds, Map<String, Long> executed) {
        double perOp() {
            return instructions / (double) ops;
        }

        /** Instructions per operation less the server timer's share, {@code timerPerSecond} times the window. */
        double netPerOp(double timerPerSecond) {
            return (instructions - timerPerSecond * seconds) / ops;
        }

        /** Commands Redis executed per operation, those run by scripts included. */
        double commandsPerOp() {
            return executed.values().stream().mapToLong(Long::longValue).sum() / (double) ops;
        }
    }

    private final Settings settings;
    private final Callgrind cg;
    private final Endpoint redis;
    private final String run = Long.toString(System.currentTimeMillis(), 36);
    private final List<Row> rows = new ArrayList<>();
    private final List<Object> idleWindows = new ArrayList<>();
    /** The idle server's instructions per second: its own timer, from the idle windows. */
    private double idlePerSecond;
    /** Reads {@code INFO commandstats} around each window, outside it (connected throughout). */
    private RawRedis observer;

    private RedisCost(Settings settings, Callgrind cg) {
        this.settings = settings;
        this.cg = cg;
        this.redis = Endpoint.of(cg.server);
    }

    /**
     * Runs the measurements and exits: 0 done, 1 failed, 2 bad arguments, 3 skipped (no redis-server,
     * valgrind or callgrind_control).
     *
     * @param args {@code [full|quick|smoke] [--out FILE.md]}; the JSON goes next to the Markdown file
     */
    public static void main(String[] args) {
        Program.exit(() -> run(args), () -> { });
    }

    private static int run(String[] args) throws Exception {
        String mode = "quick";
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--out") && i + 1 < args.length) {
                out = Path.of(args[++i]);
            } else if (!args[i].startsWith("-") && List.of("full", "quick", "smoke").contains(args[i])) {
                mode = args[i];
            } else {
                System.err.println("usage: RedisCost [full|quick|smoke] [--out FILE.md]");
                return 2;
            }
        }
        Settings settings = Settings.of(mode);
        Optional<RedisServer.Binary> redisServer = RedisServer.Source.INSTALLED.find();
        Optional<Path> valgrind = onPath("valgrind");
        Optional<Path> control = onPath("callgrind_control");
        if (redisServer.isEmpty() || valgrind.isEmpty() || control.isEmpty()) {
            List<String> missing = new ArrayList<>();
            if (redisServer.isEmpty()) {
                missing.add("redis-server (PATH, /usr/bin, /usr/local/bin or $SEMA_REDIS_SERVER)");
            }
            if (valgrind.isEmpty()) {
                missing.add("valgrind (PATH)");
            }
            if (control.isEmpty()) {
                missing.add("callgrind_control (PATH)");
            }
            System.err.println("Redis cost skipped: no " + String.join(", no ", missing)
                    + "; install them with 'apt-get install redis-server valgrind'");
            return SKIPPED;
        }
        long started = System.nanoTime();
        Map<String, Object> doc = new LinkedHashMap<>();
        String markdown;
        try (Callgrind cg = Callgrind.start(valgrind.get(), control.get(), redisServer.get())) {
            RedisCost c = new RedisCost(settings, cg);
            String redisVersion = c.redisVersion();
            String valgrindVersion = version(valgrind.get());
            OUT.printf("== Redis cost (%s): n = %d, warm-up %d; redis-server %s (%s) under %s callgrind, pid %d, "
                    + "port %d%n", mode, settings.n(), settings.warmup(), redisVersion, redisServer.get().path(),
                    valgrindVersion, cg.pid(), cg.server.port());
            c.measureAll();
            doc.put("mode", mode);
            doc.put("n", settings.n());
            doc.put("warmup", settings.warmup());
            doc.put("redisServer", redisServer.get().path().toString());
            doc.put("redisVersion", redisVersion);
            doc.put("valgrind", valgrindVersion);
            doc.put("idleInstructionsPerSecond", Math.round(c.idlePerSecond));
            doc.put("idleWindows", c.idleWindows);
            doc.put("rows", c.rowsJson());
            markdown = c.markdown(mode, redisVersion, valgrindVersion);
        }
        doc.put("seconds", Math.round((System.nanoTime() - started) / 1e7) / 100.0);
        OUT.println();
        OUT.print(markdown);
        if (out != null) {
            Path abs = out.toAbsolutePath();
            Files.createDirectories(abs.getParent());
            Files.writeString(abs, markdown, StandardCharsets.UTF_8);
            String file = abs.getFileName().toString();
            Path json = abs.resolveSibling((file.endsWith(".md") ? file.substring(0, file.length() - 3) : file)
                    + ".json");
            Files.writeString(json, Json.write(doc), StandardCharsets.UTF_8);
            OUT.println("== wrote " + out + " and " + json.getFileName());
        }
        OUT.printf("== Redis cost took %.0f s%n", (System.nanoTime() - started) / 1e9);
        return 0;
    }

    // ---------------------------------------------------------------- the windows

    private void measureAll() throws Exception {
        try (RawRedis o = RawRedis.connect(redis.host(), redis.port())) {
            o.call("CLIENT", "SETNAME", "bench-observer");
            observer = o;
            double before = idle("before");
            try (RawRedis raw = RawRedis.connect(redis.host(), redis.port())) {
                raw.call("CLIENT", "SETNAME", "cost-raw");
                ping(raw);
                emptyScript(raw);
            }
            for (Impl impl : Impl.values()) {
                try (Impl.Client client = impl.connect(redis, "cost")) {
                    uncontended(impl, client);
                    contended(impl, client);
                }
                if (impl == Impl.SEMA) {
                    try (Impl.Client client = partitioned(redis, "cost-partitioned")) {
                        uncontended(PARTITIONED, client);
                        contended(PARTITIONED, client);
                    }
                }
            }
            idlePerSecond = (before + idle("after")) / 2;
        }
    }

    /** An idle window (no client but the observer, idle too): the server's instructions per second. */
    private double idle(String when) throws Exception {
        cg.zero();
        long t = System.nanoTime();
        Thread.sleep(Math.round(settings.idleSeconds() * 1000));
        Callgrind.Dump d = cg.dump();
        double seconds = (System.nanoTime() - t) / 1e9;
        double perSecond = d.summary() / seconds;
        idleWindows.add(Map.of("when", when, "instructions", d.summary(), "seconds",
                Math.round(seconds * 1000) / 1000.0));
        OUT.printf("%-36s %,d instructions in %.2f s: %,.0f per second%n", "idle server, " + when, d.summary(),
                seconds, perSecond);
        return perSecond;
    }

    private void ping(RawRedis raw) throws Exception {
        int n = settings.n();
        for (int i = 0; i < settings.warmup(); i++) {
            raw.call("PING");
        }
        window("raw client", "PING (one round trip)", "command", n, () -> {
            for (int i = 0; i < n; i++) {
                raw.call("PING");
            }
        });
    }

    private void emptyScript(RawRedis raw) throws Exception {
        int n = settings.n();
        String sha = (String) raw.call("SCRIPT", "LOAD", "return 0");
        String p = "sem:{cost-" + run + "-empty}:";
        String[] call = {"EVALSHA", sha, "4", p + "meta", p + "holders", p + "leases", p + "queue",
            "0123456789abcdef0123456789abcdef.1:1", "1", "30000", "10000"};
        for (int i = 0; i < settings.warmup(); i++) {
            raw.call(call);
        }
        window("raw client", "EVALSHA of `return 0`, 4 keys + 4 arguments (one script call)", "command", n, () -> {
            for (int i = 0; i < n; i++) {
                raw.call(call);
            }
        });
    }

    /** The label of the rows measured through a partition. */
    static final String PARTITIONED = "Sema RedisSemaphore, through a partition";

    /**
     * Sema's client whose handles are the view of partition {@code browse} of a semaphore partitioned into
     * checkout 0.6, browse 0.3 and batch 0.1 (a middle partition: its requests are neither first nor last).
     */
    static Impl.Client partitioned(Endpoint redis, String role) {
        RedisSemaphores rs = RedisSemaphores.connect(redis.uri() + "?timeout=10s&clientName=" + Impl.SEMA.prefix + role);
        return new Impl.Client() {
            @Override
            public Impl.Handle semaphore(String name, int permits) {
                RedisSemaphore s = rs.semaphore(name).permits(permits).lease(Impl.LEASE).partition("checkout", 0.6)
                        .partition("browse", 0.3).partition("batch", 0.1).build().partition("browse");
                return new Impl.Handle() {
                    @Override
                    public Object acquire() throws InterruptedException {
                        return s.acquire(1);
                    }

                    @Override
                    public void release(Object grant) {
                        ((Permit) grant).close();
                    }

                    @Override
                    public boolean blocked(Thread waiter, int waiters, RawRedis observer) throws IOException {
                        Thread.State st = waiter.getState();
                        return (st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING)
                                && s.queueLength() >= waiters;
                    }
                };
            }

            @Override
            public void close() {
                rs.close();
            }
        };
    }

    private void uncontended(Impl impl, Impl.Client client) throws Exception {
        uncontended(impl.label, client);
    }

    private void uncontended(String label, Impl.Client client) throws Exception {
        int n = settings.n();
        Impl.Handle h = client.semaphore("cost-" + run + "-" + (label.equals(PARTITIONED) ? "p-" : "") + "uncontended", 2);
        for (int i = 0; i < settings.warmup(); i++) {
            h.release(h.acquire());
        }
        window(label, "uncontended: 1 thread, limit 2", "pair", n, () -> {
            for (int i = 0; i < n; i++) {
                h.release(h.acquire());
            }
        });
    }

    private void contended(Impl impl, Impl.Client client) throws Exception {
        contended(impl.label, client);
    }

    private void contended(String label, Impl.Client client) throws Exception {
        int n = settings.n();
        Impl.Handle h = client.semaphore("cost-" + run + "-" + (label.equals(PARTITIONED) ? "p-" : "") + "contended", 1);
        pairs(h, 2, settings.warmup());
        window(label, "contended: 2 threads, limit 1", "pair", n, () -> pairs(h, 2, n));
    }

    /** {@code threads} platform threads acquire and release until {@code total} pairs are done in all. */
    private static void pairs(Impl.Handle h, int threads, int total) throws InterruptedException {
        AtomicInteger left = new AtomicInteger(total);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = Thread.ofPlatform().daemon().name("contender-" + i).start(() -> {
                try {
                    while (left.getAndDecrement() > 0 && failure.get() == null) {
                        h.release(h.acquire());
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
        }
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
        for (Thread t : ts) {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            if (t.isAlive()) {
                throw new IllegalStateException(t.getName() + " did not finish within 10 minutes: stuck in acquire?");
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a contender failed", failure.get());
        }
    }

    interface Ops {
        void run() throws Exception;
    }

    /**
     * Zeroes the counters, runs {@code ops}, dumps them: one row. The commands Redis executed meanwhile are
     * counted too ({@code INFO commandstats}, reset before the zeroing and read after the dump).
     */
    private void window(String implementation, String scenario, String unit, long n, Ops ops) throws Exception {
        CommandWindow commands = CommandWindow.open(observer, redis, false);
        cg.zero();
        long t = System.nanoTime();
        ops.run();
        double seconds = (System.nanoTime() - t) / 1e9;
        Callgrind.Dump d = cg.dump();
        Row r = new Row(implementation, scenario, unit, n, d.summary(), d.totals(), seconds,
                commands.close().executed());
        rows.add(r);
        OUT.printf("%-36s %-40s %,9.0f instructions (timer included), %.2f commands per %s (%,d instructions in "
                + "%,d, %.1f s)%n",
                implementation, scenario, r.perOp(), r.commandsPerOp(), unit, d.summary(), n, seconds);
    }

    // ---------------------------------------------------------------- the report

    /** Redisson's row for the same scenario, if this is an implementation's row. */
    private Optional<Row> redisson(Row r) {
        if (!r.unit().equals("pair")) {
            return Optional.empty();
        }
        return rows.stream().filter(x -> x.implementation().equals(Impl.REDISSON.label)
                && x.scenario().equals(r.scenario())).findFirst();
    }

    /** The unpartitioned Sema row for the same scenario, if this is a row measured through a partition. */
    private Optional<Row> unpartitioned(Row r) {
        if (!r.implementation().equals(PARTITIONED)) {
            return Optional.empty();
        }
        return rows.stream().filter(x -> x.implementation().equals(Impl.SEMA.label)
                && x.scenario().equals(r.scenario())).findFirst();
    }

    private List<Object> rowsJson() {
        List<Object> l = new ArrayList<>();
        for (Row r : rows) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("implementation", r.implementation());
            m.put("scenario", r.scenario());
            m.put("per", r.unit());
            m.put("ops", r.ops());
            m.put("instructions", r.instructions());
            m.put("totals", r.totals());
            m.put("instructionsPerOp", Math.round(r.netPerOp(idlePerSecond)));
            m.put("instructionsPerOpTimerIncluded", Math.round(r.perOp()));
            m.put("commandsPerOp", Math.round(r.commandsPerOp() * 1000) / 1000.0);
            m.put("executed", r.executed());
            m.put("seconds", Math.round(r.seconds() * 1000) / 1000.0);
            m.put("timerShareOfInstructionsPerOp", Math.round(idlePerSecond * r.seconds() / r.ops()));
            redisson(r).ifPresent(x -> m.put("ratioToRedisson",
                    Math.round(r.netPerOp(idlePerSecond) / x.netPerOp(idlePerSecond) * 1000) / 1000.0));
            unpartitioned(r).ifPresent(x -> m.put("ratioToUnpartitioned",
                    Math.round(r.netPerOp(idlePerSecond) / x.netPerOp(idlePerSecond) * 1000) / 1000.0));
            l.add(m);
        }
        return l;
    }

    private String markdown(String mode, String redisVersion, String valgrindVersion) {
        StringBuilder sb = new StringBuilder();
        sb.append("| Implementation | Scenario | Redis instructions per pair | vs Redisson | with the server's timer "
                + "| Redis commands per pair |\n");
        sb.append("|---|---|--:|--:|--:|--:|\n");
        for (Row r : rows) {
            String unit = r.unit().equals("pair") ? "" : " per " + r.unit();
            String ratio = redisson(r).map(x -> String.format(Locale.ROOT, "%.2fx",
                    r.netPerOp(idlePerSecond) / x.netPerOp(idlePerSecond))).orElse("-");
            sb.append(String.format(Locale.ROOT, "| %s | %s | %,d%s | %s | %,d | %.2f |%n", r.implementation(),
                    r.scenario(), Math.round(r.netPerOp(idlePerSecond)), unit, ratio, Math.round(r.perOp()),
                    r.commandsPerOp()));
        }
        sb.append('\n');
        for (Row r : rows) {
            unpartitioned(r).ifPresent(x -> sb.append(String.format(Locale.ROOT, "Through a partition, %s: %.2fx the "
                    + "instructions of the unpartitioned semaphore (%,d against %,d per pair, %.2f against %.2f Redis "
                    + "commands).%n", r.scenario(), r.netPerOp(idlePerSecond) / x.netPerOp(idlePerSecond),
                    Math.round(r.netPerOp(idlePerSecond)), Math.round(x.netPerOp(idlePerSecond)), r.commandsPerOp(),
                    x.commandsPerOp())));
        }
        sb.append('\n');
        sb.append(String.format(Locale.ROOT, "The instructions redis-server %s executed in a window of %,d "
                + "operations after a warm-up of %,d (mode %s), counted by %s callgrind (the dump's `summary:`), "
                + "per acquire + release pair; the raw-client rows are per command, the floors of one round trip "
                + "and of one script call. Everything the server executes in a window counts, including what the "
                + "client sends besides the operations (connection pings, heartbeats, subscriptions): that is load "
                + "the client puts on Redis. Only the server's own timer (serverCron, 10 times a second) is taken "
                + "out, as its share grows with the window's length, which depends on the machine's load: an idle "
                + "server executes %,.0f instructions per second under callgrind (measured with no client "
                + "connected, before and after), times the window's length; the column 'with the server's "
                + "timer' keeps it in. Redis commands: as `INFO commandstats` counts them, those run by scripts "
                + "included. Contended pairs vary from run to run with how often a thread has to wait; "
                + "uncontended ones do not (dev.sema.bench.redis.RedisCost).%n", redisVersion, settings.n(),
                settings.warmup(), mode, valgrindVersion, idlePerSecond));
        return sb.toString();
    }

    // ---------------------------------------------------------------- helpers

    private String redisVersion() throws IOException {
        try (RawRedis raw = RawRedis.connect(redis.host(), redis.port())) {
            Matcher m = Pattern.compile("redis_version:(\\S+)").matcher((String) raw.call("INFO", "server"));
            return m.find() ? m.group(1) : "?";
        }
    }

    private static String version(Path valgrind) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(valgrind.toString(), "--version").redirectErrorStream(true).start();
        String v = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        p.waitFor(10, TimeUnit.SECONDS);
        return v.isEmpty() ? "valgrind" : v;
    }

    private static Optional<Path> onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String d : path.split(java.io.File.pathSeparator)) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, name))) {
                return Optional.of(Path.of(d, name));
            }
        }
        return Optional.empty();
    }

    /**
     * A {@code redis-server} running under callgrind on a free loopback port ({@link RedisServer} with valgrind as
     * its wrapper), in a temporary directory that holds its log and the dumps; {@link #close()} stops it (valgrind
     * writes its last dump) and deletes the directory.
     */
    static final class Callgrind implements AutoCloseable {
        /** The counts of one dump: {@code summary:} (all events collected) and {@code totals:}. */
        record Dump(long summary, long totals, Path file) {
        }

        final RedisServer server;
        private final Path control;
        private final Path dir;
        private int lastPart;

        private Callgrind(Path control, RedisServer server) {
            this.control = control;
            this.server = server;
            this.dir = server.directory();
        }

        static Callgrind start(Path valgrind, Path control, RedisServer.Binary redisServer)
                throws IOException, InterruptedException {
            // The dumps go to the server's directory, its working directory.
            return new Callgrind(control, RedisServer.builder(redisServer)
                    .wrapper(valgrind.toString(), "--tool=callgrind", "--callgrind-out-file=cg.%p",
                            "--collect-atstart=yes")
                    .startTimeout(Duration.ofSeconds(START_SECONDS)).start());
        }

        long pid() {
            return server.pid();
        }

        /** Zeroes the counters ({@code callgrind_control -z}). */
        void zero() throws IOException, InterruptedException {
            control("-z");
        }

        /** Dumps the counters ({@code callgrind_control -d}, which also zeroes them) and reads the new dump. */
        Dump dump() throws IOException, InterruptedException {
            control("-d");
            Pattern part = Pattern.compile(Pattern.quote("cg." + pid() + ".") + "(\\d+)");
            Path newest = null;
            int newestPart = lastPart;
            try (var files = Files.list(dir)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    Matcher m = part.matcher(f.getFileName().toString());
                    if (m.matches() && Integer.parseInt(m.group(1)) > newestPart) {
                        newestPart = Integer.parseInt(m.group(1));
                        newest = f;
                    }
                }
            }
            if (newest == null) {
                throw new IOException("callgrind_control -d wrote no new dump in " + dir);
            }
            lastPart = newestPart;
            long summary = -1;
            long totals = -1;
            for (String line : Files.readAllLines(newest, StandardCharsets.UTF_8)) {
                if (line.startsWith("summary:")) {
                    summary = Long.parseLong(line.substring(8).trim().split("\\s+")[0]);
                } else if (line.startsWith("totals:")) {
                    totals = Long.parseLong(line.substring(7).trim().split("\\s+")[0]);
                }
            }
            if (summary < 0 && totals < 0) {
                throw new IOException("no summary: or totals: line in " + newest);
            }
            Files.delete(newest); // a dump is some 100 kB: keep the directory small
            return new Dump(summary >= 0 ? summary : totals, totals >= 0 ? totals : summary, newest);
        }

        private void control(String option) throws IOException, InterruptedException {
            if (!server.isRunning()) {
                throw new IOException("redis-server under valgrind has exited: see " + server.log());
            }
            Process p = new ProcessBuilder(control.toString(), option, Long.toString(pid()))
                    .redirectErrorStream(true).start();
            byte[] output;
            try {
                // The output is a few lines, well below a pipe's buffer: read it once the request is done.
                if (!p.waitFor(CONTROL_SECONDS, TimeUnit.SECONDS)) {
                    throw new IOException("callgrind_control " + option + " did not finish within " + CONTROL_SECONDS
                            + " s");
                }
                output = p.getInputStream().readAllBytes();
            } finally {
                p.descendants().forEach(ProcessHandle::destroyForcibly); // vgdb, should the request hang
                p.destroyForcibly();
            }
            String text = new String(output, StandardCharsets.UTF_8);
            if (p.exitValue() != 0 || !text.contains("OK")) {
                throw new IOException("callgrind_control " + option + " " + pid() + " failed (exit " + p.exitValue()
                        + "): " + text.trim());
            }
        }

        @Override
        public void close() throws IOException, InterruptedException {
            server.close();
        }
    }
}
