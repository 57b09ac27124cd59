package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Platform and virtual threads acquire (blocking, timed, try, async), hold, release and report drops while
 * an adaptive limit moves the limit under them. Checks throughout: the limit stays within its bounds and
 * no more permits are held than the ceiling; at the end, every permit is back, the adaptive limit agrees
 * with the semaphore, and it did adjust (a run in which it never moved would prove nothing).
 */
@Tag("stress")
@Timeout(120)
class AdaptiveLimitStressTest {
    private static final long MIN = 3;
    private static final long MAX = 40;

    @ParameterizedTest
    @ValueSource(strings = {"aimd", "gradient"})
    void limitMovesUnderLoadWithinBoundsAndNothingLeaks(String algorithm) throws Exception {
        long seed = StressSeed.of("AdaptiveLimitStressTest " + algorithm);
        Random random = new Random(seed);
        Semaphore s = Semaphore.builder().permits(10).maxPermits(64).name("stressed").build();
        AtomicLong changes = new AtomicLong();
        s.addListener(new SemaphoreListener() {
            @Override
            public void limitChanged(Semaphore semaphore, long oldLimit, long newLimit) {
                changes.incrementAndGet();
            }
        });
        AdaptiveLimit.Builder b = algorithm.equals("aimd") ? AdaptiveLimit.aimd() : AdaptiveLimit.gradient();
        AdaptiveLimit adaptive = b.minLimit(MIN).maxLimit(MAX).build(s);

        AtomicLong held = new AtomicLong();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 68; t++) {
            long threadSeed = random.nextLong();
            Runnable worker = () -> work(s, adaptive, new Random(threadSeed), held, errors, start);
            threads.add(t < 4 ? Thread.ofPlatform().start(worker) : Thread.ofVirtual().start(worker));
        }
        Thread watcher = Thread.ofPlatform().start(() -> {
            while (!stop.get()) {
                long limit = s.permits();
                if (limit < MIN || limit > MAX) {
                    errors.add("limit " + limit + " outside " + MIN + ".." + MAX);
                }
                if (held.get() > 64) {
                    errors.add(held.get() + " held, above the ceiling");
                }
                Thread.onSpinWait();
            }
        });
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        stop.set(true);
        watcher.join();

        assertThat(errors).as("seed " + seed).isEmpty();
        assertThat(s.availablePermits()).as("every permit back, seed " + seed).isEqualTo(s.permits());
        assertThat(s.queueLength()).isZero();
        assertThat(adaptive.limit()).as("seed " + seed).isEqualTo(s.permits());
        assertThat(changes.get()).as("the limit moved, seed " + seed).isGreaterThan(10);
        Waiting.checkInvariants(s);
    }

    private static void work(Semaphore s, AdaptiveLimit adaptive, Random r, AtomicLong held,
            ConcurrentLinkedQueue<String> errors, CountDownLatch start) {
        try {
            start.await();
            for (int i = 0; i < 2_000; i++) {
                long n = 1 + r.nextInt(3);
                Permit p;
                try {
                    p = switch (r.nextInt(4)) {
                        case 0 -> s.acquire(n);
                        case 1 -> s.acquire(n, Duration.ofNanos(r.nextInt(200_000)));
                        case 2 -> s.tryAcquire(n).orElse(null);
                        default -> s.acquireAsync(n).get(10, TimeUnit.SECONDS);
                    };
                } catch (TimeoutException e) {
                    continue;
                }
                if (p == null) {
                    continue;
                }
                held.addAndGet(n);
                LockSupport.parkNanos(r.nextInt(50_000));
                if (r.nextInt(50) == 0) {
                    adaptive.dropped();
                }
                held.addAndGet(-n);
                if (r.nextBoolean()) {
                    p.close();
                } else {
                    p.release(1);
                    p.close();
                }
            }
        } catch (Exception e) {
            errors.add(e.toString());
        }
    }
}
