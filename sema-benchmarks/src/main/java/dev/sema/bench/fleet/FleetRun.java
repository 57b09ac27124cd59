package dev.sema.bench.fleet;

import dev.sema.bench.Program;
import dev.sema.bench.redis.Contenders;
import dev.sema.bench.redis.Endpoint;
import dev.sema.testing.RedisServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

/**
 * A fleet on one Redis: Sema's {@code RedisSemaphore} against Redisson's {@code RPermitExpirableSemaphore},
 * driven the way {@code dev.sema.bench.redis.RedisComparison} drives them (the same clients and client
 * configuration: Redisson's default one; the same lease, 30 s; blocking acquire without a timeout), but by
 * many processes on many semaphores at once.
 *
 * <p>The model. {@value #THREADS} virtual threads in each of several JVM processes ({@link FleetWorker}, 8 in
 * the main run) run tasks one after the other against {@value #SEMAPHORES} semaphores named {@code fleet-0}
 * .. {@code fleet-99}, each with a limit of {@value #LIMIT}. A task picks its semaphore with a Zipf
 * distribution of exponent {@value #ZIPF_EXPONENT} ({@code fleet-0} the most popular, about 19% of the
 * tasks; {@code fleet-99} about 0.2%), acquires one permit, holds it for a uniformly random 0 ..
 * {@value #HOLD_MAX_MICROS} µs, releases it and starts the next task. The acquire's wait is measured in the
 * workers from the call to its return. After its acquire returns, a task counts itself as a holder on a
 * second Redis, the <em>referee</em> (INCR a per-semaphore counter, and keep its highest value, in one Lua
 * script), and before it releases it DECRs the counter; the referee's two round trips are inside the hold.
 * Keeping that count on a Redis of its own leaves the measured Redis's CPU and command counts to the
 * semaphores alone. The highest count ever seen must never exceed the limit: if it does, for either
 * implementation, the run says so loudly and exits with status 1.
 *
 * <p>Each run starts both Redis servers afresh ({@code FLUSHALL}), launches the workers (the same {@code java}
 * and class path as this process, with {@link #WORKER_OPTIONS}: {@code -Xmx256m} and C1 only), waits until
 * every one has connected and built its handles, and then starts them together: a warm-up, then the
 * measured window, at whose ends this process reads the measured Redis's {@code INFO cpu}
 * ({@code used_cpu_sys + used_cpu_user}) and {@code INFO commandstats} (reset at the start, this process's
 * own commands taken out), and the workers their own CPU, JIT and GC time. Reported per implementation:
 * grants per second across the fleet; Redis CPU per 1,000 grants; Redis commands executed per grant (the
 * commands run inside scripts included); the workers' CPU per 1,000 grants; p50, p99 and max of the acquire
 * wait (a log-linear histogram with 1% precision per thread, merged here); the most holders of one
 * semaphore at once (the referee's count); and the spread of grants over the processes. In the main run a
 * last, untimed window follows under {@code MONITOR}, which tells each client's commands (EVALSHA by
 * script) from those its scripts ran.
 *
 * <p>Then the saturation series: the same workload with 1, 2, 4, 8, 12 and 16 processes ({@code quick}: up to
 * 8; {@code smoke}: 1 and 2), both implementations at each count (Sema first), grants per second and p99
 * wait per count, and the saturation point: the largest process count before p99 wait is at least double
 * its value at 1 process. On a small machine the workers, this process and both Redis servers share the
 * cores, so the saturation found is the machine's; Redis CPU per grant is the portable figure. The workload
 * also has a ceiling of its own: the hottest semaphore grants at most its limit per hold time, so beyond
 * some number of tasks more tasks only wait longer (the report computes that bound).
 *
 * <p>Modes: {@code full} 8 processes, 15 s warm-up, 20 s measured, 3 s under MONITOR, then the series with
 * a warm-up of 5 s + 1 s per process and 10 s measured per step (about 7 minutes on 2 cores); {@code quick}
 * 8 processes, 10 s + 10 s + 2 s, the series up to 8 processes with 4 s + 1 s per process and 6 s (about 3
 * minutes); {@code smoke} 2 processes, 1 s + 3 s + 1 s, the series 1 and 2 processes with 1 s + 2 s (about
 * a minute; its numbers mean nothing). The series' step with as many processes as the main run is the main
 * run. The warm-ups cover the JIT and the queue of the hottest semaphore, which takes seconds to reach its
 * steady length. For experiments,
 * {@code --processes N}, {@code --warmup SECONDS}, {@code --measure SECONDS} (main run), {@code --steps
 * N,N,...} or {@code none} (the series) and {@code --only SEMA|REDISSON} override the mode's values, and
 * {@code SEMA_FLEET_JVM_OPTS} adds JVM options to the workers' (e.g. {@code -XX:TieredStopAtLevel=4} for
 * C2).
 *
 * <p>Run: {@code bin/benchmarks fleet [full|quick|smoke]}, which writes section 12 of
 * {@code docs/BENCHMARKS.md}; or {@code java -cp sema-benchmarks/target/benchmarks.jar
 * dev.sema.bench.fleet.FleetRun [full|quick|smoke] [--out file.md]}. The measured Redis is a
 * {@code redis-server} started on a random loopback port ({@code $SEMA_REDIS_SERVER}, else the one on the
 * {@code PATH}, {@code /usr/bin} or {@code /usr/local/bin}: {@code dev.sema.testing.RedisServer}), or the server
 * at {@code SEMA_REDIS_URI} (it is
 * flushed, and its statistics reset); the referee is always started here. Exit status: 0 done, 1 failed
 * (or the limit was exceeded), 2 bad arguments, 3 skipped (no {@code redis-server}).
 */
