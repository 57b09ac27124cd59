package dev.sema.examples;

import static dev.sema.examples.Text.format;
import static dev.sema.examples.Text.millisSince;

import dev.sema.Permit;
import dev.sema.examples.FleetWorker.Keys;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * The same semaphore across processes: several JVMs share one {@link RedisSemaphore} through a Redis: the one
 * {@code SEMA_REDIS_URI} names, else a {@code redis-server} the demo starts on a random loopback port and stops
 * at the end ({@link RedisServer}: the installed one, else the one bundled in the {@code embedded-redis} jar,
 * so the demo runs on a machine with no Redis installed).
 *
 * <p>Worker processes ({@link FleetWorker}) each run many tasks at once on virtual threads through the one
 * semaphore, and count in Redis how many tasks hold a permit across the fleet. A third process takes
 * some permits and is killed with SIGKILL while it holds them: nobody releases them, and the others work
 * on with fewer permits until its lease ends in Redis; then the fleet uses the whole limit again. At the
 * end the parent checks: the fleet-wide peak stayed within the limit, every task ran, fencing tokens
 * increased, the dead process's permits came back, and every permit is back with nobody queued.
 */
final class FleetPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param workers how many worker processes
     * @param tasksPerWorker how many tasks each runs (all at once, on virtual threads)
     * @param limit the semaphore's limit, shared by the fleet
     * @param workerLease the lease of the workers' permits (long: a slow machine must not lose them)
     * @param holderLease the lease of the killed process's permits (short: the demo waits for it to end)
     * @param holderPermits how many permits the killed process holds
     * @param minWorkMillis the shortest task
     * @param maxWorkMillis the longest task
     */
    record Settings(int workers, int tasksPerWorker, int limit, Duration workerLease, Duration holderLease,
            int holderPermits, int minWorkMillis, int maxWorkMillis) {
        static Settings standard() {
            return new Settings(2, 250, 8, Duration.ofSeconds(15), Duration.ofSeconds(2), 3, 15, 45);
        }

        int tasks() {
            return workers * tasksPerWorker;
        }
    }

    /** What a run measured; {@code -1} where it could not be measured. */
    record Measured(Settings settings, long peak, long done, long inflightAtEnd, long distinctTokens, long stale,
            List<Integer> exitCodes, String leaseEvidence, boolean leaseEnded, long permits, long available,
            long queued) {
        List<Check> checks() {
            int limit = settings.limit();
            return List.of(
                    new Check(format("the fleet never had more than %d tasks in flight at once (counted in Redis)",
                            limit),
                            peak >= 0 && peak <= limit, format("peak %d of limit %d", peak, limit)),
                    new Check("every task of every worker ran, and every worker exited cleanly",
                            done == settings.tasks() && inflightAtEnd == 0
                                    && exitCodes.size() == settings.workers()
                                    && exitCodes.stream().allMatch(c -> c == 0),
                            format("%d of %d tasks, %d still counted in flight, exit codes %s", done,
                                    settings.tasks(), inflightAtEnd, exitCodes)),
                    new Check("fencing tokens increased: each grant's token exceeded every token released before"
                            + " it asked; all distinct",
                            stale == 0 && distinctTokens == done,
                            format("%d stale, %d distinct tokens for %d grants", stale, distinctTokens, done)),
                    new Check(format("the killed process's %d permits came back when its lease ended",
                            settings.holderPermits()),
                            leaseEnded, leaseEvidence),
                    new Check("every permit came back and nobody is queued",
                            permits == limit && available == limit && queued == 0,
                            format("availablePermits() %d, permits() %d, queueLength() %d", available, permits,
                                    queued)));
        }
    }

    private final Settings settings;
    private final Terminal terminal;
    private long start;
    // What the status line shows, set as the run goes on.
    private volatile int ready;      // child JVMs that said READY or HELD
    private volatile boolean going;  // the workers were told GO, and the fields below are set
    private volatile RedisCommands<String, String> commands;
    private volatile RedisSemaphore shared;
    private volatile Keys keys;

    FleetPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public String title() {
        return "RedisSemaphore: one limit shared by several JVMs, and a process killed while holding";
    }

    @Override
    public List<Check> run() throws Exception {
        Optional<String> given = RedisServer.givenUri();
        if (given.isPresent()) {
            terminal.println("Redis: the Redis at SEMA_REDIS_URI");
            return measure(given.get(), true).checks();
        }
        RedisServer.Source source = RedisServer.Source.INSTALLED_OR_BUNDLED;
        Optional<RedisServer.Binary> binary = source.find();
        if (binary.isEmpty()) {
            terminal.println("No Redis: SEMA_REDIS_URI is not set, and " + source.missing() + ".");
            return List.of(new Check("skipped: no Redis for this platform", true,
                    "set SEMA_REDIS_URI, or install redis-server"));
        }
        try (RedisServer redis = RedisServer.start(binary.get())) {
            terminal.println("Redis: " + redis);
            return measure(redis.uri(), false).checks();
        }
    }

    /**
     * Runs the fleet against the Redis at {@code uri}; {@code external}: a Redis the demo did not start, whose
     * keys it deletes at the end.
     */
    Measured measure(String uri, boolean external) throws Exception {
        start = System.nanoTime();
        ready = 0;
        going = false;
        String name = "sema-demo-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        Keys keys = Keys.of(name);
        this.keys = keys;
        int limit = settings.limit();
        RedisClient client = RedisClient.create(uri);
        List<Child> children = new ArrayList<>();
        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("demo-fleet-status").daemon().factory());
        Path logs = Files.createTempDirectory("sema-demo-fleet");
        try {
            terminal.println(format("%d worker JVMs run %d tasks each at once, on virtual threads, one permit per task,"
                    + " through one", settings.workers(), settings.tasksPerWorker()));
            terminal.println(format("RedisSemaphores.connect(uri).semaphore(\"%s\").permits(%d).build(); another"
                    + " JVM holds %d permits.", name, limit, settings.holderPermits()));
            event(format("starting %d JVMs with the same java and class path", settings.workers() + 1));
            Child holder = Child.start("holder", logs, "hold", uri, name, Integer.toString(limit),
                    Long.toString(settings.holderLease().toMillis()), Integer.toString(settings.holderPermits()));
            children.add(holder);
            List<Child> workers = new ArrayList<>();
            for (int i = 0; i < settings.workers(); i++) {
                Child worker = Child.start("worker-" + (char) ('A' + i), logs, "work", uri, name,
                        Integer.toString(limit), Long.toString(settings.workerLease().toMillis()),
                        Integer.toString(settings.tasksPerWorker()), Integer.toString(17 + i),
                        Integer.toString(settings.minWorkMillis()), Integer.toString(settings.maxWorkMillis()));
                workers.add(worker);
                children.add(worker);
            }
            ticker.scheduleAtFixedRate(this::status, 0, terminal.isInteractive() ? 200 : 1_000, TimeUnit.MILLISECONDS);
            try (StatefulRedisConnection<String, String> connection = client.connect();
                    RedisSemaphores semaphores = RedisSemaphores.connect(uri)) {
                RedisCommands<String, String> r = connection.sync();
                RedisSemaphore semaphore = semaphores.semaphore(name).permits(limit).lease(settings.workerLease())
                        .build();
                commands = r;
                shared = semaphore;
                return fleet(external, name, keys, r, semaphore, holder, workers, ticker);
            }
        } finally {
            ticker.shutdownNow();
            terminal.endStatus();
            for (Child child : children) {
                child.kill();
            }
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            for (Child child : children) {
                child.deleteLog();
            }
            Files.deleteIfExists(logs);
        }
    }

    /** The fleet at work, once the child JVMs are starting and this process is connected. */
    private Measured fleet(boolean external, String name, Keys keys, RedisCommands<String, String> r,
            RedisSemaphore semaphore, Child holder, List<Child> workers, ScheduledExecutorService ticker)
            throws Exception {
        int limit = settings.limit();
        long holderToken = Long.parseLong(holder.await("HELD", Duration.ofSeconds(60)));
        ready++;
        event(format("the holder JVM (pid %d) holds %d permits, fencing token %d", holder.pid(),
                settings.holderPermits(), holderToken));
        for (Child worker : workers) {
            worker.await("READY", Duration.ofSeconds(60));
            ready++;
        }
        event(format("%d worker JVMs are ready; go", workers.size()));
        for (Child worker : workers) {
            worker.send("GO");
        }
        going = true;

        // Kill the holder once the fleet is well under way: its permits are released by nobody.
        awaitUntil(() -> count(r, keys.done()) >= settings.tasks() / 10, Duration.ofSeconds(60),
                "the fleet did not get under way");
        holder.kill();
        long killedAt = System.nanoTime();
        r.set(keys.recent(), "0");
        event(format("SIGKILL the holder JVM: nobody releases its %d permits; the fleet goes on with %d",
                settings.holderPermits(), limit - settings.holderPermits()));

        // While the dead process's permits are held, at most limit - held tasks can be in flight: seeing
        // more proves that its lease ended in Redis and its permits went to the fleet.
        long bound = limit - settings.holderPermits();
        boolean seen = awaitUntil(() -> count(r, keys.recent()) > bound || allDone(r, keys),
                settings.holderLease().plusSeconds(30), null);
        String leaseEvidence;
        boolean leaseEnded;
        if (count(r, keys.recent()) > bound) {
            leaseEnded = true;
            leaseEvidence = format("%d tasks in flight (more than %d) %d ms after the kill; lease %d ms, renewed"
                    + " until then", count(r, keys.recent()), bound, millisSince(killedAt),
                    settings.holderLease().toMillis());
            event(format("the holder's lease ended in Redis %d ms after the kill: the fleet uses all %d again",
                    millisSince(killedAt), limit));
        } else {
            // The fleet finished first (or did not get there): ask for every permit ourselves.
            leaseEnded = false;
            leaseEvidence = seen ? "the fleet finished before the lease ended" : "nothing seen in time";
            try (Permit all = semaphore.acquire(limit, settings.holderLease().plusSeconds(30))) {
                leaseEnded = all.permits() == limit;
                leaseEvidence += format("; then acquire(%d) was granted %d ms after the kill", limit,
                        millisSince(killedAt));
            } catch (TimeoutException e) {
                leaseEvidence += format("; acquire(%d) timed out", limit);
            }
        }

        List<Integer> exitCodes = new ArrayList<>();
        for (Child worker : workers) {
            worker.await("DONE", Duration.ofSeconds(120));
            exitCodes.add(worker.exitCode(Duration.ofSeconds(30)));
        }
        ticker.shutdownNow();
        ticker.awaitTermination(10, TimeUnit.SECONDS);
        status();
        terminal.endStatus();
        Measured measured = new Measured(settings, count(r, keys.peak()), count(r, keys.done()),
                count(r, keys.inflight()), r.scard(keys.tokens()), count(r, keys.stale()), exitCodes,
                leaseEvidence, leaseEnded, semaphore.permits(), semaphore.availablePermits(),
                semaphore.queueLength());
        event(format("every worker is done: %d tasks, at most %d in flight across the fleet (limit %d)",
                measured.done(), measured.peak(), limit));
        if (external) {
            deleteKeys(r, name, keys);
        }
        return measured;
    }

    private boolean allDone(RedisCommands<String, String> r, Keys keys) {
        return count(r, keys.done()) >= settings.tasks();
    }

    private static long count(RedisCommands<String, String> r, String key) {
        String value = r.get(key);
        return value == null ? 0 : Long.parseLong(value);
    }

    private void status() {
        if (!going) {
            terminal.status(format("%6.1fs  %d of %d JVMs ready", (System.nanoTime() - start) / 1e9, ready,
                    settings.workers() + 1));
            return;
        }
        try {
            RedisCommands<String, String> r = commands;
            terminal.status(format("%6.1fs  in flight %d of %d (peak %d)  queued %3d  done %3d of %d",
                    (System.nanoTime() - start) / 1e9, count(r, keys.inflight()), settings.limit(),
                    count(r, keys.peak()), shared.queueLength(), count(r, keys.done()), settings.tasks()));
        } catch (RuntimeException e) {
            // a status line missed is no failure; the checks read the same numbers at the end
        }
    }

    private void event(String what) {
        terminal.event(start, what);
    }

    /** Polls an observable state every 20 ms until it holds; false (or a failure, with a message) at the deadline. */
    private static boolean awaitUntil(BooleanSupplier condition, Duration timeout, String failure)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline >= 0) {
                if (failure != null) {
                    throw new IllegalStateException(failure + " within " + timeout);
                }
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    /** Leaves a Redis the demo did not start as it was: deletes this run's keys and the semaphore's. */
    private static void deleteKeys(RedisCommands<String, String> r, String name, Keys keys) {
        r.del(keys.all().toArray(new String[0]));
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            KeyScanCursor<String> page = r.scan(cursor, ScanArgs.Builder.matches("sem:{" + name + "}:*").limit(100));
            if (!page.getKeys().isEmpty()) {
                r.del(page.getKeys().toArray(new String[0]));
            }
            cursor = page;
        } while (!cursor.isFinished());
    }

    /**
     * Keeps Netty (under Lettuce) away from {@code sun.misc.Unsafe}, which newer JDKs warn about on
     * standard error; {@code bin/demo} passes it to the demo's own JVM too.
     */
    static final String NETTY_WITHOUT_UNSAFE = "-Dio.netty.noUnsafe=true";

    /** A child JVM running {@link FleetWorker}, talked to through its standard input and output. */
    static final class Child {
        private static final String EOF = "\u0000EOF";

        private final String label;
        private final Process process;
        private final Path log;
        private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();

        private Child(String label, Process process, Path log) {
            this.label = label;
            this.process = process;
            this.log = log;
            Thread.ofVirtual().name("demo-child-" + label).start(this::readLines);
        }

        /** Starts {@code FleetWorker} with these arguments on the same JVM and class path as this one. */
        static Child start(String label, Path logs, String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"),
                    "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", NETTY_WITHOUT_UNSAFE,
                    FleetWorker.class.getName()));
            command.addAll(List.of(args));
            Path log = logs.resolve(label + ".log");
            Process process = new ProcessBuilder(command)
                    .redirectError(log.toFile())
                    .start();
            return new Child(label, process, log);
        }

        private void readLines() {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    lines.add(line);
                }
            } catch (IOException e) {
                // the process is gone: same as the end of its output
            }
            lines.add(EOF);
        }

        long pid() {
            return process.pid();
        }

        /** Waits for a line starting with {@code prefix} and returns the rest of it. */
        String await(String prefix, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            for (;;) {
                String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (line == null) {
                    throw new IllegalStateException(label + " did not say " + prefix + " within " + timeout
                            + problems());
                }
                if (line.equals(EOF)) {
                    lines.add(EOF); // for later callers
                    throw new IllegalStateException(label + " ended without saying " + prefix + problems());
                }
                if (line.startsWith("FAILED")) {
                    throw new IllegalStateException(label + " " + line + problems());
                }
                if (line.startsWith(prefix)) {
                    return line.substring(prefix.length()).trim();
                }
            }
        }

        void send(String line) throws IOException {
            OutputStream in = process.getOutputStream();
            in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            in.flush();
        }

        int exitCode(Duration timeout) throws InterruptedException {
            return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? process.exitValue() : -1;
        }

        /** SIGKILL (on Unix): the process gets no chance to release anything. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        void deleteLog() throws IOException {
            Files.deleteIfExists(log);
        }

        private String problems() {
            try {
                String err = Files.readString(log);
                return err.isBlank() ? "" : "; its standard error:\n" + err;
            } catch (IOException e) {
                return "";
            }
        }
    }
}
