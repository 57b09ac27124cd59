package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Many platform and virtual threads on few keys, so that keys go idle and come back all the time: every style of
 * request (blocking, timed, tryAcquire, async, async cancelled, interrupted), random weights, partial releases,
 * splits and merges, with and without a parent, through views got at once or kept from earlier requests (whose key
 * may have been retired and made again since). Each grant is counted into its key's holdings (and the parent's)
 * while held: never more than a key's limit for one key, nor the parent's for all. At the end: no key left,
 * nothing held anywhere.
 */
@Tag("stress")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class KeyedStressTest {
    private static final int KEYS = 3;
    private static final long KEY_LIMIT = 4;
    private static final long PARENT_LIMIT = 9;
    private static final int PLATFORM_THREADS = 6;
    private static final int VIRTUAL_THREADS = 200;
    private static final int SCALE = Integer.getInteger("sema.stress.scale", 1);
    private static final int PLATFORM_OPS = 20_000 * SCALE;
    private static final int VIRTUAL_OPS = 200 * SCALE;

    @ParameterizedTest
    @ValueSource(strings = {"alone", "with a parent"})
    void neverMoreThanAKeysLimitAndNothingLeftAtTheEnd(String mode) throws Exception {
        long seed = StressSeed.of("KeyedStressTest " + mode);
        SplittableRandom root = new SplittableRandom(seed);
        Semaphore parent = mode.equals("alone") ? null : Semaphore.builder().name("parent").permits(PARENT_LIMIT)
                .build();
        KeyedSemaphore.Builder<Integer> b = KeyedSemaphore.<Integer>builder().name("stress").permits(KEY_LIMIT)
                .maxKeys(KEYS);
        if (parent != null) {
            b.parent(parent);
        }
        KeyedSemaphore<Integer> family = b.build();
        Holdings holdings = new Holdings();
        LongAdder granted = new LongAdder();
        AtomicReferenceArray<Semaphore> kept = new AtomicReferenceArray<>(KEYS);

        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < PLATFORM_THREADS + VIRTUAL_THREADS; t++) {
            boolean virtual = t >= PLATFORM_THREADS;
            SplittableRandom random = root.split();
            int ops = virtual ? VIRTUAL_OPS : PLATFORM_OPS;
            Runnable body = () -> {
                try {
                    for (int i = 0; i < ops; i++) {
                        step(family, kept, random, holdings, granted);
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            };
            threads.add(virtual ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        for (Thread t : threads) {
            t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            if (t.isAlive()) {
                StringBuilder stack = new StringBuilder();
                for (StackTraceElement e : t.getStackTrace()) {
                    stack.append("\n    at ").append(e);
                }
                StringBuilder keys = new StringBuilder();
                for (int k = 0; k < KEYS; k++) {
                    keys.append("\n").append(family.get(k));
                }
                throw new AssertionError("a thread is stuck (seed " + seed + "): " + t + stack + "\n" + family
                        + (parent == null ? "" : " " + parent) + keys + "\nfailures: " + failures, failures.isEmpty()
                        ? null : failures.get(0));
            }
        }
        assertThat(failures).as("seed %d", seed).isEmpty();
        assertThat(holdings.worstKey()).as("most held for one key (seed %d)", seed).isLessThanOrEqualTo(KEY_LIMIT);
        if (parent != null) {
            assertThat(holdings.worstTotal()).as("most held in all (seed %d)", seed).isLessThanOrEqualTo(PARENT_LIMIT);
            assertThat(parent.availablePermits()).as("parent's permits back (seed %d)", seed).isEqualTo(PARENT_LIMIT);
            assertThat(parent.queueLength()).isZero();
        }
        assertThat(granted.sum()).as("something was granted").isPositive();
        assertThat(family.size()).as("live keys at the end (seed %d)", seed).isZero();
        assertThat(((LocalKeyedSemaphore<Integer>) family).entriesForTests()).as("entries left (seed %d)", seed)
                .isZero();
        for (int k = 0; k < KEYS; k++) {
            assertThat(family.get(k).availablePermits()).isEqualTo(KEY_LIMIT);
        }
    }

    /** What the test believes held, per key and in all, with the most ever seen. */
    static final class Holdings {
        private final AtomicLongArray perKey = new AtomicLongArray(KEYS);
        private final AtomicLong total = new AtomicLong();
        private final AtomicLong worstKey = new AtomicLong();
        private final AtomicLong worstTotal = new AtomicLong();

        void add(int key, long n) {
            worstKey.accumulateAndGet(perKey.addAndGet(key, n), Math::max);
            worstTotal.accumulateAndGet(total.addAndGet(n), Math::max);
        }

        void remove(int key, long n) {
            perKey.addAndGet(key, -n);
            total.addAndGet(-n);
        }

        long worstKey() {
            return worstKey.get();
        }

        long worstTotal() {
            return worstTotal.get();
        }
    }

    private static void step(KeyedSemaphore<Integer> family, AtomicReferenceArray<Semaphore> kept,
            SplittableRandom random, Holdings holdings, LongAdder granted) throws InterruptedException {
        int key = random.nextInt(KEYS);
        Semaphore s = random.nextInt(3) == 0 ? kept.get(key) : null;
        if (s == null) {
            s = family.get(key);
            if (random.nextInt(8) == 0) {
                kept.set(key, s); // used later by any thread, perhaps after the key was retired and made again
            }
        }
        long n = random.nextInt(10) == 0 ? 0 : 1 + random.nextInt((int) KEY_LIMIT);
        Permit p = null;
        try {
            switch (random.nextInt(6)) {
                case 0 -> p = s.acquire(n);
                case 1 -> p = s.acquire(n, Duration.ofMillis(random.nextInt(3)));
                case 2 -> p = s.tryAcquire(n).orElse(null);
                case 3 -> p = s.acquireAsync(n, Duration.ofMillis(1 + random.nextInt(3))).join();
                case 4 -> {
                    CompletableFuture<Permit> f = s.acquireAsync(n);
                    if (random.nextBoolean()) {
                        Thread.onSpinWait();
                    }
                    if (!f.cancel(true)) {
                        p = f.join();
                    }
                }
                default -> {
                    Thread self = Thread.currentThread();
                    Thread interrupter = Thread.ofVirtual().start(self::interrupt);
                    try {
                        p = s.acquire(n);
                    } catch (InterruptedException e) {
                        // interrupted while waiting, or before: nothing granted
                    } finally {
                        while (interrupter.isAlive()) {
                            try {
                                interrupter.join();
                            } catch (InterruptedException late) {
                                // its interrupt, arriving after the grant: cleared below
                            }
                        }
                        Thread.interrupted();
                    }
                }
            }
        } catch (TimeoutException | CancellationException | TooManyKeysException e) {
            return;
        } catch (CompletionException e) {
            if (e.getCause() instanceof TimeoutException || e.getCause() instanceof TooManyKeysException) {
                return;
            }
            throw e;
        }
        if (p == null) {
            return;
        }
        granted.increment();
        holdings.add(key, p.permits());
        long held = p.permits();
        if (held > 1 && random.nextBoolean()) {
            Permit part = p.split(1);
            if (random.nextBoolean()) {
                p.merge(part);
            } else {
                holdings.remove(key, 1);
                part.close();
                held -= 1;
            }
        }
        if (held > 1 && random.nextBoolean()) {
            holdings.remove(key, 1);
            p.release(1);
            held -= 1;
        }
        Thread.yield();
        holdings.remove(key, held);
        p.close();
    }
}
