package dev.sema.examples;

import static dev.sema.examples.Text.format;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Partitions at work: one limit in front of a downstream, shared by checkout, browse and batch traffic with
 * shares 0.6, 0.3 and 0.1, in that order of priority. First batch runs alone and may use the whole limit;
 * then batch floods in at many times its share while checkout and browse keep their usual load: checkout
 * keeps getting through at once, batch waits and is shed when its short deadline passes. The same load on
 * one flat semaphore is shown beside it, where checkout queues behind batch.
 */
final class PrioritiesPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param limit the downstream's capacity, the one limit
     * @param checkoutClients closed-loop checkout clients (within checkout's guarantee)
     * @param browseClients closed-loop browse clients
     * @param batchClients closed-loop batch clients: far more than batch's share
     * @param work how long the downstream takes per request
     * @param batchWait how long a batch request may wait for a permit before it is shed
     * @param interactiveWait how long a checkout or browse request may wait
     * @param phase how long each phase runs
     */
    record Settings(int limit, int checkoutClients, int browseClients, int batchClients, Duration work,
            Duration batchWait, Duration interactiveWait, Duration phase) {
        static Settings standard() {
            return new Settings(16, 8, 4, 64, Duration.ofMillis(4), Duration.ofMillis(20), Duration.ofSeconds(2),
                    Duration.ofMillis(2_500));
        }
    }

    /** One class of traffic's counts in one phase. */
    static final class Traffic {
        final String name;
        final LongAdder served = new LongAdder();
        final LongAdder refused = new LongAdder();
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger peak = new AtomicInteger();
        final List<Long> waits = java.util.Collections.synchronizedList(new ArrayList<>());

        Traffic(String name) {
            this.name = name;
        }

        long percentileMicros(double p) {
            long[] w;
            synchronized (waits) {
                w = waits.stream().mapToLong(Long::longValue).toArray();
            }
            if (w.length == 0) {
                return 0;
            }
            Arrays.sort(w);
            return w[Math.min(w.length - 1, (int) Math.ceil(p * w.length) - 1)] / 1_000;
        }

        String row() {
            return format("  %-9s served %6d  shed %6d  wait p50 %6d µs  p99 %7d µs  most at once %3d", name,
                    served.sum(), refused.sum(), percentileMicros(0.50), percentileMicros(0.99), peak.get());
        }
    }

    /** What a phase measured. */
    record Phase(Map<String, Traffic> traffic, int peakTotal, long availableAfter, int queuedAfter) {
        Traffic get(String name) {
            return traffic.get(name);
        }
    }

    private final Settings settings;
    private final Terminal terminal;

    PrioritiesPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "priorities";
    }

    @Override
    public String title() {
        return "Partitions: checkout keeps its share while batch floods in, and batch alone may use everything";
    }

    @Override
    public List<Check> run() throws Exception {
        int limit = settings.limit();
        terminal.println(format("Semaphore.builder().permits(%d).partition(\"checkout\", 0.6).partition(\"browse\", 0.3)"
                + ".partition(\"batch\", 0.1): guarantees 9, 4 and 1; each request holds a permit %d ms", limit,
                settings.work().toMillis()));

        terminal.println(format("batch alone, %d clients:", settings.batchClients()));
        Phase alone = runPhase(partitioned(), Map.of("batch", settings.batchClients()));
        terminal.println(alone.get("batch").row());

        terminal.println(format("overload: checkout %d clients, browse %d, batch %d (batch may wait %d ms, the others %d ms)",
                settings.checkoutClients(), settings.browseClients(), settings.batchClients(),
                settings.batchWait().toMillis(), settings.interactiveWait().toMillis()));
        Map<String, Integer> mix = new LinkedHashMap<>();
        mix.put("checkout", settings.checkoutClients());
        mix.put("browse", settings.browseClients());
        mix.put("batch", settings.batchClients());
        Semaphore api = partitioned();
        Phase overload = runPhase(api, mix);
        overload.traffic().values().forEach(t -> terminal.println(t.row()));

        terminal.println("the same load on one flat semaphore of the same limit, for comparison:");
        Phase flat = runPhase(Semaphore.builder().name("flat").permits(limit).build(), mix);
        flat.traffic().values().forEach(t -> terminal.println(t.row()));

        return checks(limit, alone, overload);
    }

    /** The promises, from what the batch-alone and overload phases measured. */
    static List<Check> checks(int limit, Phase alone, Phase overload) {
        Traffic checkout = overload.get("checkout");
        Traffic batch = overload.get("batch");
        return List.of(
                new Check(format("never more than the limit of %d in flight, all partitions together", limit),
                        alone.peakTotal() <= limit && overload.peakTotal() <= limit,
                        format("most at once: %d alone, %d under overload", alone.peakTotal(), overload.peakTotal())),
                new Check("batch alone used the whole limit (work-conserving)",
                        alone.get("batch").peak.get() == limit,
                        format("batch ran %d at once of %d, its guarantee being 1", alone.get("batch").peak.get(), limit)),
                new Check("under overload checkout was never shed",
                        checkout.refused.sum() == 0 && checkout.served.sum() > 0,
                        format("checkout served %d, shed %d; p99 wait %d µs", checkout.served.sum(),
                                checkout.refused.sum(), checkout.percentileMicros(0.99))),
                new Check("batch, far over its share, was the traffic shed",
                        batch.refused.sum() > 0,
                        format("batch served %d, shed %d", batch.served.sum(), batch.refused.sum())),
                new Check("every permit came back, every queue emptied",
                        overload.availableAfter() == limit && overload.queuedAfter() == 0
                                && alone.availableAfter() == limit && alone.queuedAfter() == 0,
                        format("available %d of %d, queued %d", overload.availableAfter(), limit, overload.queuedAfter())));
    }

    private Semaphore partitioned() {
        return Semaphore.builder().name("api").permits(settings.limit())
                .partition("checkout", 0.6).partition("browse", 0.3).partition("batch", 0.1).build();
    }

    /** Runs closed-loop clients of each class for one phase against {@code semaphore}. */
    private Phase runPhase(Semaphore semaphore, Map<String, Integer> clients) throws InterruptedException {
        Map<String, Traffic> traffic = new LinkedHashMap<>();
        AtomicInteger total = new AtomicInteger();
        AtomicInteger peakTotal = new AtomicInteger();
        AtomicLong stopAt = new AtomicLong(System.nanoTime() + settings.phase().toNanos());
        List<Thread> threads = new ArrayList<>();
        for (Map.Entry<String, Integer> e : clients.entrySet()) {
            Traffic t = new Traffic(e.getKey());
            traffic.put(e.getKey(), t);
            Semaphore target = semaphore.partitionNames().isEmpty() ? semaphore : semaphore.partition(e.getKey());
            Duration maxWait = e.getKey().equals("batch") ? settings.batchWait() : settings.interactiveWait();
            for (int i = 0; i < e.getValue(); i++) {
                threads.add(Thread.ofVirtual().start(() -> {
                    while (System.nanoTime() - stopAt.get() < 0) {
                        long asked = System.nanoTime();
                        try (Permit p = target.acquire(1, maxWait)) {
                            t.waits.add(System.nanoTime() - asked);
                            t.peak.accumulateAndGet(t.inFlight.incrementAndGet(), Math::max);
                            peakTotal.accumulateAndGet(total.incrementAndGet(), Math::max);
                            LockSupport.parkNanos(settings.work().toNanos()); // the downstream's work
                            total.decrementAndGet();
                            t.inFlight.decrementAndGet();
                            t.served.increment();
                        } catch (TimeoutException shed) {
                            t.refused.increment();
                            LockSupport.parkNanos(settings.work().toNanos()); // a shed client backs off briefly
                        } catch (InterruptedException stop) {
                            return;
                        }
                    }
                }));
            }
        }
        for (Thread thread : threads) {
            if (!thread.join(settings.phase().plus(settings.interactiveWait()).plusSeconds(20))) {
                throw new IllegalStateException("a client of " + semaphore.name() + " did not stop");
            }
        }
        return new Phase(traffic, peakTotal.get(), semaphore.availablePermits(), semaphore.queueLength());
    }

    /** For the tests: the settings of a short run. */
    static Settings quick() {
        return new Settings(16, 8, 4, 64, Duration.ofMillis(4), Duration.ofMillis(20), Duration.ofSeconds(2),
                Duration.ofMillis(600));
    }
}
