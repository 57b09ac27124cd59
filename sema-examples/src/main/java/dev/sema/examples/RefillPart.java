package dev.sema.examples;

import static dev.sema.examples.Text.format;
import static dev.sema.examples.Text.millisSince;

import dev.sema.Semaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Refill at work: a partner's API allows a few calls per period, with a burst allowance. The credit is a
 * semaphore whose limit grows by {@code refill} permits every period up to its ceiling (the burst); each
 * call spends its cost with {@code acquire(cost).forget()}. A crowd of calls arrives at once: the first
 * ones spend the starting credit, the others queue and are served as credit accrues, never before.
 */
final class RefillPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param burst the starting credit and the ceiling it refills to
     * @param refill the credit added every period
     * @param period how often credit is added
     * @param calls how many calls arrive at once
     * @param maxCost the most credit one call costs (each costs 1 to this)
     * @param seed makes the costs repeatable
     */
    record Settings(int burst, int refill, Duration period, int calls, int maxCost, long seed) {
        static Settings standard() {
            return new Settings(10, 5, Duration.ofMillis(100), 40, 3, 11);
        }
    }

    /** One call: what it cost and when it had spent it, in nanoseconds after the credit was built. */
    record Spend(int call, int cost, long atNanos) {
    }

    /** What a run measured. */
    record Measured(Settings settings, int calls, List<Spend> spends, long permitsWhenIdle, long availableWhenIdle) {
        List<Check> checks() {
            long periodNanos = settings.period().toNanos();
            long spent = 0;
            long worstMargin = Long.MAX_VALUE;
            List<Spend> inOrder = spends.stream().sorted(Comparator.comparingLong(Spend::atNanos)).toList();
            for (Spend s : inOrder) {
                spent += s.cost();
                // Refills run at a fixed rate from when the semaphore was built, never early.
                long accrued = settings.burst() + settings.refill() * (s.atNanos() / periodNanos);
                worstMargin = Math.min(worstMargin, accrued - spent);
            }
            long total = spends.stream().mapToLong(Spend::cost).sum();
            return List.of(
                    new Check("no credit was spent before it had accrued",
                            worstMargin >= 0,
                            format("at every spend, credit accrued minus credit spent >= %d",
                                    worstMargin == Long.MAX_VALUE ? 0 : worstMargin)),
                    new Check("every call was served as credit arrived",
                            spends.size() == calls,
                            format("%d of %d calls, %d credits spent", spends.size(), calls, total)),
                    new Check(format("idle, the credit refilled up to its ceiling of %d", settings.burst()),
                            permitsWhenIdle == settings.burst() && availableWhenIdle == settings.burst(),
                            format("permits() %d, availablePermits() %d", permitsWhenIdle, availableWhenIdle)));
        }
    }

    private final Settings settings;
    private final Terminal terminal;

    RefillPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "refill";
    }

    @Override
    public String title() {
        return "Refill: credit that accrues over time, spent with acquire(k).forget()";
    }

    @Override
    public List<Check> run() throws Exception {
        return measure().checks();
    }

    Measured measure() throws Exception {
        Random random = new Random(settings.seed());
        List<Integer> costs = new ArrayList<>();
        for (int i = 0; i < settings.calls(); i++) {
            costs.add(1 + random.nextInt(settings.maxCost()));
        }
        int total = costs.stream().mapToInt(Integer::intValue).sum();
        terminal.println(format("Semaphore.builder().permits(%d).maxPermits(%d).refill(%d, Duration.ofMillis(%d)):"
                + " %d calls arrive at once,", settings.burst(), settings.burst(), settings.refill(),
                settings.period().toMillis(), settings.calls()));
        terminal.println(format("costing 1 to %d credits each (%d in all); each does credit.acquire(cost).forget()",
                settings.maxCost(), total));

        long built = System.nanoTime(); // before build(): refills are scheduled from build() on
        Semaphore credit = Semaphore.builder()
                .name("partner-api")
                .permits(settings.burst())
                .maxPermits(settings.burst())
                .refill(settings.refill(), settings.period())
                .build();
        ConcurrentLinkedQueue<Spend> spends = new ConcurrentLinkedQueue<>();
        long permitsWhenIdle;
        long availableWhenIdle;
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<CompletableFuture<Void>> calls = new ArrayList<>();
            for (int i = 0; i < settings.calls(); i++) {
                int call = i;
                int cost = costs.get(i);
                calls.add(CompletableFuture.runAsync(() -> {
                    try {
                        credit.acquire(cost).forget(); // spent for good: the limit drops by cost
                        spends.add(new Spend(call, cost, System.nanoTime() - built));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, threads));
            }
            long bound = settings.period().toMillis() * (total / settings.refill() + 1) + 20_000;
            try {
                CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0])).get(bound, TimeUnit.MILLISECONDS);
                terminal.println(format("  served in %d ms; credits spent per %d ms: %s", millisSince(built),
                        settings.period().toMillis(), perPeriod(spends)));
                // Idle now: the credit grows back to the burst size.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (credit.permits() < settings.burst() && System.nanoTime() - deadline < 0) {
                    Thread.sleep(settings.period()); // polls an observable state, bounded by the deadline
                }
                permitsWhenIdle = credit.permits();
                availableWhenIdle = credit.availablePermits();
                terminal.println(format("  idle, the credit refills to %d of its ceiling %d", permitsWhenIdle,
                        credit.maxPermits()));
            } finally {
                credit.close(); // stops the refills, and fails calls still queued (if any) so the executor can close
            }
        }
        return new Measured(settings, settings.calls(), List.copyOf(spends), permitsWhenIdle, availableWhenIdle);
    }

    private String perPeriod(ConcurrentLinkedQueue<Spend> spends) {
        long period = settings.period().toNanos();
        long last = spends.stream().mapToLong(s -> s.atNanos() / period).max().orElse(0);
        long[] buckets = new long[(int) last + 1];
        spends.forEach(s -> buckets[(int) (s.atNanos() / period)] += s.cost());
        return Arrays.stream(buckets).mapToObj(Long::toString).collect(Collectors.joining(" "));
    }
}
