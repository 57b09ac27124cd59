package dev.sema.bench.keyed;

import dev.sema.Fairness;
import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * Benchmark 15, a keyed semaphore's request on the users' path, {@code family.get(key).acquire()} and the
 * Permit's {@code close()}, one thread, against a plain semaphore's acquire + release:
 * <ul>
 *   <li>{@code liveKey}: the key stays live for the whole run (another permit of it is held from set-up to
 *       tear-down), so every request finds the key's semaphore in the map;
 *   <li>{@code freshKey}: nothing else holds the key, so every request creates its semaphore and its release
 *       removes it again (the cost of a key seen once);
 *   <li>{@code plainSema}: a Sema {@code Semaphore} (FIFO, as each key's is), the target's baseline;
 *   <li>{@code plainJdk}: {@code java.util.concurrent.Semaphore}, non-fair, for context.
 * </ul>
 * The target: {@code liveKey} at most 1.5 times {@code plainSema}'s time. Each iteration checks that every
 * permit came back and that only the held key is live.
 *
 * <p>Run: {@code bin/benchmarks keyed} (section 15), or
 * {@code java -jar sema-benchmarks/target/benchmarks.jar KeyedBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class KeyedBenchmark {
    /** Each key's limit: 1 held for good on the live key, 1 for the measured request. */
    static final int LIMIT = 2;

    private KeyedSemaphore<String> family;
    private Permit keepAlive;
    private Semaphore plain;
    private java.util.concurrent.Semaphore jdk;
    /** Fields, not constants: the keys are looked up as a user's would be. */
    private String liveKey = "tenant-live";
    private String freshKey = "tenant-fresh";

    /**
     * A fresh family with the live key held, and fresh plain semaphores.
     *
     * @throws InterruptedException never: the permit is free
     */
    @Setup(Level.Iteration)
    public void setUp() throws InterruptedException {
        family = KeyedSemaphore.<String>builder().name("bench").permits(LIMIT).maxKeys(100_000).build();
        keepAlive = family.get(liveKey).acquire();
        plain = Semaphore.builder().permits(1).maxPermits(1).fairness(Fairness.FIFO).build();
        jdk = new java.util.concurrent.Semaphore(1, false);
    }

    /** Fails the run if a permit went missing or a key stayed live. */
    @TearDown(Level.Iteration)
    public void check() {
        long live = family.get(liveKey).availablePermits();
        int keys = family.size();
        keepAlive.close();
        if (live != LIMIT - 1 || keys != 1 || family.size() != 0 || plain.availablePermits() != 1
                || jdk.availablePermits() != 1) {
            throw new IllegalStateException("permits missing: live key " + live + " of " + (LIMIT - 1) + " free, "
                    + keys + " live keys (1 expected), after release " + family.size() + "; plain "
                    + plain.availablePermits() + ", jdk " + jdk.availablePermits());
        }
        family.close();
    }

    /**
     * A request on a key that stays live.
     *
     * @throws InterruptedException never: a permit is free
     */
    @Benchmark
    public void liveKey() throws InterruptedException {
        try (Permit p = family.get(liveKey).acquire()) {
            // nothing: the request's own cost
        }
    }

    /**
     * A request on a key that nothing else holds: created, then removed on release.
     *
     * @throws InterruptedException never: a permit is free
     */
    @Benchmark
    public void freshKey() throws InterruptedException {
        try (Permit p = family.get(freshKey).acquire()) {
            // nothing
        }
    }

    /**
     * A Sema semaphore's acquire + release: the baseline.
     *
     * @throws InterruptedException never: the permit is free
     */
    @Benchmark
    public void plainSema() throws InterruptedException {
        try (Permit p = plain.acquire()) {
            // nothing
        }
    }

    /**
     * The JDK's acquire + release.
     *
     * @throws InterruptedException never: the permit is free
     */
    @Benchmark
    public void plainJdk() throws InterruptedException {
        jdk.acquire();
        try {
            // nothing
        } finally {
            jdk.release();
        }
    }
}
