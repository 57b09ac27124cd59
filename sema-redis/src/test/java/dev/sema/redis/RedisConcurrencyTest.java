package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Many threads on two connections: weighted requests of every style, timeouts and cancellations, with
 * the permits in use counted on the side. In use never exceeds the limit, and everything is back at the
 * end, with Redis's bookkeeping intact.
 */
class RedisConcurrencyTest extends RedisTestSupport {

    @Test
    void manyThreadsOnTwoConnectionsNeverExceedTheLimitAndLoseNothing() throws Exception {
        long limit = 5;
        RedisSemaphore sa = build(a, limit);
        RedisSemaphore sb = build(b, limit);
        long seed = System.nanoTime();
        System.out.println("RedisConcurrencyTest seed " + seed);
        AtomicLong inUse = new AtomicLong();
        AtomicLong maxSeen = new AtomicLong();
        AtomicLong granted = new AtomicLong();
        // Each handle's listener sees its own requests: exactly one event per request, permits back once each.
        AtomicLong acquiredEvents = new AtomicLong();
        AtomicLong rejectedEvents = new AtomicLong();
        AtomicLong permitsGranted = new AtomicLong();
        AtomicLong permitsReleased = new AtomicLong();
        SemaphoreListener counting = new SemaphoreListener() {
            @Override
            public void acquired(Semaphore s, long permits, long waitNanos) {
                acquiredEvents.incrementAndGet();
                permitsGranted.addAndGet(permits);
            }

            @Override
            public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
                rejectedEvents.incrementAndGet();
            }

            @Override
            public void released(Semaphore s, long permits, long heldNanos) {
                permitsReleased.addAndGet(permits);
            }
        };
        sa.addListener(counting);
        sb.addListener(counting);
        List<Throwable> failures = race(sa, sb, seed, (s, random) -> {
            for (int i = 0; i < 60; i++) {
                long w = 1 + random.nextInt(3);
                Permit p = switch (random.nextInt(5)) {
                    case 0 -> s.acquire(w);
                    case 1 -> {
                        try {
                            yield s.acquire(w, Duration.ofMillis(random.nextInt(50)));
                        } catch (TimeoutException e) {
                            yield null;
                        }
                    }
                    case 2 -> {
                        Optional<Permit> o = s.tryAcquire(w);
                        yield o.orElse(null);
                    }
                    case 3 -> {
                        CompletableFuture<Permit> f = s.acquireAsync(w);
                        if (random.nextBoolean()) {
                            f.cancel(false);
                        }
                        yield f.isCancelled() ? null : f.get(30, TimeUnit.SECONDS);
                    }
                    default -> s.acquireAsync(w, Duration.ofMillis(random.nextInt(50)))
                            .exceptionally(e -> null).get(30, TimeUnit.SECONDS);
                };
                if (p == null) {
                    continue;
                }
                granted.incrementAndGet();
                long now = inUse.addAndGet(w);
                maxSeen.accumulateAndGet(now, Math::max);
                if (ThreadLocalRandom.current().nextBoolean()) {
                    Thread.yield();
                }
                inUse.addAndGet(-w);
                if (w > 1 && random.nextBoolean()) {
                    Permit part = p.split(1);
                    part.close();
                }
                p.close();
            }
        });
        assertThat(failures).isEmpty();
        assertThat(granted.get()).isPositive();
        assertThat(maxSeen.get()).isLessThanOrEqualTo(limit);
        await("every permit back", () -> sa.availablePermits() == limit && sa.queueLength() == 0);
        checkInvariants();
        assertThat(acquiredEvents.get()).as("acquired events").isEqualTo(granted.get());
        assertThat(acquiredEvents.get() + rejectedEvents.get()).as("one event per request").isEqualTo(8 * 60);
        assertThat(permitsReleased.get()).as("permits released").isEqualTo(permitsGranted.get());
    }

    /**
     * Blocking acquires interrupted at random moments, before, while and after their first reply arrives (a
     * blocking caller handles that reply itself, and hands it to another thread when it stops waiting first):
     * every request ends one way, the limit holds, and everything is back at the end.
     */
    @Test
    void interruptsRacingBlockingAcquiresLoseNothing() throws Exception {
        long limit = 3;
        RedisSemaphore sa = build(a, limit);
        RedisSemaphore sb = build(b, limit);
        long seed = System.nanoTime();
        System.out.println("RedisConcurrencyTest interrupts seed " + seed);
        AtomicLong inUse = new AtomicLong();
        AtomicLong maxSeen = new AtomicLong();
        AtomicLong granted = new AtomicLong();
        AtomicLong interrupted = new AtomicLong();
        AtomicLong timedOut = new AtomicLong();
        java.util.concurrent.ScheduledExecutorService interrupter =
                java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        List<Throwable> failures;
        try {
            failures = race(sa, sb, seed, (s, random) -> {
                Thread self = Thread.currentThread();
                for (int i = 0; i < 80; i++) {
                    long w = 1 + random.nextInt(2);
                    // A third of the requests run undisturbed; the others are interrupted within 10 ms,
                    // before, while or after their reply comes back.
                    boolean armedAtStart = random.nextInt(3) != 0;
                    var armed = new java.util.concurrent.atomic.AtomicBoolean(armedAtStart);
                    interrupter.schedule(() -> {
                        if (armed.compareAndSet(true, false)) {
                            self.interrupt();
                        }
                    }, random.nextInt(10_000), TimeUnit.MICROSECONDS);
                    Permit p = null;
                    boolean thrown = false;
                    try {
                        p = random.nextBoolean() ? s.acquire(w) : s.acquire(w, Duration.ofMillis(200));
                    } catch (InterruptedException e) {
                        interrupted.incrementAndGet();
                        thrown = true; // the interrupt was delivered, and consumed
                    } catch (TimeoutException e) {
                        timedOut.incrementAndGet(); // it waited its 200 ms
                    }
                    boolean disarmed = armed.compareAndSet(true, false);
                    if (armedAtStart && !disarmed && !thrown) {
                        // The interrupter took it but the acquire did not throw: the interrupt is kept
                        // (granted first) or still on its way. Clear it before the next round.
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                        while (!Thread.interrupted()) {
                            assertThat(System.nanoTime() - until).as("the interrupt arrives").isNegative();
                            Thread.yield();
                        }
                    }
                    if (p == null) {
                        continue;
                    }
                    granted.incrementAndGet();
                    long now = inUse.addAndGet(w);
                    maxSeen.accumulateAndGet(now, Math::max);
                    inUse.addAndGet(-w);
                    p.close();
                }
            });
        } finally {
            interrupter.shutdownNow();
        }
        assertThat(failures).isEmpty();
        System.out.printf("interrupt race: %d granted, %d interrupted%n", granted.get(), interrupted.get());
        assertThat(granted.get()).isPositive();
        assertThat(interrupted.get()).as("the race was run: some acquires were interrupted").isPositive();
        assertThat(granted.get() + interrupted.get() + timedOut.get()).as("one outcome per request").isEqualTo(8 * 80);
        assertThat(maxSeen.get()).isLessThanOrEqualTo(limit);
        // Withdrawn requests' CANCELs release grants that raced with them; all of them are back in time.
        await("every permit back", () -> sa.availablePermits() == limit && sa.queueLength() == 0);
        await("no request left waiting", () -> ((LettuceSemaphore) sa).waiting.isEmpty()
                && ((LettuceSemaphore) sb).waiting.isEmpty());
        assertThat(((LettuceSemaphore) sa).held).isEmpty();
        assertThat(((LettuceSemaphore) sb).held).isEmpty();
        checkInvariants();
    }

    /** One worker of a race: the handle it uses and its own random source. */
    @FunctionalInterface
    private interface Worker {
        void run(RedisSemaphore s, Random random) throws Exception;
    }

    /**
     * Runs 8 workers on virtual threads, alternately on {@code sa} and {@code sb}, worker t with
     * {@code new Random(seed + t)}; returns what they threw, and a failure for each still running after 45 s
     * (within the test's timeout, so that a stuck worker fails the test with a reason).
     */
    private static List<Throwable> race(RedisSemaphore sa, RedisSemaphore sb, long seed, Worker worker)
            throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 8; t++) {
            RedisSemaphore s = t % 2 == 0 ? sa : sb;
            Random random = new Random(seed + t);
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    worker.run(s, random);
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread t : threads) {
            t.join(45_000);
            if (t.isAlive()) {
                failures.add(new AssertionError("a worker still running after 45 s"));
            }
        }
        return failures;
    }
}
