package dev.sema.bench.keyed;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.TooManyKeysException;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.bulkhead.BulkheadRegistry;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * What a per-key limit costs in memory under a flood of distinct keys, and whether it holds its limit when
 * keys come and go: Sema's {@link KeyedSemaphore} against the two ways it is usually done, Resilience4j's
 * {@code BulkheadRegistry} (one bulkhead per key) and a Caffeine cache of {@code java.util.concurrent.Semaphore}
 * with {@code expireAfterAccess}.
 *
 * <p><b>Flood.</b> One thread asks each of N distinct keys ({@code "tenant-<i>"}) for one permit and releases
 * it at once, through each contender in turn, in one JVM. The heap is measured the same way for every
 * contender: {@code System.gc()} three times, the least {@code MemoryMXBean} heap used of the three, before the
 * contender is built (its baseline) and after the flood, with the contender still reachable (it is the long-lived
 * object of a service), after a discarded warm-up flood of each. For the cache also after its expiry passed and {@code cleanUp()} ran. The registry keeps
 * every bulkhead it made, so it is flooded with fewer keys and its figure for N is extrapolated per key.
 *
 * <p><b>Held.</b> The keys are held instead of released, through a family with {@code maxKeys} 100,000: the
 * first 100,000 keys are granted, every later one refused with {@link TooManyKeysException}. The heap while they
 * are held, and after they are all released.
 *
 * <p><b>Race.</b> Many threads on few keys, each with a limit: a thread gets its key's semaphore, acquires it,
 * counts itself in a per-key counter kept outside the semaphores, holds it for a while, counts itself out and
 * releases. For the cache, entries expire after less than a holding time, so a key's entry can expire while
 * its semaphore is held, and the next request for the key gets a second semaphore: more holders than the
 * limit. Reported: how many grants found more than the limit held for their key. The same test through
 * {@code KeyedSemaphore}, whose idle keys are removed too, must never exceed it (exit status 1 if it did).
 *
 * <p>Modes: {@code full} 10,000,000 keys (the registry 1,000,000), 5 s per race; {@code quick} 1,000,000
 * (registry 200,000), 2 s; {@code smoke} 100,000 (registry 20,000; 150,000 held), 0.5 s. Run with a fixed heap and the
 * parallel collector, as {@code bin/benchmarks keyed} does: {@code java -XX:+UseParallelGC -Xms4g -Xmx4g -cp
 * sema-benchmarks/target/benchmarks.jar dev.sema.bench.keyed.KeyedFlood [full|quick|smoke] [--out file.md]}.
 */
public final class KeyedFlood {
    static final int MAX_KEYS = 100_000;
    static final int LIMIT = 2;
    static final Duration EXPIRY = Duration.ofSeconds(1);
    static final int RACE_THREADS = 16;
    static final int RACE_KEYS = 4;
    static final long RACE_HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    static final Duration RACE_EXPIRY = Duration.ofMillis(1);

    record Settings(String mode, int keys, int registryKeys, int heldKeys, Duration race) {
        static Settings of(String mode) {
            return switch (mode) {
                case "full" -> new Settings(mode, 10_000_000, 1_000_000, 10_000_000, Duration.ofSeconds(5));
                case "smoke" -> new Settings(mode, 100_000, 20_000, 150_000, Duration.ofMillis(500));
                default -> new Settings("quick", 1_000_000, 200_000, 1_000_000, Duration.ofSeconds(2));
            };
        }
    }

    /** A flood's figures; {@code afterExpiry} -1 where it does not apply. */
    record Flood(String contender, int keys, long nanos, long before, long after, long afterExpiry, long liveAfter,
            String liveUnit) {
        long retained() {
            return after - before;
        }
    }

    record Held(int attempted, int held, long refused, long before, long whileHeld, long afterRelease, int sizeHeld,
            int sizeAfter) {
    }

    record Race(String contender, long grants, long over, int most, long semaphoresMade, Duration length) {
    }

    /** One contender's request for a key, handing back what releases it. */
    @FunctionalInterface
    interface Acquirer {
        AutoCloseable acquire(String key) throws InterruptedException;
    }

    private KeyedFlood() {
    }

