package dev.sema.examples;

import static dev.sema.examples.Text.format;

import dev.sema.AdaptiveLimit;
import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code AdaptiveLimit} at work: calls to a partner API whose capacity changes while the part runs (it
 * can serve so many calls at once; beyond that they queue there, and callers give up after a timeout
 * while the partner still works on them). Requests arrive faster than the partner can ever serve; a
 * gradient adaptive limit admits them through one semaphore, refusing at once beyond its limit. The
 * status line shows the limit following the capacity; a chart of both is drawn at the end.
 */
final class AdaptivePart implements Part {

    /**
     * The knobs of a run.
     *
     * @param capacities the partner's capacity in each phase
     * @param phase how long each phase lasts
     * @param service how long the partner takes for one call when it is not overloaded
     * @param callerTimeout when a caller gives up
     * @param arrivalsPerSecond the requests arriving per second, at random (Poisson)
     * @param seed makes the arrivals repeatable
     */
    record Settings(int[] capacities, Duration phase, Duration service, Duration callerTimeout,
            int arrivalsPerSecond, long seed) {
        static Settings standard() {
            return new Settings(new int[] {30, 10, 45}, Duration.ofSeconds(4), Duration.ofMillis(20),
                    Duration.ofMillis(50), 2_800, 7);
        }
    }

    /** One reading of the status: when, the partner's capacity and the adaptive limit. */
    record Sample(long millis, int capacity, long limit) {
    }

    /** What a run measured, per phase and overall. */
    record Measured(Settings settings, List<Sample> samples, long admitted, long succeeded, long refused,
            long minLimitSeen, long maxLimitSeen, long ceiling, long available, long permits, int queued) {

        /** The mean limit over the second half of phase {@code i}: where it settled. */
        double settledLimit(int i) {
            long phaseMillis = settings.phase().toMillis();
            return samples.stream()
                    .filter(s -> s.millis() >= i * phaseMillis + phaseMillis / 2 && s.millis() < (i + 1) * phaseMillis)
                    .mapToLong(Sample::limit).average().orElse(Double.NaN);
        }

        List<Check> checks() {
            List<Check> checks = new ArrayList<>();
            StringBuilder settled = new StringBuilder();
            boolean followed = true;
            for (int i = 0; i < settings.capacities().length; i++) {
                int c = settings.capacities()[i];
                double l = settledLimit(i);
                followed &= l >= 0.6 * c && l <= 2.0 * c;
                settled.append(format("%scapacity %d -> limit %.0f", i == 0 ? "" : ", ", c, l));
            }
            checks.add(new Check("the limit followed the partner's capacity (0.6x to 2x of it, second half of each phase)",
                    followed, settled.toString()));
            checks.add(new Check("most admitted calls succeeded: the partner was not overloaded",
                    admitted > 0 && succeeded >= 0.9 * admitted,
                    format("%,d of %,d admitted calls succeeded (%.1f%%)", succeeded, admitted,
                            admitted == 0 ? 0 : 100.0 * succeeded / admitted)));
            checks.add(new Check("the limit stayed within 1..maxPermits()",
                    minLimitSeen >= 1 && maxLimitSeen <= ceiling,
                    format("between %d and %d, ceiling %d", minLimitSeen, maxLimitSeen, ceiling)));
            checks.add(new Check("every permit came back",
                    available == permits && queued == 0,
                    format("availablePermits() %d, permits() %d, queueLength() %d", available, permits, queued)));
            return checks;
        }
    }

    private final Settings settings;
    private final Terminal terminal;

