package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Races every kind of request of every partition (and of the parent's own) on platform and virtual threads,
 * with random weights, timeouts, cancels, interrupts and Permit operations, while the limit moves: by the
 * test's own resizes ({@code resized}, where {@link LimitWatch} checks the hard limit exactly) or by an
 * {@link AdaptiveLimit} fed by the requests' outcomes ({@code adaptive}, where the bound is the ceiling, the
 * most the adaptive limit may set). At the end: every permit back, every queue empty, each partition holding
 * nothing, and the engine's invariants (P0-P4) intact.
 */
@Tag("stress")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PartitionsStressTest {
    private static final int PLATFORM_THREADS = 6;
    private static final int VIRTUAL_THREADS = 300;
    private static final int SCALE = Integer.getInteger("sema.stress.scale", 1);
    private static final int PLATFORM_OPS = 2_000 * SCALE;
    private static final int VIRTUAL_OPS = 30 * SCALE;
    private static final long CEILING = 16;

    @ParameterizedTest
    @ValueSource(strings = {"resized", "adaptive"})
    void theHardLimitHoldsAndEverythingComesBack(String mode) throws Exception {
        long seed = StressSeed.of("PartitionsStressTest " + mode);
        SplittableRandom root = new SplittableRandom(seed);
        Semaphore api = Semaphore.builder().name("api").permits(8).maxPermits(CEILING)
                .partition("checkout", 0.5).partition("browse", 0.25).partition("batch", 0.125).build();
        List<Semaphore> targets = new ArrayList<>();
        api.partitionNames().forEach(n -> targets.add(api.partition(n)));
        targets.add(api);
        boolean adaptive = mode.equals("adaptive");
        // the floor is the largest request: below it, a request would wait for a limit only releases raise
        AdaptiveLimit limit = adaptive ? AdaptiveLimit.aimd().minLimit(4).maxLimit(CEILING).build(api) : null;
        LimitWatch watch = new LimitWatch(api, 1 << 16);
        AtomicLong held = new AtomicLong();
        AtomicLong maxHeld = new AtomicLong();
        LongAdder granted = new LongAdder();
        AtomicBoolean resizing = new AtomicBoolean(true);

        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < PLATFORM_THREADS + VIRTUAL_THREADS; t++) {
            boolean platform = t < PLATFORM_THREADS;
            SplittableRandom r = root.split();
            int ops = platform ? PLATFORM_OPS : VIRTUAL_OPS;
            Runnable body = () -> {
                for (int i = 0; i < ops; i++) {
                    Semaphore s = targets.get(r.nextInt(targets.size()));
                    long n = 1 + r.nextInt(4);
                    int token = watch.enter();
                    try {
                        Permit p = request(s, n, r);
                        if (p != null) {
                            granted.increment();
                            long h = held.addAndGet(p.permits());
                            maxHeld.accumulateAndGet(h, Math::max);
                            if (!adaptive) {
                                watch.acquired(p.permits());
                            }
                            use(p, r, held, watch, adaptive);
                        }
                    } finally {
                        watch.exit(token);
                    }
                }
            };
            threads.add(platform ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
        }
        // interrupts and resizes while they run
        SplittableRandom chaos = root.split();
        Thread disturber = Thread.ofPlatform().start(() -> {
            while (resizing.get()) {
                Thread victim = threads.get(chaos.nextInt(threads.size()));
                victim.interrupt();
                if (!adaptive && chaos.nextInt(4) == 0) {
                    watch.resizeRandomly(chaos);
                }
                Thread.yield();
            }
        });
        for (Thread t : threads) {
            t.join(Duration.ofSeconds(90));
            assertThat(t.isAlive()).as("a worker is stuck: %s", api).isFalse();
        }
        resizing.set(false);
        disturber.join();
        if (limit != null) {
            limit.close();
        }
        Thread.interrupted();

        assertThat(maxHeld.get()).as("held at most the ceiling").isLessThanOrEqualTo(CEILING);
        assertThat(granted.sum()).as("some requests were granted").isPositive();
        assertThat(held.get()).isZero();
        assertThat(api.queueLength()).isZero();
        assertThat(api.availablePermits()).isEqualTo(api.permits());
        assertThat(((LocalSemaphore) api).group.heldForTests().values()).containsOnly(0L);
        for (Semaphore t : targets) {
            assertThat(t.queueLength()).isZero();
        }
        if (!adaptive) {
            watch.check();
        }
        ((LocalSemaphore) api).checkInvariants();
    }

    /** One request of a random kind; null when it was not granted (refused, timed out, cancelled, interrupted). */
    private static Permit request(Semaphore s, long n, SplittableRandom r) {
        try {
            switch (r.nextInt(6)) {
                case 0:
                    return s.acquire(n);
                case 1:
                    return s.acquire(n, Duration.ofNanos(r.nextInt(2_000_000)));
                case 2: {
                    Optional<Permit> p = s.tryAcquire(n);
                    return p.orElse(null);
                }
                case 3: {
                    CompletableFuture<Permit> f = s.acquireAsync(n);
                    if (r.nextBoolean()) {
                        f.cancel(false);
                    }
                    return joined(f);
                }
                case 4:
                    return joined(s.acquireAsync(n, Duration.ofNanos(r.nextInt(2_000_000))));
                default:
                    return s.acquireUninterruptibly(n);
            }
        } catch (InterruptedException | TimeoutException e) {
            return null;
        }
    }

    private static Permit joined(CompletableFuture<Permit> f) {
        try {
            return f.join();
        } catch (CancellationException | CompletionException e) {
            return null;
        }
    }

    /** Holds the permit a little, sometimes splitting or releasing part first, and gives everything back. */
    private static void use(Permit p, SplittableRandom r, AtomicLong held, LimitWatch watch, boolean adaptive) {
        long total = p.permits();
        Permit rest = p;
        if (total > 1 && r.nextBoolean()) {
            Permit part = p.split(1 + r.nextLong(total - 1));
            if (r.nextBoolean()) {
                p.merge(part);
            } else {
                giveBack(part, held, watch, adaptive);
            }
        }
        if (r.nextInt(4) == 0) {
            Thread.yield();
        }
        giveBack(rest, held, watch, adaptive);
    }

    private static void giveBack(Permit p, AtomicLong held, LimitWatch watch, boolean adaptive) {
        long n = p.permits();
        held.addAndGet(-n);
        if (!adaptive) {
            watch.released(n);
        }
        p.close();
    }
}
