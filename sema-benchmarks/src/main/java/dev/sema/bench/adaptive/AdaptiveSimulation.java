package dev.sema.bench.adaptive;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Adaptive limits against a downstream whose capacity changes: Sema's {@code AdaptiveLimit} (AIMD and
 * gradient), Netflix {@code concurrency-limits} (AIMD and Gradient2, with their defaults) and fixed limits
 * (too low, right for the first phase, too high), one after the other in one JVM, in real time.
 *
 * <p>The {@link Downstream} serves {@code capacity} requests at once in 20 ms (0.8x-1.2x); the rest wait in
 * its queue (2,000 at most, then it refuses); callers give up after 50 ms, and the server still does the
 * work of an abandoned request. Its capacity goes 40 -> 15 -> 60. Requests arrive open-loop
 * (Poisson) at 4,500/s, 1.5x and more the capacity of every phase (2,000/s, 750/s, 3,000/s); each limiter admits or
 * refuses at once, and an admitted request runs on a virtual thread and reports success or drop.
 *
 * <p>Reported per contender: goodput (successful calls per second, and as a share of what the downstream
 * could serve), the share of requests refused by the limiter and failed by the downstream, p50/p99
 * latency of admitted calls, and per phase the mean limit over its second half and the time the limit took
 * to settle: from the capacity change until its mean over the last second entered 0.75x-1.5x the new
 * capacity and stayed there for the rest of the phase ("never" if it did not).
 *
 * <p>Run: {@code bin/benchmarks adaptive} (or {@code java -cp sema-benchmarks/target/benchmarks.jar
 * dev.sema.bench.adaptive.AdaptiveSimulation [quick|full] [--out file.md]}).
 */
public final class AdaptiveSimulation {
    static final Duration BASE = Duration.ofMillis(20);
    static final Duration CLIENT_TIMEOUT = Duration.ofMillis(50);
    static final int MAX_QUEUE = 2_000;
    static final int[] CAPACITIES = {40, 15, 60};
    static final int RATE = 4_500;
    static final int INITIAL = 20;
    static final List<String> CONTENDERS = List.of("fixed-10", "fixed-40", "fixed-100", "sema-aimd",
            "sema-gradient", "netflix-aimd", "netflix-gradient2");
    private static final long SAMPLE_EVERY = TimeUnit.MILLISECONDS.toNanos(50);

    private AdaptiveSimulation() {
    }