public final class FleetRun {
    static final int SEMAPHORES = 100;
    static final int LIMIT = 4;
    static final int THREADS = 64;
    static final double ZIPF_EXPONENT = 1.0;
    static final int HOLD_MAX_MICROS = 5_000;
    /**
     * The workers' JVM options: a small heap, and C1 only. With 8 to 16 JVMs on a few cores, C2 would still be
     * compiling through the measured window (8 JVMs on 2 cores spent 26 s compiling in a 10 s window after a
     * 30 s warm-up), which would then measure the JIT; C1 is done within seconds.
     */
    static final List<String> WORKER_OPTIONS = List.of("-Xmx256m", "-XX:TieredStopAtLevel=1");
    static final int SKIPPED = 3;

    /**
     * A mode's parameters: the main run's processes and windows, then the series' process counts, and its
     * windows: a warm-up of {@code stepWarmup} plus {@code stepWarmupPerProcess} per process (the more JVMs
     * share the cores, the longer each takes to compile its code), then {@code stepMeasure}.
     */
    record Settings(String mode, int processes, Duration warmup, Duration measure, Duration counted, int[] steps,
            Duration stepWarmup, Duration stepWarmupPerProcess, Duration stepMeasure) {

        static Settings of(String mode) {
            return switch (mode) {
                case "full" -> new Settings(mode, 8, Duration.ofSeconds(15), Duration.ofSeconds(20),
                        Duration.ofSeconds(3), new int[] {1, 2, 4, 8, 12, 16}, Duration.ofSeconds(5),
                        Duration.ofSeconds(1), Duration.ofSeconds(10));
                case "quick" -> new Settings(mode, 8, Duration.ofSeconds(10), Duration.ofSeconds(10),
                        Duration.ofSeconds(2), new int[] {1, 2, 4, 8}, Duration.ofSeconds(4), Duration.ofSeconds(1),
                        Duration.ofSeconds(6));
                case "smoke" -> new Settings(mode, 2, Duration.ofSeconds(1), Duration.ofSeconds(3),
                        Duration.ofSeconds(1), new int[] {1, 2}, Duration.ofSeconds(1), Duration.ZERO,
                        Duration.ofSeconds(2));
                default -> throw new IllegalArgumentException("mode must be full, quick or smoke: " + mode);
            };
        }

        /** These settings with the command line's {@code --processes}, {@code --warmup}, {@code --measure}, {@code --steps}. */
        Settings with(Map<String, String> o) {
            int[] s = steps;
            String given = o.get("--steps");
            if (given != null) {
                s = given.equals("none") ? new int[0]
                        : Arrays.stream(given.split(",")).mapToInt(Integer::parseInt).toArray();
            }
            return new Settings(mode, Integer.parseInt(o.getOrDefault("--processes", Integer.toString(processes))),
                    o.containsKey("--warmup") ? Duration.ofSeconds(Long.parseLong(o.get("--warmup"))) : warmup,
                    o.containsKey("--measure") ? Duration.ofSeconds(Long.parseLong(o.get("--measure"))) : measure,
                    counted, s, stepWarmup, stepWarmupPerProcess, stepMeasure);
        }

        /** The series' warm-up with {@code p} processes. */
        Duration stepWarmup(int p) {
            return stepWarmup.plus(stepWarmupPerProcess.multipliedBy(p));
        }
    }

    /** One run's fleet-wide numbers. */
    static final class Run {
        final String impl;
        final int processes;
        final double seconds;
        long grants;
        long counted;
        long errors;
        long violations;
        long workersMax;
        long refereeMax;
        int refereeMaxSemaphore = -1;
        long undrained;
        double redisCpuMillis;
        long clientCpuNanos;
        long jitMillis;
        long gcMillis;
        Map<String, Long> executed = Map.of();
        final WaitHistogram waits = new WaitHistogram();
        final List<Long> grantsPerProcess = new ArrayList<>();
        Map<String, Long> sent = Map.of();
        Map<String, Long> scripts = Map.of();
        Map<String, Long> inScripts = Map.of();
        final List<String> workerErrors = new ArrayList<>();

