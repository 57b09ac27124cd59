package dev.sema.bench.adaptive;

import com.sun.net.httpserver.HttpServer;
import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.bench.redis.Endpoint;
import dev.sema.testing.RedisServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The fleet variant of {@link AdaptiveSimulation}: 4 JVM processes ({@link FleetSimWorker}) share one
 * downstream, run by this process as an HTTP server on a loopback port, whose capacity goes 40 -> 15 -> 60
 * calls at once (200 ms each, 0.8x-1.2x; beyond the capacity calls queue there, and callers give up after
 * 500 ms while the server still does the work). Requests arrive open-loop at 450/s across the fleet, above
 * every capacity's 200/s, 75/s and 300/s. The workers start 3 s early (JIT warm-up, not measured).
 *
 * <p>Two runs: {@code shared}, where the processes admit through one {@code RedisSemaphore} with an
 * {@code AdaptiveLimit.gradient()} in each (one limit for the fleet, adjusted by all), and
 * {@code separate}, where each process adapts its own local semaphore (the fleet's limit is then the sum of
 * four). The fleet-wide limit is read from Redis (shared) or summed from the workers' reports (separate)
 * every 100 ms.
 *
 * <p>Run: {@code bin/benchmarks adaptive-fleet} (it needs a {@code redis-server}, or {@code SEMA_REDIS_URI}).
 */
public final class AdaptiveFleetSimulation {
    static final int[] CAPACITIES = {40, 15, 60};
    static final int PROCESSES = 4;
    static final int RATE = 450;
    static final Duration BASE = Duration.ofMillis(200);
    static final Duration CLIENT_TIMEOUT = Duration.ofMillis(500);
    static final int MAX_QUEUE = 2_000;

    private AdaptiveFleetSimulation() {
    }