    public static void main(String[] args) throws Exception {
        String mode = "quick";
        Path out = null;
        List<String> contenders = CONTENDERS;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "quick", "full", "smoke" -> mode = args[i];
                case "--out" -> out = Path.of(args[++i]);
                case "--only" -> contenders = List.of(args[++i].split(","));
                default -> throw new IllegalArgumentException("usage: AdaptiveSimulation [quick|full|smoke] [--out file] [--only a,b]");
            }
        }
        Duration phase = switch (mode) {
            case "full" -> Duration.ofSeconds(15);
            case "smoke" -> Duration.ofSeconds(1);
            default -> Duration.ofSeconds(8);
        };
        if (!mode.equals("smoke")) {
            run("sema-gradient", Duration.ofSeconds(1), 1); // warm-up, discarded
            run("netflix-gradient2", Duration.ofSeconds(1), 2);
        }
        List<Result> results = new ArrayList<>();
        long seed = 42;
        for (String contender : contenders) {
            Result r = run(contender, phase, seed++);
            System.err.println(r.summaryLine());
            results.add(r);
        }
        String report = report(results, phase, mode);
        System.out.println(report);
        if (out != null) {
            Files.writeString(out, report);
        }
        System.exit(0); // the downstream's sleeping virtual threads have ended; nothing else to wait for
    }

    /** What one contender did in one phase. */
    static final class PhaseStats {
        final int capacity;
        final AtomicLong arrivals = new AtomicLong();
        final AtomicLong refused = new AtomicLong();
        final AtomicLong succeeded = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final long[] latencies;
        final AtomicInteger latencyCount = new AtomicInteger();
        final List<long[]> limitSamples = new ArrayList<>(); // {nanos since phase start, limit}

        PhaseStats(int capacity, int expectedCalls) {
            this.capacity = capacity;
            this.latencies = new long[expectedCalls];
        }

        void latency(long nanos) {
            int i = latencyCount.getAndIncrement();
            if (i < latencies.length) {
                latencies[i] = nanos;
            }
        }
    }

    record Result(String contender, List<PhaseStats> phases, Duration phase) {
        String summaryLine() {
            long ok = phases.stream().mapToLong(p -> p.succeeded.get()).sum();
            return String.format(Locale.ROOT, "%-18s goodput %6.0f/s", contender, ok / (phases.size() * seconds(phase)));
        }
    }

    static Result run(String contender, Duration phaseLength, long seed) throws InterruptedException {
        Downstream downstream = new Downstream(CAPACITIES[0], BASE, CLIENT_TIMEOUT, MAX_QUEUE);
        Admission admission = Admission.create(contender, INITIAL);
        Random random = new Random(seed);
        List<PhaseStats> phases = new ArrayList<>();
        AtomicInteger inFlight = new AtomicInteger();
        long phaseNanos = phaseLength.toNanos();
        double meanGap = 1e9 / RATE;
        for (int capacity : CAPACITIES) {
            downstream.capacity(capacity);
            PhaseStats stats = new PhaseStats(capacity, (int) (RATE * seconds(phaseLength) * 1.5) + 1_000);
            phases.add(stats);
            long start = System.nanoTime();
            long next = start;
            long nextSample = start;
            while (true) {
                long now = System.nanoTime();
                if (now - start >= phaseNanos) {
                    break;
                }
                if (now - nextSample >= 0) {
                    stats.limitSamples.add(new long[] {now - start, admission.limit()});
                    nextSample += SAMPLE_EVERY;
                }
                if (now - next < 0) {
                    LockSupport.parkNanos(Math.min(next - now, nextSample - now));
                    continue;
                }
                next += (long) (-Math.log(1 - random.nextDouble()) * meanGap);
                stats.arrivals.incrementAndGet();
                Optional<Admission.Ticket> ticket = admission.tryAdmit();
                if (ticket.isEmpty()) {
                    stats.refused.incrementAndGet();
                    continue;
                }
                inFlight.incrementAndGet();
                Admission.Ticket t = ticket.get();
                Thread.startVirtualThread(() -> {
                    long t0 = System.nanoTime();
                    boolean ok = false;
                    try {
                        ok = downstream.call();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        stats.latency(System.nanoTime() - t0);
                        if (ok) {
                            stats.succeeded.incrementAndGet();
                            t.succeeded();
                        } else {
                            stats.failed.incrementAndGet();
                            t.dropped();
                        }
                        inFlight.decrementAndGet();
                    }
                });
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (inFlight.get() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return new Result(contender, phases, phaseLength);
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    /**
     * Nanoseconds from the phase start until the limit, averaged over the last second of samples, entered
     * the band and stayed there for the rest of the phase; -1 if it never did.
     */
    static long settleNanos(PhaseStats p) {
        long settled = -1;
        int window = (int) (TimeUnit.SECONDS.toNanos(1) / SAMPLE_EVERY);
        List<long[]> s = p.limitSamples;
        double sum = 0;
        for (int i = 0; i < s.size(); i++) {
            sum += s.get(i)[1];
            if (i >= window) {
                sum -= s.get(i - window)[1];
            }
            double mean = sum / Math.min(i + 1, window);
            boolean inBand = mean >= 0.75 * p.capacity && mean <= 1.5 * p.capacity;
            if (!inBand) {
                settled = -1;
            } else if (settled < 0) {
                settled = s.get(i)[0];
            }
        }
        return settled;
    }

    static double meanLimitSecondHalf(PhaseStats p, Duration phase) {
        long half = phase.toNanos() / 2;
        return p.limitSamples.stream().filter(s -> s[0] >= half).mapToLong(s -> s[1]).average().orElse(Double.NaN);
    }

    static String report(List<Result> results, Duration phase, String mode) {
        StringBuilder b = new StringBuilder();
        double total = seconds(phase) * CAPACITIES.length;
        double servable = 0;
        for (int c : CAPACITIES) {
            servable += c * seconds(phase) / seconds(BASE);
        }
        b.append(String.format(Locale.ROOT, "Mode %s: %d phases of %.0f s, capacity %s, base latency %d ms, client timeout %d ms, "
                + "server queue bound %,d, %,d arrivals/s (Poisson), every limiter starting at %d. The downstream could serve at most %,.0f calls/s "
                + "on average over the run.%n%n", mode, CAPACITIES.length, seconds(phase), Arrays.toString(CAPACITIES)
                .replace(", ", " -> "), BASE.toMillis(), CLIENT_TIMEOUT.toMillis(), MAX_QUEUE, RATE, INITIAL, servable / total));
        b.append("| limiter | goodput (calls/s) | of servable | refused | failed downstream | p50 latency | p99 latency |");
        for (int c : CAPACITIES) {
            b.append(" limit at ").append(c).append(" | settle at ").append(c).append(" |");
        }
        b.append('\n').append("|---|---:|---:|---:|---:|---:|---:|");
        b.append("---:|---:|".repeat(CAPACITIES.length)).append('\n');
        for (Result r : results) {
            long arrivals = 0;
            long refused = 0;
            long ok = 0;
            long failed = 0;
            List<Long> lat = new ArrayList<>();
            for (PhaseStats p : r.phases()) {
                arrivals += p.arrivals.get();
                refused += p.refused.get();
                ok += p.succeeded.get();
                failed += p.failed.get();
                int n = Math.min(p.latencyCount.get(), p.latencies.length);
                for (int i = 0; i < n; i++) {
                    lat.add(p.latencies[i]);
                }
            }
            long[] sorted = lat.stream().mapToLong(Long::longValue).sorted().toArray();
            b.append(String.format(Locale.ROOT, "| %s | %,.0f | %.0f%% | %.1f%% | %.1f%% | %s | %s |", r.contender(),
                    ok / total, 100.0 * ok / servable, 100.0 * refused / arrivals, 100.0 * failed / arrivals,
                    ms(percentile(sorted, 0.50)), ms(percentile(sorted, 0.99))));
            for (PhaseStats p : r.phases()) {
                long settle = settleNanos(p);
                b.append(String.format(Locale.ROOT, " %.0f | %s |", meanLimitSecondHalf(p, phase),
                        settle < 0 ? "never" : String.format(Locale.ROOT, "%.2f s", settle / 1e9)));
            }
            b.append('\n');
        }
        return b.toString();
    }

    private static long percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    private static String ms(long nanos) {
        return nanos < 0 ? "-" : String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
    }
}
