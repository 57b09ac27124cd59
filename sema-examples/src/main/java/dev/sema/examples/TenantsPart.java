package dev.sema.examples;

import static dev.sema.examples.Text.format;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.TooManyKeysException;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Keyed semaphores at work: exports limited per tenant by a {@code KeyedSemaphore}, every tenant's exports also
 * holding the {@code batch} partition of the API's one limit (its parent). First the tenants compete, one of them
 * noisy with far more clients than the others: none gets more than its own limit, all together never more than
 * the parent's, and the quiet ones keep being served. Then a flood of distinct, made-up tenant ids: beyond
 * {@code maxKeys} they are refused at once with {@link TooManyKeysException}, and when it is over the heap is
 * back where it was, since an idle key costs nothing.
 */
final class TenantsPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param apiLimit the API's one limit, split into an interactive and a batch partition (0.5 each)
     * @param tenantLimit each tenant's limit on exports at once
     * @param maxKeys the most tenants live (exporting or waiting) at once
     * @param noisyClients closed-loop clients of the noisy tenant
     * @param quietTenants how many other tenants
     * @param quietClients closed-loop clients of each of them
     * @param work how long an export holds its permit
     * @param phase how long the tenants compete
     * @param floodThreads threads of the flood, each asking for new tenant ids one after the other
     * @param floodKeysPerThread distinct tenant ids each flood thread asks for
     * @param floodWait how long a flood request may wait
     * @param heapSlack how far above its baseline the heap may be once the flood is over
     */
    record Settings(int apiLimit, int tenantLimit, int maxKeys, int noisyClients, int quietTenants, int quietClients,
            Duration work, Duration phase, int floodThreads, int floodKeysPerThread, Duration floodWait, long heapSlack) {
        static Settings standard() {
            return new Settings(16, 3, 500, 24, 7, 3, Duration.ofMillis(4), Duration.ofMillis(2_500), 1_000, 100,
                    Duration.ofMillis(20), 4L << 20);
        }
    }

    /** One tenant's counts, kept outside the semaphores. */
    static final class Tenant {
        final String name;
        final LongAdder served = new LongAdder();
        final LongAdder timedOut = new LongAdder();
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger peak = new AtomicInteger();

        Tenant(String name) {
            this.name = name;
        }

        String row(int clients) {
            return format("  %-9s %2d clients  served %5d  most at once %d", name, clients, served.sum(), peak.get());
        }
    }

    /**
     * What the competing phase measured.
     *
     * @param tenants each tenant's counts, the noisy one first
     * @param peakTotal the most exports at once, all tenants together
     */
    record Competition(Map<String, Tenant> tenants, int peakTotal) {
    }

    /**
     * What the flood measured.
     *
     * @param asked distinct tenant ids asked for
     * @param refused refused at once with TooManyKeysException
     * @param timedOut waited for the parent and gave up
     * @param served got through
     * @param mostKeys the most live keys {@code size()} showed while it ran
     * @param heapBefore the heap in use before it, after full collections
     * @param heapAfter the same once it was over
     */
    record Flood(long asked, long refused, long timedOut, long served, int mostKeys, long heapBefore, long heapAfter) {
    }

    /**
     * The state once everything stopped.
     *
     * @param liveKeys the family's live keys
     * @param apiAvailable the API limit's free permits
     * @param apiQueued requests still queued on the API limit
     */
    record After(int liveKeys, long apiAvailable, int apiQueued) {
    }

    private final Settings settings;
    private final Terminal terminal;

    TenantsPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "tenants";
    }

    @Override
    public String title() {
        return "Keyed semaphores: a limit per tenant under a shared parent, and a flood of tenant ids refused";
    }

    @Override
    public List<Check> run() throws Exception {
        Semaphore api = Semaphore.builder().name("api").permits(settings.apiLimit())
                .partition("interactive", 0.5).partition("batch", 0.5).build();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports")
                .permits(settings.tenantLimit()).maxKeys(settings.maxKeys()).parent(api.partition("batch")).build();
        terminal.println(format("KeyedSemaphore.<String>builder().name(\"exports\").permits(%d).maxKeys(%d)"
                + ".parent(api.partition(\"batch\")), api a Semaphore of %d; each export holds its permits %d ms",
                settings.tenantLimit(), settings.maxKeys(), settings.apiLimit(), settings.work().toMillis()));

        terminal.println(format("tenants competing: acme with %d clients, %d other tenants with %d each",
                settings.noisyClients(), settings.quietTenants(), settings.quietClients()));
        Map<String, Integer> clients = new LinkedHashMap<>();
        clients.put("acme", settings.noisyClients());
        String[] quiet = {"globex", "initech", "umbrella", "hooli", "soylent", "wonka", "stark", "wayne", "tyrell"};
        for (int i = 0; i < settings.quietTenants(); i++) {
            clients.put(i < quiet.length ? quiet[i] : "tenant-" + i, settings.quietClients());
        }
        Competition competition = compete(exports, clients);
        competition.tenants().values().forEach(t -> terminal.println(t.row(clients.get(t.name))));
        terminal.println(format("  all tenants together: most at once %d (the parent's limit %d)",
                competition.peakTotal(), settings.apiLimit()));

        terminal.println(format("a flood: %,d distinct tenant ids from %,d threads, each waiting at most %d ms",
                (long) settings.floodThreads() * settings.floodKeysPerThread(), settings.floodThreads(),
                settings.floodWait().toMillis()));
        Flood flood = flood(exports);
        terminal.println(format("  refused at once (TooManyKeysException) %,d, timed out %,d, served %,d; most live keys"
                + " sampled %d (maxKeys %d)", flood.refused(), flood.timedOut(), flood.served(), flood.mostKeys(),
                settings.maxKeys()));
        terminal.println(format("  heap in use before the flood %.1f MB, after it %.1f MB", flood.heapBefore() / 1048576.0,
                flood.heapAfter() / 1048576.0));
        After after = new After(exports.size(), api.availablePermits(), api.queueLength());
        exports.close();
        return checks(settings, competition, flood, after);
    }

    /** The promises, from what was measured. */
    static List<Check> checks(Settings s, Competition competition, Flood flood, After after) {
        Tenant noisy = competition.tenants().get("acme");
        int mostOfOne = competition.tenants().values().stream().mapToInt(t -> t.peak.get()).max().orElse(0);
        List<Tenant> quiet = competition.tenants().values().stream().filter(t -> t != noisy).toList();
        long quietServed = quiet.stream().filter(t -> t.served.sum() > 0).count();
        long growth = flood.heapAfter() - flood.heapBefore();
        return List.of(
                new Check(format("never more than a tenant's limit of %d at once", s.tenantLimit()),
                        mostOfOne <= s.tenantLimit(), format("most at once for one tenant: %d (acme, %d clients: %d)",
                                mostOfOne, s.noisyClients(), noisy.peak.get())),
                new Check(format("never more than the parent's limit of %d, all tenants together", s.apiLimit()),
                        competition.peakTotal() <= s.apiLimit(), format("most at once: %d", competition.peakTotal())),
                new Check("the noisy tenant was held to its limit, and every other tenant was served",
                        noisy.peak.get() == s.tenantLimit() && quietServed == quiet.size() && !quiet.isEmpty(),
                        format("acme most at once %d; %d of %d other tenants served, fewest %d", noisy.peak.get(),
                                quietServed, quiet.size(), quiet.stream().mapToLong(t -> t.served.sum()).min().orElse(0))),
                // Not checked against maxKeys: size() counts a request that is being refused for an instant (it
                // reads the bound's counter, raised before the check and lowered on refusal), so a sample may see
                // maxKeys + 1. The memory check below is what shows that the refused keys were never kept.
                new Check(format("the flood of tenant ids was refused beyond maxKeys %d", s.maxKeys()),
                        flood.refused() > 0,
                        format("%,d of %,d refused with TooManyKeysException; most live keys sampled %d", flood.refused(),
                                flood.asked(), flood.mostKeys())),
                new Check(format("the heap came back near its baseline (within %d MB)", s.heapSlack() >> 20),
                        growth <= s.heapSlack() && after.liveKeys() == 0,
                        format("%+.2f MB after %,d tenant ids; %d live keys", growth / 1048576.0, flood.asked(),
                                after.liveKeys())),
                new Check("every permit came back, every queue emptied",
                        after.apiAvailable() == s.apiLimit() && after.apiQueued() == 0 && after.liveKeys() == 0,
                        format("api available %d of %d, queued %d; live keys %d", after.apiAvailable(), s.apiLimit(),
                                after.apiQueued(), after.liveKeys())));
    }

    /** Closed-loop clients per tenant for one phase, counted outside the semaphores. */
    private Competition compete(KeyedSemaphore<String> exports, Map<String, Integer> clients)
            throws InterruptedException {
        Map<String, Tenant> tenants = new LinkedHashMap<>();
        AtomicInteger total = new AtomicInteger();
        AtomicInteger peakTotal = new AtomicInteger();
        long stopAt = System.nanoTime() + settings.phase().toNanos();
        Duration maxWait = Duration.ofSeconds(2);
        List<Thread> threads = new ArrayList<>();
        for (Map.Entry<String, Integer> e : clients.entrySet()) {
            Tenant t = new Tenant(e.getKey());
            tenants.put(e.getKey(), t);
            Semaphore tenant = exports.get(e.getKey());
            for (int i = 0; i < e.getValue(); i++) {
                threads.add(Thread.ofVirtual().start(() -> {
                    while (System.nanoTime() - stopAt < 0) {
                        try (Permit p = tenant.acquire(1, maxWait)) {
                            t.peak.accumulateAndGet(t.inFlight.incrementAndGet(), Math::max);
                            peakTotal.accumulateAndGet(total.incrementAndGet(), Math::max);
                            LockSupport.parkNanos(settings.work().toNanos()); // the export's work
                            total.decrementAndGet();
                            t.inFlight.decrementAndGet();
                            t.served.increment();
                        } catch (TimeoutException slow) {
                            t.timedOut.increment();
                        } catch (InterruptedException stop) {
                            return;
                        }
                    }
                }));
            }
        }
        for (Thread thread : threads) {
            if (!thread.join(settings.phase().plus(maxWait).plusSeconds(20))) {
                throw new IllegalStateException("a client of " + exports.name() + " did not stop");
            }
        }
        return new Competition(tenants, peakTotal.get());
    }

    /** Distinct made-up tenant ids, each asked for once; the live keys sampled meanwhile. */
    private Flood flood(KeyedSemaphore<String> exports) throws InterruptedException {
        long before = usedHeap();
        LongAdder refused = new LongAdder();
        LongAdder timedOut = new LongAdder();
        LongAdder served = new LongAdder();
        AtomicInteger mostKeys = new AtomicInteger();
        AtomicLong running = new AtomicLong(settings.floodThreads());
        Thread sampler = Thread.ofPlatform().daemon().start(() -> {
            while (running.get() > 0) {
                mostKeys.accumulateAndGet(exports.size(), Math::max);
                LockSupport.parkNanos(200_000);
            }
        });
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < settings.floodThreads(); t++) {
            int thread = t;
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    for (int i = 0; i < settings.floodKeysPerThread(); i++) {
                        String id = "flood-" + thread + "-" + i;
                        try (Permit p = exports.get(id).acquire(1, settings.floodWait())) {
                            LockSupport.parkNanos(settings.work().toNanos());
                            served.increment();
                        } catch (TooManyKeysException full) {
                            refused.increment();
                            LockSupport.parkNanos(1_000_000); // a refused client backs off briefly
                        } catch (TimeoutException slow) {
                            timedOut.increment();
                        }
                    }
                } catch (InterruptedException stop) {
                    Thread.currentThread().interrupt();
                } finally {
                    running.decrementAndGet();
                }
            }));
        }
        for (Thread thread : threads) {
            if (!thread.join(Duration.ofSeconds(120))) {
                throw new IllegalStateException("a flood thread did not stop");
            }
        }
        sampler.join();
        mostKeys.accumulateAndGet(exports.size(), Math::max);
        threads.clear();
        long after = usedHeap();
        return new Flood((long) settings.floodThreads() * settings.floodKeysPerThread(), refused.sum(), timedOut.sum(),
                served.sum(), mostKeys.get(), before, after);
    }

    /** The heap in use after full collections: the least of three. */
    static long usedHeap() {
        var memory = ManagementFactory.getMemoryMXBean();
        long least = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            least = Math.min(least, memory.getHeapMemoryUsage().getUsed());
        }
        return least;
    }

    /** For the tests: the settings of a short run. */
    static Settings quick() {
        return new Settings(16, 3, 200, 24, 7, 3, Duration.ofMillis(4), Duration.ofMillis(600), 500, 20,
                Duration.ofMillis(20), 4L << 20);
    }
}