    AdaptivePart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "adaptive";
    }

    @Override
    public String title() {
        return "AdaptiveLimit: a limit that follows a partner API's changing capacity";
    }

    @Override
    public List<Check> run() throws InterruptedException {
        Measured m = measure();
        chart(m).forEach(terminal::println);
        return m.checks();
    }

    Measured measure() throws InterruptedException {
        Partner partner = new Partner(settings.capacities()[0], settings.service(), settings.callerTimeout());
        Semaphore api = Semaphore.builder().name("partner-api").permits(5).maxPermits(200).build();
        AdaptiveLimit adaptive = AdaptiveLimit.gradient().build(api);
        terminal.println(format("AdaptiveLimit.gradient().build(api): %,d calls/s arrive for a partner API that serves"
                + " %s at once, %d ms each;", settings.arrivalsPerSecond(), capacities(), settings.service().toMillis()));
        terminal.println(format("callers give up after %d ms. A call is refused at once when the limit is reached"
                + " (api.tryAcquire()).", settings.callerTimeout().toMillis()));
        AtomicLong admitted = new AtomicLong();
        AtomicLong succeeded = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        AtomicLong running = new AtomicLong();
        List<Sample> samples = new ArrayList<>();
        long minLimit = Long.MAX_VALUE;
        long maxLimit = 0;
        Random random = new Random(settings.seed());
        double meanGapNanos = 1e9 / settings.arrivalsPerSecond();
        long start = System.nanoTime();
        long nextArrival = start;
        long nextSample = start;
        long phaseNanos = settings.phase().toNanos();
        long end = start + phaseNanos * settings.capacities().length;
        int phase = 0;
        long okAtLastStatus = 0;
        long lastStatus = start;
        for (long now = System.nanoTime(); now < end; now = System.nanoTime()) {
            int p = (int) ((now - start) / phaseNanos);
            if (p != phase) {
                phase = p;
                partner.capacity(settings.capacities()[p]);
            }
            if (now >= nextSample) {
                long limit = adaptive.limit();
                minLimit = Math.min(minLimit, limit);
                maxLimit = Math.max(maxLimit, limit);
                samples.add(new Sample((now - start) / 1_000_000, settings.capacities()[p], limit));
                nextSample += TimeUnit.MILLISECONDS.toNanos(50);
                if (now - lastStatus >= TimeUnit.MILLISECONDS.toNanos(250)) {
                    long ok = succeeded.get();
                    terminal.status(format("  %4.1f s  partner capacity %2d  limit %3d  in flight %3d  %,5.0f ok/s  %s",
                            (now - start) / 1e9, settings.capacities()[p], limit, running.get(),
                            (ok - okAtLastStatus) / ((now - lastStatus) / 1e9), bar(limit, settings.capacities()[p])));
                    okAtLastStatus = ok;
                    lastStatus = now;
                }
            }
            if (now < nextArrival) {
                LockSupport.parkNanos(Math.min(nextArrival, nextSample) - now);
                continue;
            }
            nextArrival += (long) (-Math.log(1 - random.nextDouble()) * meanGapNanos);
            Optional<Permit> permit = api.tryAcquire();
            if (permit.isEmpty()) {
                refused.incrementAndGet();
                continue;
            }
            admitted.incrementAndGet();
            running.incrementAndGet();
            Thread.startVirtualThread(() -> {
                try (Permit held = permit.get()) { // held for the call: its hold time is the latency sample
                    if (partner.call()) {
                        succeeded.incrementAndGet();
                    } else {
                        adaptive.dropped(); // the caller timed out: overload
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    running.decrementAndGet();
                }
            });
        }
        terminal.endStatus();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (running.get() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        adaptive.close();
        terminal.println(format("  %,d requests: %,d admitted (%,d succeeded), %,d refused at once by the limit",
                admitted.get() + refused.get(), admitted.get(), succeeded.get(), refused.get()));
        return new Measured(settings, samples, admitted.get(), succeeded.get(), refused.get(), minLimit, maxLimit,
                api.maxPermits(), api.availablePermits(), api.permits(), api.queueLength());
    }

    private String capacities() {
        StringBuilder b = new StringBuilder();
        for (int c : settings.capacities()) {
            b.append(b.length() == 0 ? "" : " -> ").append(c);
        }
        return b.toString();
    }

    /** A one-line gauge: '#' up to the limit, '|' at the capacity. */
    private static String bar(long limit, int capacity) {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= 60; i++) {
            b.append(i == capacity ? '|' : i <= limit ? '#' : ' ');
        }
        return b.toString();
    }

    /** A chart of limit ('*') and capacity ('-') over time, one column per {@code step} of samples. */
    static List<String> chart(Measured m) {
        int rows = 12;
        int columns = Math.min(72, m.samples().size());
        if (columns == 0) {
            return List.of();
        }
        long top = m.samples().stream().mapToLong(s -> Math.max(s.limit(), s.capacity())).max().orElse(1);
        char[][] grid = new char[rows][columns];
        for (char[] row : grid) {
            java.util.Arrays.fill(row, ' ');
        }
        for (int col = 0; col < columns; col++) {
            Sample s = m.samples().get(col * m.samples().size() / columns);
            int capRow = row(s.capacity(), top, rows);
            int limRow = row(s.limit(), top, rows);
            grid[capRow][col] = '-';
            grid[limRow][col] = limRow == capRow ? '=' : '*';
        }
        List<String> lines = new ArrayList<>();
        lines.add("");
        lines.add("  limit (*) and partner capacity (-) over time; '=' where they meet");
        for (int r = 0; r < rows; r++) {
            long value = Math.round((double) top * (rows - 1 - r) / (rows - 1));
            lines.add(format("  %4d |%s", value, new String(grid[r])));
        }
        lines.add("       +" + "-".repeat(columns) + format(" %.0f s", m.samples().get(m.samples().size() - 1).millis() / 1e3));
        return lines;
    }

    private static int row(long value, long top, int rows) {
        return rows - 1 - (int) Math.round((double) value * (rows - 1) / top);
    }

    /**
     * The partner API: {@code capacity} calls served at once, the rest queued, in order; a caller gives up
     * after its timeout, but the partner still serves the abandoned call when its turn comes.
     */
    static final class Partner {
        private final Semaphore servers;
        private final long serviceNanos;
        private final long timeoutNanos;

        Partner(int capacity, Duration service, Duration callerTimeout) {
            this.servers = Semaphore.builder().name("partner-servers").permits(capacity).maxPermits(10_000)
                    .fairness(Fairness.FIFO).build();
            this.serviceNanos = service.toNanos();
            this.timeoutNanos = callerTimeout.toNanos();
        }

        void capacity(int capacity) {
            servers.setPermits(capacity);
        }

        boolean call() throws InterruptedException {
            CompletableFuture<Boolean> answered = new CompletableFuture<>();
            Thread.startVirtualThread(() -> {
                try (Permit server = servers.acquire()) {
                    Thread.sleep(Duration.ofNanos((long) (serviceNanos * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()))));
                    answered.complete(true);
                } catch (InterruptedException e) {
                    answered.complete(false);
                }
            });
            try {
                return answered.get(timeoutNanos, TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                return false;
            }
        }
    }
}
