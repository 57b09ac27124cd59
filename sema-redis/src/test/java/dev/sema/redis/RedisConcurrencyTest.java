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
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 8; t++) {
            RedisSemaphore s = t % 2 == 0 ? sa : sb;
            Random random = new Random(seed + t);
            threads.add(Thread.ofVirtual().start(() -> {
                try {
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
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread t : threads) {
            t.join(60_000);
        }
        assertThat(failures).isEmpty();
        assertThat(granted.get()).isPositive();
        assertThat(maxSeen.get()).isLessThanOrEqualTo(limit);
        await("every permit back", () -> sa.availablePermits() == limit && sa.queueLength() == 0);
        checkInvariants();
        assertThat(acquiredEvents.get()).as("acquired events").isEqualTo(granted.get());
        assertThat(acquiredEvents.get() + rejectedEvents.get()).as("one event per request").isEqualTo(8 * 60);
        assertThat(permitsReleased.get()).as("permits released").isEqualTo(permitsGranted.get());
    }
}
