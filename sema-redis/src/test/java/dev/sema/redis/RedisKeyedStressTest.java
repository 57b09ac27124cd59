package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.TooManyKeysException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Threads of two families (two connections, as two processes) on few keys, in every acquire style, while handles
 * are let go of and opened again: the permits held for a key never exceed its limit, and nothing is left at the end.
 */
@Tag("stress")
@Timeout(180)
class RedisKeyedStressTest extends RedisTestSupport {
    private static final long LIMIT = 2;
    private static final String[] KEYS = {"k0", "k1", "k2"};

    @Test
    void perKeyBoundHoldsAndNothingIsLeft() throws Exception {
        long seed = System.nanoTime();
        System.out.println("RedisKeyedStressTest seed " + seed);
        KeyedSemaphore<String> fa = a.keyed(name).permits(LIMIT).lease(Duration.ofSeconds(5)).maxKeys(2).build();
        KeyedSemaphore<String> fb = b.keyed(name).permits(LIMIT).lease(Duration.ofSeconds(5)).build();
        ConcurrentHashMap<String, AtomicLong> inUse = new ConcurrentHashMap<>();
        for (String k : KEYS) {
            inUse.put(k, new AtomicLong());
        }
        List<String> violations = new CopyOnWriteArrayList<>();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        AtomicLong refusals = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            SplittableRandom random = new SplittableRandom(seed + t);
            KeyedSemaphore<String> f = t % 2 == 0 ? fa : fb;
            Runnable work = () -> {
                try {
                    for (int i = 0; i < 150; i++) {
                        String key = KEYS[random.nextInt(KEYS.length)];
                        long w = 1 + random.nextInt((int) LIMIT);
                        Semaphore s = f.get(key);
                        Permit p;
                        try {
                            p = switch (random.nextInt(4)) {
                                case 0 -> s.acquire(w);
                                case 1 -> s.tryAcquire(w).orElse(null);
                                case 2 -> timed(s, w);
                                default -> s.acquireAsync(w).get(30, TimeUnit.SECONDS);
                            };
                        } catch (TooManyKeysException | ExecutionException refused) {
                            if (!(refused instanceof TooManyKeysException)
                                    && !(refused.getCause() instanceof TooManyKeysException)) {
                                throw refused;
                            }
                            refusals.incrementAndGet(); // fa's bound (2 keys of 3): the request got nothing
                            continue;
                        }
                        if (p == null) {
                            continue;
                        }
                        long now = inUse.get(key).addAndGet(w);
                        if (now > LIMIT) {
                            violations.add(key + " held " + now);
                        }
                        if (random.nextBoolean()) {
                            Thread.onSpinWait();
                        }
                        inUse.get(key).addAndGet(-w);
                        p.close();
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            };
            threads.add(t % 4 < 2 ? Thread.ofVirtual().start(work) : Thread.ofPlatform().start(work));
        }
        for (Thread t : threads) {
            t.join(150_000);
        }
        assertThat(failures).as("seed " + seed).isEmpty();
        assertThat(violations).as("seed " + seed).isEmpty();
        System.out.println("RedisKeyedStressTest: " + refusals.get() + " requests refused beyond maxKeys");
        await("no live key and no handle", () -> fa.size() == 0 && fb.size() == 0 && a.handlesForTests() == 0
                && b.handlesForTests() == 0);
        for (String k : KEYS) {
            assertThat(fb.get(k).availablePermits()).as(k).isEqualTo(LIMIT);
            assertThat(fb.get(k).queueLength()).as(k).isZero();
            checkInvariants(name + ":" + k);
        }
    }

    private static Permit timed(Semaphore s, long w) throws InterruptedException {
        try {
            return s.acquire(w, Duration.ofMillis(50));
        } catch (TimeoutException e) {
            return null;
        }
    }
}