    public static void main(String[] args) throws Exception {
        String mode = "quick";
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "quick", "full", "smoke" -> mode = args[i];
                case "--out" -> out = Path.of(args[++i]);
                default -> {
                    System.err.println("usage: KeyedFlood [full|quick|smoke] [--out file.md]");
                    System.exit(2);
                }
            }
        }
        Settings s = Settings.of(mode);
        // Discarded: each contender's paths compiled before any is measured, so that going first costs nothing.
        int warm = Math.min(s.keys(), 200_000);
        floodSema(warm);
        floodCaffeine(warm);
        floodRegistry(Math.min(warm, s.registryKeys()));
        List<Flood> floods = new ArrayList<>();
        floods.add(floodSema(s.keys()));
        log(floods.getLast());
        floods.add(floodCaffeine(s.keys()));
        log(floods.getLast());
        floods.add(floodRegistry(s.registryKeys()));
        log(floods.getLast());
        Held held = held(s.heldKeys());
        System.err.printf(Locale.ROOT, "held: %s%n", held);
        Race cache = raceCaffeine(s.race());
        System.err.printf(Locale.ROOT, "race: %s%n", cache);
        Race sema = raceSema(s.race());
        System.err.printf(Locale.ROOT, "race: %s%n", sema);

        String report = report(s, floods, held, cache, sema);
        System.out.println(report);
        if (out != null) {
            Files.writeString(out, report);
        }
        boolean broken = sema.over() > 0 || floods.getFirst().liveAfter() != 0 || held.held() > MAX_KEYS
                || held.sizeAfter() != 0;
        if (broken) {
            System.err.println("SEMA BROKE A PROMISE: over its limit " + sema.over() + " times; live keys after the flood "
                    + floods.getFirst().liveAfter() + "; held " + held.held() + " (maxKeys " + MAX_KEYS + "), live after "
                    + "release " + held.sizeAfter());
            System.exit(1);
        }
    }

    private static void log(Flood f) {
        System.err.printf(Locale.ROOT, "flood: %-40s %,d keys in %.1f s, retained %s (after expiry %s), live after %d%n",
                f.contender(), f.keys(), f.nanos() / 1e9, bytes(f.retained()),
                f.afterExpiry() < 0 ? "-" : bytes(f.afterExpiry() - f.before()), f.liveAfter());
    }

    // ---------------------------------------------------------------- heap

    /** The heap in use after full collections: the least of three, measured the same way for every contender. */
    static long usedHeap() {
        var memory = ManagementFactory.getMemoryMXBean();
        long least = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            least = Math.min(least, memory.getHeapMemoryUsage().getUsed());
        }
        return least;
    }

    static String key(int i) {
        return "tenant-" + i;
    }

    // ---------------------------------------------------------------- floods

    static Flood floodSema(int keys) throws InterruptedException {
        long before = usedHeap();
        KeyedSemaphore<String> family = KeyedSemaphore.<String>builder().name("flood").permits(LIMIT)
                .maxKeys(MAX_KEYS).build();
        long t0 = System.nanoTime();
        for (int i = 0; i < keys; i++) {
            try (Permit p = family.get(key(i)).acquire()) {
                // the request's work
            }
        }
        long nanos = System.nanoTime() - t0;
        long after = usedHeap();
        int live = family.size();
        Reference.reachabilityFence(family);
        return new Flood("Sema `KeyedSemaphore` (maxKeys 100,000)", keys, nanos, before, after, -1, live, "live keys");
    }

    static Flood floodCaffeine(int keys) throws InterruptedException {
        long before = usedHeap();
        Cache<String, java.util.concurrent.Semaphore> cache = Caffeine.newBuilder().expireAfterAccess(EXPIRY).build();
        long t0 = System.nanoTime();
        for (int i = 0; i < keys; i++) {
            java.util.concurrent.Semaphore s = cache.get(key(i), k -> new java.util.concurrent.Semaphore(LIMIT));
            s.acquire();
            s.release();
        }
        long nanos = System.nanoTime() - t0;
        long after = usedHeap();
        Thread.sleep(EXPIRY.plusMillis(200));
        cache.cleanUp();
        long afterExpiry = usedHeap();
        long live = cache.estimatedSize();
        Reference.reachabilityFence(cache);
        return new Flood("Caffeine cache of JDK `Semaphore`, expireAfterAccess 1 s", keys, nanos, before, after,
                afterExpiry, live, "entries");
    }

    static Flood floodRegistry(int keys) {
        long before = usedHeap();
        BulkheadRegistry registry = BulkheadRegistry.of(BulkheadConfig.custom().maxConcurrentCalls(LIMIT)
                .maxWaitDuration(Duration.ZERO).build());
        long t0 = System.nanoTime();
        for (int i = 0; i < keys; i++) {
            Bulkhead b = registry.bulkhead(key(i));
            if (!b.tryAcquirePermission()) {
                throw new IllegalStateException("bulkhead " + key(i) + " refused its first call");
            }
            b.onComplete();
        }
        long nanos = System.nanoTime() - t0;
        long after = usedHeap();
        long live = registry.getAllBulkheads().size();
        Reference.reachabilityFence(registry);
        return new Flood("Resilience4j `BulkheadRegistry`, one bulkhead per key", keys, nanos, before, after, -1, live,
                "bulkheads");
    }

    static Held held(int keys) throws InterruptedException {
        long before = usedHeap();
        KeyedSemaphore<String> family = KeyedSemaphore.<String>builder().name("held").permits(LIMIT)
                .maxKeys(MAX_KEYS).build();
        ArrayList<Permit> permits = new ArrayList<>(MAX_KEYS);
        long refused = 0;
        for (int i = 0; i < keys; i++) {
            try {
                permits.add(family.get(key(i)).acquire());
            } catch (TooManyKeysException full) {
                refused++;
            }
        }
        int sizeHeld = family.size();
        long whileHeld = usedHeap();
        int held = permits.size();
        permits.forEach(Permit::close);
        permits.clear();
        permits.trimToSize(); // the list is the test's, not the family's
        long afterRelease = usedHeap();
        int sizeAfter = family.size();
        Reference.reachabilityFence(family);
        return new Held(keys, held, refused, before, whileHeld, afterRelease, sizeHeld, sizeAfter);
    }

    // ---------------------------------------------------------------- races

    static Race raceCaffeine(Duration length) throws InterruptedException {
        AtomicLong made = new AtomicLong();
        Cache<String, java.util.concurrent.Semaphore> cache = Caffeine.newBuilder().expireAfterAccess(RACE_EXPIRY)
                .build();
        return race("Caffeine cache of JDK `Semaphore`, expireAfterAccess 1 ms", length, made, key -> {
            java.util.concurrent.Semaphore s = cache.get(key, k -> {
                made.incrementAndGet();
                return new java.util.concurrent.Semaphore(LIMIT, true);
            });
            s.acquire();
            return s::release;
        });
    }

    static Race raceSema(Duration length) throws InterruptedException {
        KeyedSemaphore<String> family = KeyedSemaphore.<String>builder().name("race").permits(LIMIT).build();
        Race r = race("Sema `KeyedSemaphore` (idle keys removed at once)", length, null,
                key -> family.get(key).acquire());
        if (family.size() != 0) {
            throw new IllegalStateException("keys still live after the race: " + family.size());
        }
        return r;
    }

    /** {@value #RACE_THREADS} threads on {@value #RACE_KEYS} keys of limit {@value #LIMIT}, each holding 2 ms. */
    static Race race(String contender, Duration length, AtomicLong made, Acquirer acquirer) throws InterruptedException {
        AtomicInteger[] holders = new AtomicInteger[RACE_KEYS];
        for (int k = 0; k < RACE_KEYS; k++) {
            holders[k] = new AtomicInteger();
        }
        LongAdder grants = new LongAdder();
        LongAdder over = new LongAdder();
        AtomicInteger most = new AtomicInteger();
        long end = System.nanoTime() + length.toNanos();
        List<Thread> threads = new ArrayList<>();
        AtomicLong failures = new AtomicLong();
        for (int t = 0; t < RACE_THREADS; t++) {
            int k = t % RACE_KEYS;
            String key = "hot-" + k;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    while (System.nanoTime() - end < 0) {
                        AutoCloseable release = acquirer.acquire(key);
                        try {
                            int now = holders[k].incrementAndGet();
                            grants.increment();
                            if (now > LIMIT) {
                                over.increment();
                            }
                            most.accumulateAndGet(now, Math::max);
                            LockSupport.parkNanos(RACE_HOLD_NANOS);
                            holders[k].decrementAndGet();
                        } finally {
                            release.close();
                        }
                    }
                } catch (Exception e) {
                    failures.incrementAndGet();
                    e.printStackTrace();
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failures.get() != 0) {
            throw new IllegalStateException(failures.get() + " race threads failed");
        }
        return new Race(contender, grants.sum(), over.sum(), most.get(), made == null ? -1 : made.get(), length);
    }

    // ---------------------------------------------------------------- report

    static String report(Settings s, List<Flood> floods, Held held, Race cache, Race sema) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "### A flood of %,d distinct keys%n%n", s.keys()));
        b.append(String.format(Locale.ROOT, "Mode %s. One thread, each key asked for one permit (each key's limit %d) and "
                + "released at once. *Heap*: the least `MemoryMXBean` heap used after each of three `System.gc()` (parallel "
                + "collector, fixed heap), the same for every contender; *retained*: after the flood, with the contender "
                + "still reachable, minus its baseline taken just before it was built. The registry never drops a "
                + "bulkhead, so it was flooded with %,d keys and its line for %,d is that per key times %,d.%n%n",
                s.mode(), LIMIT, s.registryKeys(), s.keys(), s.keys()));
        b.append("| contender | keys | time | keys/s | baseline heap | retained after the flood | retained after expiry "
                + "+ `cleanUp()` | left after the flood | per key seen |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Flood f : floods) {
            b.append(String.format(Locale.ROOT, "| %s | %,d | %.1f s | %,.0f | %s | **%s** | %s | %,d %s | %s |%n",
                    f.contender(), f.keys(), f.nanos() / 1e9, f.keys() / (f.nanos() / 1e9), bytes(f.before()),
                    bytes(f.retained()), f.afterExpiry() < 0 ? "-" : bytes(f.afterExpiry() - f.before()), f.liveAfter(),
                    f.liveUnit(), perKey(f.retained(), f.keys())));
            if (f.keys() < s.keys()) {
                b.append(String.format(Locale.ROOT, "| ↳ extrapolated to %,d keys | %,d | | | | %s | - | %,d %s | |%n",
                        s.keys(), s.keys(), bytes(Math.round((double) f.retained() / f.keys() * s.keys())), s.keys(),
                        f.liveUnit()));
            }
        }
        b.append(String.format(Locale.ROOT, "%n### Held: %,d distinct keys held, through maxKeys %,d%n%n", held.attempted(),
                MAX_KEYS));
        b.append("Each key acquired and kept; a key beyond maxKeys is refused at once with `TooManyKeysException`. "
                + "Then every permit released.\n\n");
        b.append("| keys asked | held | refused (`TooManyKeysException`) | live keys while held | retained while held "
                + "| per held key | live keys after release | retained after release |\n");
        b.append("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        b.append(String.format(Locale.ROOT, "| %,d | %,d | %,d | %,d | %s | %s | %,d | **%s** |%n", held.attempted(),
                held.held(), held.refused(), held.sizeHeld(), bytes(held.whileHeld() - held.before()),
                perKey(held.whileHeld() - held.before(), held.held()), held.sizeAfter(),
                bytes(held.afterRelease() - held.before())));
        b.append(String.format(Locale.ROOT, "%n### Race: %d threads on %d keys of limit %d, each holding %d ms%n%n",
                RACE_THREADS, RACE_KEYS, LIMIT, TimeUnit.NANOSECONDS.toMillis(RACE_HOLD_NANOS)));
        b.append(String.format(Locale.ROOT, "Each thread in a loop: its key's semaphore, acquire, count itself in a "
                + "per-key counter outside the semaphores, hold %d ms, count itself out, release; %.1f s per contender. "
                + "The cache's entries expire %d ms after their last access, so an entry can expire while its "
                + "semaphore is held. *Over the limit*: grants that found more than %d holders of their key "
                + "(themselves included).%n%n", TimeUnit.NANOSECONDS.toMillis(RACE_HOLD_NANOS),
                s.race().toNanos() / 1e9, RACE_EXPIRY.toMillis(), LIMIT));
        b.append("| contender | grants | over the limit | of grants | most holders of one key | semaphores made |\n");
        b.append("|---|---:|---:|---:|---:|---:|\n");
        for (Race r : List.of(cache, sema)) {
            b.append(String.format(Locale.ROOT, "| %s | %,d | **%,d** | %.2f%% | %d (limit %d) | %s |%n", r.contender(),
                    r.grants(), r.over(), r.grants() == 0 ? 0 : 100.0 * r.over() / r.grants(), r.most(), LIMIT,
                    r.semaphoresMade() < 0 ? "-" : String.format(Locale.ROOT, "%,d for %d keys", r.semaphoresMade(),
                            RACE_KEYS)));
        }
        Flood sf = floods.getFirst();
        b.append("\n### Targets (memory and limit)\n\n| target | measured | met |\n|---|---|---|\n");
        b.append(String.format(Locale.ROOT, "| Sema: heap after a flood of %,d keys within 1 MB of the baseline | "
                + "%s retained, %d live keys | %s |%n", sf.keys(), bytes(sf.retained()), sf.liveAfter(),
                sf.retained() <= (1 << 20) ? "met" : "**not met**"));
        b.append(String.format(Locale.ROOT, "| Sema: maxKeys refuses what is beyond it | %,d held, %,d refused of %,d | "
                + "%s |%n", held.held(), held.refused(), held.attempted(),
                held.held() == Math.min(MAX_KEYS, held.attempted()) && held.refused() == held.attempted() - held.held()
                        ? "met" : "**not met**"));
        b.append(String.format(Locale.ROOT, "| Sema never more than a key's limit held (race) | %,d grants, %,d over, "
                + "most %d | %s |%n", sema.grants(), sema.over(), sema.most(), sema.over() == 0 ? "met" : "**not met**"));
        return b.toString();
    }

    static String perKey(long bytes, long keys) {
        return keys == 0 ? "-" : String.format(Locale.ROOT, "%.1f B", (double) bytes / keys);
    }

    static String bytes(long b) {
        double a = Math.abs(b);
        if (a < 10_000) {
            return String.format(Locale.ROOT, "%,d B", b);
        }
        if (a < 10_000_000) {
            return String.format(Locale.ROOT, "%.1f KB", b / 1024.0);
        }
        return String.format(Locale.ROOT, "%,.1f MB", b / (1024.0 * 1024));
    }
}
