package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Leak detection and refill under load: many platform and virtual threads acquire, split, merge, close,
 * forget and drop permits at random while the garbage collector returns the dropped ones and a refill adds
 * credit. Checked: the limit is never exceeded, every dropped permit comes back exactly once (no leak is
 * lost, none is counted twice) and at the end everything is back.
 */
@Tag("stress")
@Timeout(120)
class LeakAndRefillStressTest {
    private static final int THREADS = 8;

    @Test
    void everyDroppedPermitComesBackExactlyOnce() throws Exception {
        for (LeakDetection level : new LeakDetection[] {LeakDetection.SAMPLED, LeakDetection.PARANOID}) {
            long seed = StressSeed.of("everyDroppedPermitComesBackExactlyOnce " + level);
            int limit = 24;
            LocalSemaphore s = (LocalSemaphore) Semaphore.builder().permits(limit).name("leaky-" + level)
                    .leakDetection(level).build();
            AtomicLong dropped = new AtomicLong();
            AtomicLong violations = new AtomicLong();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                SplittableRandom random = new SplittableRandom(seed + t);
                Runnable body = () -> churn(s, random, 500, dropped, violations, limit);
                workers.add(t % 2 == 0 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
            }
            // Dropped permits come back only once the collector finds them: keep it looking while they run.
            while (workers.stream().anyMatch(Thread::isAlive)) {
                System.gc();
                for (Thread w : workers) {
                    w.join(20);
                }
            }
            // Leaks are counted just after their permits are released: wait for both, then compare exactly.
            awaitGc("every dropped permit is back (seed " + seed + ")",
                    () -> s.availablePermits() >= limit && s.leakedPermits() >= dropped.get());
            assertThat(s.availablePermits()).as("available permits (seed %d)", seed).isEqualTo(limit);
            assertThat(violations.get()).as("times more was held than the limit (seed %d)", seed).isZero();
            assertThat(s.leakedPermits()).as("permits returned by leak detection (seed %d)", seed)
                    .isEqualTo(dropped.get());
            assertThat(s.queueLength()).isZero();
            s.checkInvariants();
        }
    }

    /** Random work on {@code s}; adds to {@code dropped} what it leaves for the collector. */
    private static void churn(LocalSemaphore s, SplittableRandom random, int rounds, AtomicLong dropped,
            AtomicLong violations, long limit) {
        try {
            for (int i = 0; i < rounds; i++) {
                int want = 1 + random.nextInt(4);
                Permit p;
                try {
                    p = s.acquire(want, Duration.ofMillis(50));
                } catch (TimeoutException e) {
                    continue; // the permits are all dropped or held: the collector will bring some back
                }
                if (s.permits() - s.availablePermits() > limit) {
                    violations.incrementAndGet();
                }
                // Few drops: each costs a garbage collection before its permits serve anyone again.
                switch (random.nextInt(16)) {
                    case 0 -> dropped.addAndGet(p.permits()); // dropped on the floor
                    case 1 -> {
                        Permit part = p.split(1 + random.nextInt((int) p.permits()));
                        dropped.addAndGet(part.permits()); // one part leaks, the other is closed
                        p.close();
                    }
                    case 2 -> {
                        Optional<Permit> more = s.tryAcquire(1);
                        more.ifPresent(p::merge);
                        p.close();
                    }
                    case 3 -> {
                        p.close();
                        p.close(); // a second close does nothing
                    }
                    default -> p.close();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void refillServesWaitersAsCreditArrivesAndNeverPassesTheCeiling() throws Exception {
        long seed = StressSeed.of("refillServesWaitersAsCreditArrivesAndNeverPassesTheCeiling");
        int ceiling = 40;
        LocalSemaphore s = (LocalSemaphore) Semaphore.builder().permits(0).maxPermits(ceiling)
                .refill(3, Duration.ofMillis(1)).build();
        AtomicLong spent = new AtomicLong();
        AtomicLong violations = new AtomicLong();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            SplittableRandom random = new SplittableRandom(seed + t);
            Runnable body = () -> spend(s, random, 300, spent, violations, ceiling);
            workers.add(t % 2 == 0 ? Thread.ofPlatform().start(body) : Thread.ofVirtual().start(body));
        }
        for (Thread w : workers) {
            w.join(TimeUnit.SECONDS.toMillis(90));
            assertThat(w.isAlive()).as("a spender starved (seed %d)", seed).isFalse();
        }
        assertThat(violations.get()).as("limit above the ceiling or more held than the limit (seed %d)", seed)
                .isZero();
        assertThat(spent.get()).as("credit spent").isPositive();
        // With nobody spending, the credit accrues back to the ceiling and stays there.
        awaitGc("the credit is full again", () -> s.permits() == ceiling && s.availablePermits() == ceiling);
        assertThat(s.queueLength()).isZero();
        s.checkInvariants();
        s.close();
        assertThat(s.refillTask.isCancelled()).isTrue();
    }

    /** Spends credit (acquire then forget), sometimes gives it back, sometimes gives up waiting. */
    private static void spend(LocalSemaphore s, SplittableRandom random, int rounds, AtomicLong spent,
            AtomicLong violations, long ceiling) {
        try {
            for (int i = 0; i < rounds; i++) {
                int want = 1 + random.nextInt(5);
                Permit p;
                switch (random.nextInt(4)) {
                    case 0 -> {
                        CompletableFuture<Permit> f = s.acquireAsync(want);
                        if (random.nextInt(4) == 0 && f.cancel(false)) {
                            continue;
                        }
                        p = f.join();
                    }
                    case 1 -> {
                        try {
                            p = s.acquire(want, Duration.ofMillis(1 + random.nextInt(3)));
                        } catch (TimeoutException e) {
                            continue;
                        }
                    }
                    default -> p = s.acquire(want);
                }
                // forget() lowers the limit with what it keeps, and refills only raise it: nothing held is ever
                // above the limit, so available never goes below 0.
                if (s.permits() > ceiling || s.availablePermits() < 0) {
                    violations.incrementAndGet();
                }
                if (random.nextInt(3) == 0) {
                    p.close(); // not spent after all
                } else {
                    spent.addAndGet(p.permits());
                    p.forget();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static void awaitGc(String what, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("timed out waiting until " + what).isNegative();
            System.gc();
            Thread.sleep(10); // gives the cleaner and the refill a chance; the condition decides
        }
    }
}