    public static void main(String[] args) throws Exception {
        String mode = "full";
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "quick", "full", "smoke" -> mode = args[i];
                case "--out" -> out = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("usage: AdaptiveFleetSimulation [quick|full|smoke] [--out file]");
            }
        }
        Duration phase = switch (mode) {
            case "full" -> Duration.ofSeconds(20);
            case "smoke" -> Duration.ofSeconds(3);
            default -> Duration.ofSeconds(10);
        };
        Optional<String> given = RedisServer.givenUri();
        RedisServer.Source source = RedisServer.Source.INSTALLED;
        Optional<RedisServer.Binary> binary = given.isPresent() ? Optional.empty() : source.find();
        if (given.isEmpty() && binary.isEmpty()) {
            System.err.println("no SEMA_REDIS_URI, and " + source.missing() + ": the fleet simulation is skipped");
            System.exit(3);
            return;
        }
        List<Run> runs = new ArrayList<>();
        try (RedisServer server = binary.isPresent() ? RedisServer.start(binary.get()) : null) {
            String uri = server != null ? server.uri() : Endpoint.given(given.get()).uri();
            for (String kind : List.of("shared", "separate")) {
                Run r = run(kind, uri, phase);
                System.err.println(kind + ": " + r.succeeded + " succeeded");
                runs.add(r);
            }
        }
        String report = report(runs, phase, mode);
        System.out.println(report);
        if (out != null) {
            Files.writeString(out, report);
        }
        System.exit(0);
    }

    /** One run's fleet-wide numbers. */
    static final class Run {
        final String kind;
        final List<List<long[]>> limits = new ArrayList<>(); // per phase: {ms since phase start, fleet limit}
        long admitted;
        long succeeded;
        long failed;
        long refused;
        long[] latenciesMicros = new long[0];
        long peakServing;

        Run(String kind) {
            this.kind = kind;
        }
    }

    static Run run(String kind, String redisUri, Duration phase) throws Exception {
        Run run = new Run(kind);
        Semaphore servers = Semaphore.builder().name("fleet-downstream").permits(CAPACITIES[0]).maxPermits(100_000)
                .fairness(Fairness.FIFO).build();
        long[] serving = new long[1];
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4_096);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/call", exchange -> {
            int status = 200;
            if (servers.queueLength() >= MAX_QUEUE) {
                status = 503;
            } else {
                try (Permit p = servers.acquire()) {
                    synchronized (serving) {
                        serving[0]++;
                        run.peakServing = Math.max(run.peakServing, serving[0]);
                    }
                    Thread.sleep((long) (BASE.toMillis() * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble())));
                    synchronized (serving) {
                        serving[0]--;
                    }
                } catch (InterruptedException e) {
                    status = 503;
                }
            }
            try (exchange) {
                exchange.sendResponseHeaders(status, -1);
            } catch (IOException callerGaveUp) {
                // the caller timed out and closed the connection: the work was done for nothing
            }
        });
        server.start();
        String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/call";
        String name = "fleet-sim-" + kind + "-" + System.nanoTime();
        long runMs = phase.toMillis() * CAPACITIES.length;
        long startEpochMs = System.currentTimeMillis() + 7_000; // every JVM started, connected and warm by then
        long warmUpMs = 3_000;
        Path dir = Files.createTempDirectory("sema-fleet-sim");
        List<Process> workers = new ArrayList<>();
        List<Path> latencyFiles = new ArrayList<>();
        ConcurrentHashMap<Integer, List<long[]>> reported = new ConcurrentHashMap<>();
        List<String> stats = new CopyOnWriteArrayList<>();
        List<Thread> readers = new ArrayList<>();
        for (int i = 0; i < PROCESSES; i++) {
            Path latencies = dir.resolve("latencies-" + i + ".txt");
            latencyFiles.add(latencies);
            List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Dio.netty.noUnsafe=true", "-cp", System.getProperty("java.class.path"),
                    FleetSimWorker.class.getName(), kind, redisUri, name + (kind.equals("shared") ? "" : "-" + i), url,
                    Integer.toString(RATE / PROCESSES), Long.toString(startEpochMs - warmUpMs), Long.toString(runMs + warmUpMs),
                    Long.toString(CLIENT_TIMEOUT.toMillis()), Integer.toString(100 + i), latencies.toString());
            Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            workers.add(p);
            int index = i;
            List<long[]> mine = new CopyOnWriteArrayList<>();
            reported.put(index, mine);
            readers.add(Thread.ofPlatform().start(() -> read(p, mine, stats)));
        }
        dev.sema.redis.RedisSemaphores observer = kind.equals("shared") ? dev.sema.redis.RedisSemaphores.connect(redisUri)
                : null;
        Semaphore fleet = observer == null ? null : observer.semaphore(name).permits(20).maxPermits(1_000).build();
        long waitMs = startEpochMs - System.currentTimeMillis();
        if (waitMs > 0) {
            Thread.sleep(waitMs);
        }
        long start = System.nanoTime();
        for (int p = 0; p < CAPACITIES.length; p++) {
            servers.setPermits(CAPACITIES[p]);
            List<long[]> samples = new ArrayList<>();
            run.limits.add(samples);
            long phaseStart = start + p * phase.toNanos();
            long phaseEnd = phaseStart + phase.toNanos();
            for (long now = System.nanoTime(); now < phaseEnd; now = System.nanoTime()) {
                long ms = (now - phaseStart) / 1_000_000;
                long limit;
                if (fleet != null) {
                    limit = fleet.permits();
                } else {
                    long sinceStart = (now - start) / 1_000_000 + warmUpMs; // the workers count from their start
                    limit = 0;
                    for (List<long[]> r : reported.values()) {
                        long last = 0;
                        for (long[] s : r) {
                            if (s[0] <= sinceStart) {
                                last = s[1];
                            }
                        }
                        limit += last;
                    }
                }
                samples.add(new long[] {ms, limit});
                Thread.sleep(100);
            }
        }
        for (Process p : workers) {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
        for (Thread t : readers) {
            t.join(5_000);
        }
        if (observer != null) {
            observer.close();
        }
        server.stop(0);
        for (String line : stats) {
            long[] n = Arrays.stream(line.split(" ")).skip(1).mapToLong(Long::parseLong).toArray();
            run.admitted += n[0];
            run.succeeded += n[1];
            run.failed += n[2];
            run.refused += n[3];
        }
        List<Long> all = new ArrayList<>();
        for (Path f : latencyFiles) {
            if (Files.exists(f)) {
                for (String l : Files.readAllLines(f)) {
                    if (!l.isBlank()) {
                        all.add(Long.parseLong(l.trim()));
                    }
                }
                Files.delete(f);
            }
        }
        Files.deleteIfExists(dir);
        run.latenciesMicros = all.stream().mapToLong(Long::longValue).sorted().toArray();
        if (stats.size() != PROCESSES) {
            throw new IllegalStateException("only " + stats.size() + " of " + PROCESSES + " workers reported");
        }
        return run;
    }

    private static void read(Process p, List<long[]> limits, List<String> stats) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                if (line.startsWith("LIMIT ")) {
                    String[] f = line.split(" ");
                    limits.add(new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
                } else if (line.startsWith("STATS ")) {
                    stats.add(line);
                }
            }
        } catch (IOException e) {
            // the worker ended
        }
    }

    static String report(List<Run> runs, Duration phase, String mode) {
        StringBuilder b = new StringBuilder();
        double seconds = phase.toMillis() / 1e3 * CAPACITIES.length;
        double servable = 0;
        for (int c : CAPACITIES) {
            servable += c * (phase.toMillis() / (double) BASE.toMillis());
        }
        b.append(String.format(Locale.ROOT, "Mode %s: %d JVM processes, %d phases of %d s, capacity %s, base latency %d ms, "
                + "client timeout %d ms, %,d arrivals/s across the fleet (Poisson). The downstream could serve at most "
                + "%,.0f calls/s on average.%n%n", mode, PROCESSES, CAPACITIES.length, phase.toSeconds(),
                Arrays.toString(CAPACITIES).replace(", ", " -> "), BASE.toMillis(), CLIENT_TIMEOUT.toMillis(), RATE,
                servable / seconds));
        b.append("| fleet | goodput (calls/s) | of servable | refused | failed | p50 latency | p99 latency | peak served at once |");
        for (int c : CAPACITIES) {
            b.append(" fleet limit at ").append(c).append(" | settle at ").append(c).append(" |");
        }
        b.append('\n').append("|---|---:|---:|---:|---:|---:|---:|---:|").append("---:|---:|".repeat(CAPACITIES.length))
                .append('\n');
        for (Run r : runs) {
            long arrivals = r.admitted + r.refused;
            b.append(String.format(Locale.ROOT, "| %s | %,.0f | %.0f%% | %.1f%% | %.1f%% | %s | %s | %d |",
                    r.kind.equals("shared") ? "one RedisSemaphore, an AdaptiveLimit per process"
                            : "a local semaphore and AdaptiveLimit per process",
                    r.succeeded / seconds, 100.0 * r.succeeded / servable, 100.0 * r.refused / Math.max(1, arrivals),
                    100.0 * r.failed / Math.max(1, arrivals), ms(percentile(r.latenciesMicros, 0.5)),
                    ms(percentile(r.latenciesMicros, 0.99)), r.peakServing));
            for (int p = 0; p < CAPACITIES.length; p++) {
                List<long[]> s = r.limits.get(p);
                long half = phase.toMillis() / 2;
                double mean = s.stream().filter(x -> x[0] >= half).mapToLong(x -> x[1]).average().orElse(Double.NaN);
                long settle = settleMillis(s, CAPACITIES[p]);
                b.append(String.format(Locale.ROOT, " %.0f | %s |", mean,
                        settle < 0 ? "never" : String.format(Locale.ROOT, "%.1f s", settle / 1e3)));
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** As AdaptiveSimulation's settle: the 1 s mean of the limit enters 0.75x-1.5x and stays; -1 if never. */
    static long settleMillis(List<long[]> s, int capacity) {
        long settled = -1;
        int window = 10;
        double sum = 0;
        for (int i = 0; i < s.size(); i++) {
            sum += s.get(i)[1];
            if (i >= window) {
                sum -= s.get(i - window)[1];
            }
            double mean = sum / Math.min(i + 1, window);
            boolean inBand = mean >= 0.75 * capacity && mean <= 1.5 * capacity;
            if (!inBand) {
                settled = -1;
            } else if (settled < 0) {
                settled = s.get(i)[0];
            }
        }
        return settled;
    }

    private static long percentile(long[] sorted, double q) {
        return sorted.length == 0 ? -1 : sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    private static String ms(long micros) {
        return micros < 0 ? "-" : String.format(Locale.ROOT, "%.0f ms", micros / 1e3);
    }
}