        Run(String impl, int processes, double seconds) {
            this.impl = impl;
            this.processes = processes;
            this.seconds = seconds;
        }

        double grantsPerSecond() {
            return grants / seconds;
        }

        double redisCpuPerThousand() {
            return redisCpuMillis / (grants / 1e3);
        }

        double commandsPerGrant() {
            return executed.values().stream().mapToLong(Long::longValue).sum() / (double) grants;
        }

        double clientCpuPerThousand() {
            return clientCpuNanos / 1e6 / (grants / 1e3);
        }

        long mostHolders() {
            return Math.max(refereeMax, workersMax);
        }
    }

    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    private final Settings settings;
    private final Endpoint redis;
    private final Endpoint refereeRedis;
    private final Contenders.Observer measured;
    private final Contenders.Observer referee;
    private String loadBefore = "n/a";

    private FleetRun(Settings settings, Endpoint redis, Endpoint refereeRedis, Contenders.Observer measured,
            Contenders.Observer referee) {
        this.settings = settings;
        this.redis = redis;
        this.refereeRedis = refereeRedis;
        this.measured = measured;
        this.referee = referee;
    }

    /**
     * Runs the fleet comparison and exits: 0 done, 1 failed or the limit exceeded, 2 bad arguments, 3 skipped.
     *
     * @param args {@code [full|quick|smoke] [--out FILE]}
     */
    public static void main(String[] args) {
        Program.exit(() -> run(args), () -> LIVE.forEach(Process::destroyForcibly));
    }

