package dev.sema.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Semaphore;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Many concurrent subscribers of every operator, with random weights, random cancels at every stage (Reactor's
 * {@code timeout}, {@code dispose} from another thread), sema-core timeouts and errors: the weight held never
 * exceeds the limit, and at the end every permit is back and nobody is queued. {@code -Dsema.seed=N} replays a
 * run.
 */
@Tag("stress")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ReactorStressTest {
    private static final int LIMIT = 8;
    private static final int SUBSCRIBERS = 20_000;

    private final Semaphore semaphore = Semaphore.builder().name("stress").permits(LIMIT).build();
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong most = new AtomicLong();

    private static long seed() {
        String given = System.getProperty("sema.seed");
        long seed = given != null && !given.isBlank() ? Long.decode(given.trim()) : new SecureRandom().nextLong();
        System.out.println("ReactorStressTest: seed " + seed + " (replay with -Dsema.seed=" + seed + ")");
        return seed;
    }

    /** Counts {@code weight} as held from now until the returned action runs (once). */
    private Runnable hold(long weight) {
        most.accumulateAndGet(held.addAndGet(weight), Math::max);
        AtomicBoolean once = new AtomicBoolean();
        return () -> {
            if (once.compareAndSet(false, true)) {
                held.addAndGet(-weight);
            }
        };
    }

    /** Work that holds {@code weight}: ends after a hop or a short delay, fails, or never ends. */
    private Mono<Integer> work(long weight, int kind, Scheduler on) {
        return Mono.defer(() -> {
            Runnable done = hold(weight);
            Mono<Integer> body = switch (kind) {
                case 0 -> Mono.just(1).publishOn(on);
                case 1 -> Mono.delay(Duration.ofNanos(50_000)).thenReturn(1);
                case 2 -> Mono.<Integer>error(new IllegalStateException("work failed")).publishOn(on);
                default -> Mono.never();
            };
            // counted off before the guard sees the end (and so before it gives the permits back)
            return body.doOnTerminate(done).doOnCancel(done);
        });
    }

    @Test
    void neverMoreHeldThanTheLimitAndNothingLeaked() throws InterruptedException {
        long seed = seed();
        SplittableRandom random = new SplittableRandom(seed);
        Scheduler on = Schedulers.parallel();
        CountDownLatch ended = new CountDownLatch(SUBSCRIBERS);
        for (int i = 0; i < SUBSCRIBERS; i++) {
            long weight = random.nextInt(4); // 0..3
            int kind = random.nextInt(10) < 7 ? random.nextInt(2) : 2 + random.nextInt(2);
            Mono<?> subscriber = switch (random.nextInt(3)) {
                case 0 -> work(weight, kind, on).transformDeferred(SemaReactor.withPermits(semaphore, weight));
                case 1 -> SemaReactor.acquire(semaphore, weight, Duration.ofNanos(random.nextLong(2_000_000)))
                        .flatMap(p -> {
                            Runnable done = hold(weight);
                            return Mono.just(1).publishOn(on).doFinally(s -> {
                                done.run(); // counted off before the permit is closed
                                p.close();
                            });
                        });
                default -> SemaReactor.mapWeighted(Flux.range(0, 1 + random.nextInt(5)), semaphore,
                        x -> (x + weight) % 4, x -> work((x + weight) % 4, kind == 3 ? 0 : kind, on)).then();
            };
            if (kind == 3 || random.nextInt(4) == 0) { // cancelled by Reactor at a random stage
                subscriber = subscriber.timeout(Duration.ofNanos(random.nextLong(3_000_000)), on);
            }
            Disposable d = subscriber.subscribeOn(on).doFinally(s -> ended.countDown()).subscribe(v -> { }, e -> { });
            if (random.nextInt(8) == 0) { // cancelled from another thread, at any stage
                on.schedule(d::dispose, random.nextLong(1_000_000), TimeUnit.NANOSECONDS);
            }
        }
        assertThat(ended.await(100, TimeUnit.SECONDS)).as("every subscriber ended (seed %d)", seed).isTrue();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (semaphore.availablePermits() != LIMIT && System.nanoTime() < deadline) {
            Thread.onSpinWait(); // a cancel's release may still be on its way
        }
        assertThat(most.get()).as("most held at once (seed %d)", seed).isLessThanOrEqualTo(LIMIT);
        assertThat(semaphore.availablePermits()).as("permits back (seed %d)", seed).isEqualTo(LIMIT);
        assertThat(semaphore.queueLength()).as("queue (seed %d)", seed).isZero();
        assertThat(held.get()).as("work still counted (seed %d)", seed).isZero();
    }
}