    private static int run(String[] args) throws Exception {
        String mode = "full";
        Path out = null;
        Map<String, String> overrides = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--out") && i + 1 < args.length) {
                out = Path.of(args[++i]);
            } else if (Set.of("--processes", "--warmup", "--measure", "--steps", "--only").contains(args[i])
                    && i + 1 < args.length) {
                overrides.put(args[i], args[++i]);
            } else if (Set.of("full", "quick", "smoke").contains(args[i])) {
                mode = args[i];
            } else {
                System.err.println("usage: FleetRun [full|quick|smoke] [--out FILE] [--processes N] [--warmup SECONDS] "
                        + "[--measure SECONDS] [--steps N,N,...|none] [--only SEMA|REDISSON]");
                return 2;
            }
        }
        Settings settings = Settings.of(mode).with(overrides);
        List<String> impls = overrides.containsKey("--only") ? List.of(overrides.get("--only"))
                : Contenders.names();
        Optional<String> uri = RedisServer.givenUri();
        RedisServer.Source source = RedisServer.Source.INSTALLED;
        Optional<RedisServer.Binary> binary = source.find();
        if (binary.isEmpty()) {
            System.err.println("fleet run skipped: no redis-server to start the referee"
                    + (uri.isEmpty() ? " and the measured Redis" : "") + ": " + source.missing());
            return SKIPPED;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly)));
        long started = System.nanoTime();
        String report;
        boolean exceeded;
        try (RedisServer measuredServer = uri.isPresent() ? null : RedisServer.start(binary.get());
                RedisServer refereeServer = RedisServer.start(binary.get())) {
            Endpoint redis = measuredServer != null ? Endpoint.of(measuredServer) : Endpoint.given(uri.get());
            Endpoint refereeRedis = Endpoint.of(refereeServer);
            try (Contenders.Observer measured = Contenders.Observer.connect(redis);
                    Contenders.Observer referee = Contenders.Observer.connect(refereeRedis)) {
                System.out.printf("== fleet run (%s): measured Redis %s %s, referee %s%n", mode, redis.uri(),
                        redis.started() ? "(started here)" : "(given)", refereeRedis.uri());
                FleetRun f = new FleetRun(settings, redis, refereeRedis, measured, referee);
                f.loadBefore = loadAverage();
                for (String impl : impls) {
                    measured.learnScripts(impl);
                }
                Map<String, Run> main = new LinkedHashMap<>();
                for (String impl : impls) {
                    main.put(impl, f.run(impl, settings.processes(), settings.warmup(), settings.measure(),
                            settings.counted()));
                }
                Map<String, List<Run>> series = new LinkedHashMap<>();
                for (int p : settings.steps()) {
                    for (String impl : impls) {
                        // The main run is this step's run: the same workload, with a longer warm-up and window.
                        series.computeIfAbsent(impl, k -> new ArrayList<>()).add(p == settings.processes()
                                ? main.get(impl)
                                : f.run(impl, p, settings.stepWarmup(p), settings.stepMeasure(), Duration.ZERO));
                    }
                }
                report = f.report(main, series);
                exceeded = main.values().stream().anyMatch(r -> r.mostHolders() > LIMIT || r.violations > 0)
                        || series.values().stream().flatMap(List::stream)
                                .anyMatch(r -> r.mostHolders() > LIMIT || r.violations > 0);
            }
        }
        System.out.println();
        System.out.println(report);
        if (out != null) {
            Path parent = out.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(out, report, StandardCharsets.UTF_8);
            System.out.println("== wrote " + out);
        }
        System.out.printf("== fleet run took %.0f s%n", (System.nanoTime() - started) / 1e9);
        if (exceeded) {
            String banner = "!".repeat(100);
            System.err.println(banner);
            System.err.println("!!! FAILED: MORE HOLDERS THAN THE LIMIT OF " + LIMIT
                    + " WERE SEEN AT ONCE ON A SEMAPHORE (see the report)");
            System.err.println(banner);
            return 1;
        }
        return 0;
    }

    // ---------------------------------------------------------------- one run

    /** One worker process, as this process sees it. */
    private static final class Worker {
        final int index;
        final Process process;
        final Path log;
        final CountDownLatch ready = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(1);
        volatile Map<String, String> result;
        volatile String error;

        Worker(int index, Process process, Path log) {
            this.index = index;
            this.process = process;
            this.log = log;
            Thread.ofPlatform().daemon().name("fleet-worker-" + index + "-out").start(this::read);
        }

        private void read() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    if (line.equals("READY")) {
                        ready.countDown();
                    } else if (line.startsWith("RESULT ")) {
                        Map<String, String> m = new LinkedHashMap<>();
                        for (String kv : line.substring("RESULT ".length()).split(" ")) {
                            int eq = kv.indexOf('=');
                            m.put(kv.substring(0, eq), kv.substring(eq + 1));
                        }
                        result = m;
                    } else if (line.startsWith("ERROR ")) {
                        error = line.substring("ERROR ".length());
                    }
                }
            } catch (IOException e) {
                // the worker ended
            } finally {
                ready.countDown();
                done.countDown();
            }
        }

        void send(String line) throws IOException {
            OutputStream o = process.getOutputStream();
            o.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            o.flush();
        }

        String tail() {
            try {
                List<String> lines = Files.readAllLines(log);
                return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
            } catch (IOException e) {
                return "(no log: " + e + ")";
            }
        }
    }

    private Run run(String impl, int processes, Duration warmup, Duration measure, Duration counted)
            throws Exception {
        String label = Contenders.label(impl);
        measured.call("FLUSHALL");
        referee.call("FLUSHALL");
        Run run = new Run(impl, processes, measure.toMillis() / 1e3);
        Path dir = Files.createTempDirectory("sema-fleet-run");
        List<Worker> workers = new ArrayList<>();
        boolean ok = false;
        try {
            for (int i = 0; i < processes; i++) {
                workers.add(launch(impl, i, dir));
            }
            long readyBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(60 + 5L * processes);
            for (Worker w : workers) {
                if (!w.ready.await(Math.max(0, readyBy - System.nanoTime()), TimeUnit.NANOSECONDS)
                        || !w.process.isAlive()) {
                    throw new IllegalStateException(label + ": worker " + w.index + " did not get ready"
                            + (w.process.isAlive() ? " within the time allowed" : " (exit " + w.process.exitValue() + ")")
                            + ":\n" + w.tail());
                }
            }
            long measureStart = System.currentTimeMillis() + warmup.toMillis();
            long measureEnd = measureStart + measure.toMillis();
            long stop = measureEnd + counted.toMillis();
            for (Worker w : workers) {
                w.send("GO " + measureStart + " " + measureEnd + " " + stop);
            }
            sleepUntil(measureStart);
            Map<String, String> cpuBefore = measured.info("cpu");
            Contenders.Window window = measured.open(false);
            sleepUntil(measureEnd);
            Contenders.Counted c = window.close();
            Map<String, String> cpuAfter = measured.info("cpu");
            run.executed = c.executed();
            run.redisCpuMillis = 1e3 * (cpuSeconds(cpuAfter) - cpuSeconds(cpuBefore));
            if (!counted.isZero()) {
                Contenders.Window monitor = measured.open(true);
                sleepUntil(stop);
                Contenders.Counted m = monitor.close();
                String prefix = Contenders.clientPrefix(impl);
                run.sent = m.issued(prefix);
                run.scripts = m.scripts(prefix);
                run.inScripts = m.inScripts(prefix);
            }
            long resultsBy = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
                    Math.max(0, stop - System.currentTimeMillis()) + FleetWorker.DRAIN_MILLIS + 20_000);
            for (Worker w : workers) {
                if (!w.done.await(Math.max(0, resultsBy - System.nanoTime()), TimeUnit.NANOSECONDS)
                        || w.result == null) {
                    throw new TimeoutException(label + ": worker " + w.index + " did not report:\n" + w.tail());
                }
                if (!w.process.waitFor(10, TimeUnit.SECONDS)) {
                    System.err.println(label + ": worker " + w.index + " did not exit after reporting; killed");
                }
            }
            for (Worker w : workers) {
                Map<String, String> r = w.result;
                long grants = Long.parseLong(r.get("grants"));
                run.grants += grants;
                run.grantsPerProcess.add(grants);
                run.counted += Long.parseLong(r.get("counted"));
                run.errors += Long.parseLong(r.get("errors"));
                run.violations += Long.parseLong(r.get("violations"));
                run.workersMax = Math.max(run.workersMax, Long.parseLong(r.get("maxSeen")));
                run.undrained += Long.parseLong(r.get("undrained"));
                run.clientCpuNanos += Long.parseLong(r.get("cpuNanos"));
                run.jitMillis += Long.parseLong(r.get("jitMillis"));
                run.gcMillis += Long.parseLong(r.get("gcMillis"));
                run.waits.add(WaitHistogram.decode(r.get("waits")));
                if (w.error != null) {
                    run.workerErrors.add("process " + w.index + ": " + w.error);
                }
            }
            String[] maxKeys = new String[SEMAPHORES + 1];
            maxKeys[0] = "MGET";
            for (int i = 0; i < SEMAPHORES; i++) {
                maxKeys[i + 1] = FleetWorker.maxKey(i);
            }
            List<?> maxima = (List<?>) referee.call(maxKeys);
            for (int i = 0; i < SEMAPHORES; i++) {
                Object v = maxima.get(i);
                long n = v == null ? 0 : Long.parseLong((String) v);
                if (n > run.refereeMax) {
                    run.refereeMax = n;
                    run.refereeMaxSemaphore = i;
                }
            }
            System.out.printf(Locale.ROOT, "%-36s %2d JVMs: %,8.0f grants/s, Redis CPU %.1f ms per 1,000 grants, "
                    + "%.1f commands per grant, clients' CPU %.0f ms per 1,000 grants, wait p50 %s p99 %s max %s mean %s, "
                    + "most holders at once %d%s; in the window the workers spent %,d ms compiling (JIT), %,d ms in GC%n",
                    label, processes, run.grantsPerSecond(),
                    run.redisCpuPerThousand(), run.commandsPerGrant(), run.clientCpuPerThousand(),
                    ms(run.waits.percentile(0.5)), ms(run.waits.percentile(0.99)), ms(run.waits.max()),
                    ms(run.waits.mean()), run.mostHolders(), run.errors + run.undrained > 0
                            ? String.format(Locale.ROOT, " (%d errors, %d tasks unfinished)", run.errors, run.undrained)
                            : "", run.jitMillis, run.gcMillis);
            if (!run.sent.isEmpty()) {
                System.out.printf(Locale.ROOT, "%-36s    executed per grant (commandstats): %s%n", label,
                        perGrant(run.executed, run.grants, 100));
                System.out.printf(Locale.ROOT, "%-36s    under MONITOR, per grant: sent %s; in scripts %s%n", label,
                        sentText(run), perGrant(run.inScripts, run.counted, 6));
            }
            if (run.mostHolders() > LIMIT || run.violations > 0) {
                System.err.println("!!! " + label + " with " + processes + " processes: " + run.mostHolders()
                        + " holders of " + FleetWorker.semaphoreName(Math.max(0, run.refereeMaxSemaphore))
                        + " at once, above the limit of " + LIMIT + " !!!");
            }
            ok = true;
            return run;
        } finally {
            for (Worker w : workers) {
                if (w.process.isAlive()) {
                    w.process.destroyForcibly();
                    w.process.waitFor(10, TimeUnit.SECONDS);
                }
                LIVE.remove(w.process);
                if (!ok && Files.exists(w.log) && Files.size(w.log) > 0) {
                    System.err.println("-- worker " + w.index + "'s standard error (last lines):\n" + w.tail());
                }
            }
            printStray(workers, ok);
            try (var files = Files.list(dir)) {
                for (Path p : (Iterable<Path>) files::iterator) {
                    Files.deleteIfExists(p);
                }
            }
            Files.deleteIfExists(dir);
        }
    }

    /** Shows what the workers wrote to standard error beyond the JVM's own warnings (the first lines only). */
    private static void printStray(List<Worker> workers, boolean ok) {
        if (!ok) {
            return;
        }
        int shown = 0;
        for (Worker w : workers) {
            try {
                for (String line : Files.readAllLines(w.log)) {
                    if (line.startsWith("WARNING:") || line.isBlank()) {
                        continue;
                    }
                    if (shown++ < 10) {
                        System.err.println("   worker " + w.index + ": " + line);
                    }
                }
            } catch (IOException e) {
                // no log
            }
        }
        if (shown > 10) {
            System.err.println("   (" + (shown - 10) + " more lines)");
        }
    }

    private Worker launch(String impl, int index, Path dir) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(WORKER_OPTIONS);
        if (Runtime.version().feature() >= 23) {
            command.add("--sun-misc-unsafe-memory-access=allow"); // Netty's, without the JDK's warning
        }
        String extra = System.getenv("SEMA_FLEET_JVM_OPTS");
        if (extra != null && !extra.isBlank()) {
            command.addAll(Arrays.asList(extra.trim().split("\\s+")));
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), FleetWorker.class.getName(), impl,
                redis.uri(), refereeRedis.uri(), Integer.toString(index), Integer.toString(THREADS),
                Integer.toString(SEMAPHORES), Integer.toString(LIMIT), Double.toString(ZIPF_EXPONENT),
                Integer.toString(HOLD_MAX_MICROS), Integer.toString(1_000 + index)));
        Path log = dir.resolve("worker-" + index + ".err");
        Process p = new ProcessBuilder(command).redirectError(log.toFile()).start();
        LIVE.add(p);
        return new Worker(index, p, log);
    }

    private static void sleepUntil(long epochMillis) throws InterruptedException {
        for (long left = epochMillis - System.currentTimeMillis(); left > 0;
                left = epochMillis - System.currentTimeMillis()) {
            Thread.sleep(left);
        }
    }

    /** The 1-minute load average, from {@code /proc/loadavg} where there is one. */
    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException | RuntimeException e) {
            return "n/a";
        }
    }

    private static double cpuSeconds(Map<String, String> info) {
        return Double.parseDouble(info.get("used_cpu_sys")) + Double.parseDouble(info.get("used_cpu_user"));
    }

    // ---------------------------------------------------------------- the report

    private String report(Map<String, Run> main, Map<String, List<Run>> series) throws IOException {
        StringBuilder b = new StringBuilder();
        Properties versions = new Properties();
        try (InputStream in = FleetRun.class.getClassLoader()
                .getResourceAsStream("dev/sema/bench/redis/versions.properties")) {
            if (in != null) {
                versions.load(in);
            }
        }
        String redisVersion = measured.info("server").getOrDefault("redis_version", "?");
        FleetWorker.Zipf zipf = new FleetWorker.Zipf(SEMAPHORES, ZIPF_EXPONENT);
        double top10 = 0;
        for (int i = 0; i < 10; i++) {
            top10 += zipf.share(i);
        }
        double meanHoldMillis = HOLD_MAX_MICROS / 2e3;
        double hotCap = LIMIT / (meanHoldMillis / 1e3);
        b.append(String.format(Locale.ROOT, "Mode %s. Workload: %d JVM processes (in the main run) × %d virtual threads, "
                + "each running tasks back to back on %d semaphores `fleet-0` .. `fleet-%d` with a limit of %d each, "
                + "the semaphore chosen per task with a Zipf distribution of exponent %.1f (the hottest gets %.1f%% of "
                + "the tasks, the 10 hottest %.0f%%, the coldest %.2f%%); a task acquires one permit (blocking, no "
                + "timeout, lease %d s for both), holds it a uniformly random 0-%d ms plus two round trips to the "
                + "referee, and releases it. Measured: %d s after a %d s warm-up (main run), %d s after %s (series). "
                + "Redis %s (the measured one %s; a second `redis-server`, the referee, counts the holders, so that "
                + "the measured Redis's CPU and commands are the semaphores' only); Sema with Lettuce %s, Redisson %s "
                + "with its default configuration; workers `%s`, one JVM each. Machine load average (1 min) before / "
                + "after: %s / %s on %d cores.%n%n",
                settings.mode(), settings.processes(), THREADS, SEMAPHORES, SEMAPHORES - 1, LIMIT, ZIPF_EXPONENT,
                100 * zipf.share(0), 100 * top10, 100 * zipf.share(SEMAPHORES - 1), Contenders.lease().toSeconds(),
                HOLD_MAX_MICROS / 1_000, settings.measure().toSeconds(), settings.warmup().toSeconds(),
                settings.stepMeasure().toSeconds(), settings.stepWarmupPerProcess().isZero()
                        ? settings.stepWarmup().toSeconds() + " s"
                        : String.format(Locale.ROOT, "%d s + %d s per process", settings.stepWarmup().toSeconds(),
                                settings.stepWarmupPerProcess().toSeconds()), redisVersion,
                redis.started() ? "started for the run on a loopback port" : "given by SEMA_REDIS_URI",
                versions.getProperty("lettuce", "?"), versions.getProperty("redisson", "?"), String.join(" ", WORKER_OPTIONS), loadBefore,
                loadAverage(), Runtime.getRuntime().availableProcessors()));
        b.append(String.format(Locale.ROOT, "A bound from the workload alone: the hottest semaphore can grant at most "
                + "%d / %.1f ms = %,.0f permits/s (less with the referee's round trips in the hold), so the fleet's "
                + "grants/s cannot exceed about %,.0f however fast Redis and the clients are, and from then on more "
                + "tasks only wait longer.%n%n", LIMIT, meanHoldMillis, hotCap, hotCap / zipf.share(0)));

        b.append(String.format(Locale.ROOT, "### %d processes × %d virtual threads%n%n", settings.processes(), THREADS));
        b.append("| implementation | grants/s | Redis CPU per 1,000 grants | Redis commands per grant | clients' CPU per "
                + "1,000 grants | wait p50 | wait p99 | wait max | wait mean | most holders at once (limit " + LIMIT
                + ") | permit cycle on `fleet-0` | grants per process, fewest ÷ most |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Run r : main.values()) {
            long fewest = r.grantsPerProcess.stream().mapToLong(Long::longValue).min().orElse(0);
            long most = r.grantsPerProcess.stream().mapToLong(Long::longValue).max().orElse(0);
            b.append(String.format(Locale.ROOT, "| %s | %,.0f | %.1f ms | %.1f | %,.0f ms | %s | %s | %s | %s | %d | %s | %.2f |%n",
                    Contenders.label(r.impl), r.grantsPerSecond(), r.redisCpuPerThousand(), r.commandsPerGrant(),
                    r.clientCpuPerThousand(), ms(r.waits.percentile(0.5)), ms(r.waits.percentile(0.99)),
                    ms(r.waits.max()), ms(r.waits.mean()), r.mostHolders(), ms(1e9 * LIMIT / (r.grantsPerSecond() * zipf.share(0))),
                    most == 0 ? Double.NaN : fewest / (double) most));
        }
        b.append('\n');
        b.append("The workers' JIT compilation and GC during the window, summed over the workers: ")
                .append(main.values().stream().map(r -> String.format(Locale.ROOT, "%s %.1f s and %.1f s",
                        shortLabel(r.impl), r.jitMillis / 1e3, r.gcMillis / 1e3)).collect(Collectors.joining("; ")))
                .append(" (compilation time is elapsed time, which a busy machine stretches).\n\n");
        b.append("*Redis CPU*: the measured `redis-server`'s `used_cpu_sys + used_cpu_user` over the measured window; "
                + "*commands*: `INFO commandstats` over the same window (the commands run inside scripts included); "
                + "*clients' CPU*: the worker JVMs' process CPU time over the window (the referee's client included, "
                + "the same for both); *wait*: from the call of `acquire` to its return, over the grants of the "
                + "window (by Little's law, the tasks at once ÷ grants/s is about the mean wait plus the hold); "
                + "*most holders*: the highest count of the referee's per-semaphore counters over the whole "
                + "run, warm-up included; *permit cycle*: the limit over the hottest semaphore's expected share of the "
                + "grants per second, i.e. how long one of its permits took to go from one task to the next: the "
                + "hold (2.5 ms on average), the referee's two round trips, the release and the hand-off to a "
                + "waiting task.\n\n");

        b.append("What each implementation's clients sent, per grant, in a further untimed window under `MONITOR` "
                + "(which slows Redis down; for the mix of commands only), and what Redis executed per grant in the "
                + "measured window (`commandstats`, the 8 most frequent):\n\n");
        b.append("| implementation | grants in the MONITOR window | sent per grant | run by their scripts per grant | "
                + "executed per grant (measured window) |\n");
        b.append("|---|---:|---|---|---|\n");
        for (Run r : main.values()) {
            b.append(String.format(Locale.ROOT, "| %s | %,d | %s | %s | %s |%n", Contenders.label(r.impl), r.counted,
                    r.sent.isEmpty() ? "–" : sentText(r), r.inScripts.isEmpty() ? "–" : perGrant(r.inScripts, r.counted, 8),
                    perGrant(r.executed, r.grants, 8)));
        }
        b.append('\n');

        List<String> impls = new ArrayList<>(main.keySet());
        if (!series.isEmpty()) {
            b.append("### Saturation: the same workload with more processes\n\n");
            if (Arrays.stream(settings.steps()).anyMatch(p -> p == settings.processes())) {
                b.append("The row with ").append(settings.processes()).append(" processes is the main run above.\n\n");
            }
            b.append("| processes | tasks at once |");
            for (String impl : impls) {
                String l = shortLabel(impl);
                b.append(' ').append(l).append(" grants/s | ").append(l).append(" wait p99 | ").append(l)
                        .append(" Redis CPU per 1,000 grants |");
            }
            b.append("\n|---:|---:|").append("---:|---:|---:|".repeat(impls.size())).append('\n');
            int steps = settings.steps().length;
            for (int i = 0; i < steps; i++) {
                int p = settings.steps()[i];
                b.append(String.format(Locale.ROOT, "| %d | %,d |", p, p * THREADS));
                for (String impl : impls) {
                    Run r = series.get(impl).get(i);
                    b.append(String.format(Locale.ROOT, " %,.0f | %s | %.1f ms |", r.grantsPerSecond(),
                            ms(r.waits.percentile(0.99)), r.redisCpuPerThousand()));
                }
                b.append('\n');
            }
            b.append('\n');
            b.append("Saturation point (the largest process count before p99 wait is at least double its value at "
                    + settings.steps()[0] + " process" + (settings.steps()[0] == 1 ? "" : "es") + "): ");
            List<String> points = new ArrayList<>();
            for (String impl : impls) {
                points.add(shortLabel(impl) + " " + saturation(series.get(impl)));
            }
            b.append(String.join("; ", points)).append(".\n\n");
        }
        List<Run> all = new ArrayList<>(main.values());
        series.values().forEach(all::addAll);
        List<String> holders = new ArrayList<>();
        boolean exceeded = false;
        for (String impl : impls) {
            long most = all.stream().filter(r -> r.impl.equals(impl)).mapToLong(Run::mostHolders).max().orElse(0);
            long violations = all.stream().filter(r -> r.impl.equals(impl)).mapToLong(r -> r.violations).sum();
            exceeded |= most > LIMIT || violations > 0;
            holders.add(shortLabel(impl) + " " + most);
        }
        if (exceeded) {
            b.append("**FAILED: more holders than the limit of ").append(LIMIT)
                    .append(" were seen at once on a semaphore** (most holders at once, over every run: ")
                    .append(String.join(", ", holders)).append(").\n");
        } else {
            b.append("Most holders of one semaphore at once, over every run (the referee's count): ")
                    .append(String.join(", ", holders)).append("; never above the limit of ").append(LIMIT)
                    .append(".\n");
        }
        long errors = all.stream().mapToLong(r -> r.errors).sum();
        long undrained = all.stream().mapToLong(r -> r.undrained).sum();
        if (errors + undrained > 0) {
            b.append("\nTrouble: ").append(errors).append(" failed tasks and ").append(undrained)
                    .append(" tasks unfinished 30 s after the end, over every run");
            List<String> errs = all.stream().flatMap(r -> r.workerErrors.stream().map(e -> shortLabel(r.impl)
                    + ", " + r.processes + " processes, " + e)).limit(3).toList();
            if (!errs.isEmpty()) {
                b.append(" (").append(String.join("; ", errs)).append(")");
            }
            b.append(".\n");
        }
        return b.toString();
    }

    /** The saturation point of one implementation's series, as text. */
    static String saturation(List<Run> series) {
        double base = series.get(0).waits.percentile(0.99);
        for (int i = 1; i < series.size(); i++) {
            double p99 = series.get(i).waits.percentile(0.99);
            if (p99 >= 2 * base) {
                return String.format(Locale.ROOT, "%d process%s (p99 %s at %d, against %s at %d)",
                        series.get(i - 1).processes, series.get(i - 1).processes == 1 ? "" : "es", ms(p99),
                        series.get(i).processes, ms(base), series.get(0).processes);
            }
        }
        return String.format(Locale.ROOT, "not reached up to %d processes", series.get(series.size() - 1).processes);
    }

    private static String shortLabel(String impl) {
        return Contenders.label(impl).split(" ")[0];
    }

    private static String sentText(Run r) {
        Map<String, Long> sent = new TreeMap<>(r.sent);
        long evalsha = sent.getOrDefault("evalsha", 0L);
        sent.remove("evalsha");
        StringBuilder b = new StringBuilder();
        double total = r.sent.values().stream().mapToLong(Long::longValue).sum() / (double) r.counted;
        b.append(String.format(Locale.ROOT, "%.2f: EVALSHA %.2f", total, evalsha / (double) r.counted));
        if (!r.scripts.isEmpty()) {
            b.append(" (").append(r.scripts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                    .map(e -> String.format(Locale.ROOT, "%s %.3f", e.getKey(), e.getValue() / (double) r.counted))
                    .collect(Collectors.joining(", "))).append(')');
        }
        String rest = perGrant(sent, r.counted, 10);
        if (!rest.isEmpty()) {
            b.append(", ").append(rest);
        }
        return b.toString();
    }

    /** The {@code top} most frequent commands of {@code counts}, per grant. */
    private static String perGrant(Map<String, Long> counts, long grants, int top) {
        return counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(top)
                .map(e -> String.format(Locale.ROOT, "%s %.2f", e.getKey().toUpperCase(Locale.ROOT),
                        e.getValue() / (double) grants))
                .collect(Collectors.joining(", "));
    }

    private static String ms(double nanos) {
        if (Double.isNaN(nanos)) {
            return "–";
        }
        double ms = nanos / 1e6;
        if (ms < 1) {
            return String.format(Locale.ROOT, "%.2f ms", ms);
        }
        if (ms < 100) {
            return String.format(Locale.ROOT, "%.1f ms", ms);
        }
        return String.format(Locale.ROOT, "%,.0f ms", ms);
    }
}
