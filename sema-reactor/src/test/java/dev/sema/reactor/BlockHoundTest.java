package dev.sema.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * With BlockHound installed (once per JVM, with every integration on the class path: Reactor's and
 * {@link SemaBlockHoundIntegration}), nothing here blocks a parallel-scheduler thread, and a real blocking
 * call still is reported.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BlockHoundTest {
    /** Every blocking call BlockHound reported, also those whose error a reactive chain swallowed. */
    private static final Queue<String> BLOCKED = new ConcurrentLinkedQueue<>();

    @BeforeAll
    static void install() {
        BlockHound.builder()
                .blockingMethodCallback(method -> {
                    BLOCKED.add(method + " on " + Thread.currentThread().getName());
                    throw new BlockingOperationError(method);
                })
                .loadIntegrations() // every one ServiceLoader finds: Reactor's, SemaBlockHoundIntegration
                .install();
    }

    @BeforeEach
    void clear() {
        BLOCKED.clear();
    }

    @Test
    void integrationIsFoundByServiceLoader() {
        List<Class<?>> found = ServiceLoader.load(BlockHoundIntegration.class).stream()
                .<Class<?>>map(ServiceLoader.Provider::type).toList();
        assertThat(found).contains(SemaBlockHoundIntegration.class);
    }

    @Test
    void sleepOnAParallelThreadIsStillCaught() {
        StepVerifier.create(Mono.fromCallable(() -> {
                    Thread.sleep(10);
                    return 1;
                }).subscribeOn(Schedulers.parallel()))
                .expectError(BlockingOperationError.class)
                .verify(Duration.ofSeconds(10));
        assertThat(BLOCKED).anyMatch(s -> s.contains("sleep"));
    }

    @Test
    void blockingWorkResumedByAReleaseIsStillCaught() {
        // The release on a parallel thread serves a queued request under sema-core's lock (allowed), then
        // subscribes the waiting work on that thread, outside the lock: its sleep must be reported.
        Semaphore semaphore = Semaphore.create(1);
        Permit held = semaphore.tryAcquire(1).orElseThrow();
        Mono<Integer> sleepy = Mono.fromCallable(() -> {
            Thread.sleep(10);
            return 1;
        });
        StepVerifier.create(sleepy.transformDeferred(SemaReactor.withPermits(semaphore, 1)))
                .expectSubscription()
                .then(() -> Mono.fromRunnable(held::close).subscribeOn(Schedulers.parallel()).block())
                .expectError(BlockingOperationError.class)
                .verify(Duration.ofSeconds(10));
        assertThat(semaphore.availablePermits()).isEqualTo(1);
    }

    @Test
    void hundredThousandSubscribersQueuedOnSixteenPermitsBlockNoThread() throws InterruptedException {
        Semaphore semaphore = Semaphore.create(16);
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        int n = 100_000;
        CountDownLatch done = new CountDownLatch(n);
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        for (int i = 0; i < n; i++) {
            int v = i;
            Mono.defer(() -> {
                        most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                        // completes on another parallel thread: the permit is held across a thread hop
                        return Mono.just(v).publishOn(Schedulers.parallel()).doOnNext(x -> inFlight.decrementAndGet());
                    })
                    .transformDeferred(SemaReactor.withPermits(semaphore, 1))
                    .subscribeOn(Schedulers.parallel())
                    .subscribe(x -> { }, e -> {
                        errors.add(e);
                        done.countDown();
                    }, done::countDown);
        }
        assertThat(done.await(100, TimeUnit.SECONDS)).as("all completed").isTrue();
        assertThat(errors).isEmpty();
        assertThat(BLOCKED).isEmpty();
        assertThat(most.get()).isBetween(1, 16);
        assertThat(semaphore.availablePermits()).isEqualTo(16);
        assertThat(semaphore.queueLength()).isZero();
    }

    /**
     * Forces what is rare in practice: a parallel thread that parks on sema-core's lock because another thread
     * holds it (here the test thread, through reflection), when queueing a request, releasing to a queued one,
     * and withdrawing one. Each is allowed; the same park on a lock of the application's is reported.
     */
    @Test
    void parkingOnSemaCoresLockIsAllowedAndOnAnyOtherLockIsNot() throws Exception {
        Semaphore semaphore = Semaphore.create(2);
        ReentrantLock engineLock = engineLock(semaphore);
        Permit held = semaphore.tryAcquire(2).orElseThrow();

        // queueing (takeOrEnqueue)
        Queue<Permit> granted = new ConcurrentLinkedQueue<>();
        underContention(engineLock, () -> SemaReactor.acquire(semaphore, 1).subscribe(granted::add));
        awaitTrue(() -> semaphore.queueLength() == 1);
        Disposable second = SemaReactor.acquire(semaphore, 1).subscribe(granted::add);
        awaitTrue(() -> semaphore.queueLength() == 2);

        // withdrawing (withdraw)
        underContention(engineLock, second::dispose);
        awaitTrue(() -> semaphore.queueLength() == 1);

        // releasing to a queued request (releaseSlow)
        underContention(engineLock, held::close);
        awaitTrue(() -> granted.size() == 1);
        granted.forEach(Permit::close);
        assertThat(BLOCKED).isEmpty();
        assertThat(semaphore.availablePermits()).isEqualTo(2);

        // the same wait on a lock of the application's is a blocking call
        ReentrantLock applicationLock = new ReentrantLock();
        underContention(applicationLock, () -> {
            applicationLock.lock();
            applicationLock.unlock();
        });
        awaitTrue(() -> !BLOCKED.isEmpty());
        assertThat(BLOCKED).singleElement().asString().contains("park").contains("parallel");
    }

    /**
     * Runs {@code action} on a parallel thread while {@code lock} is held here, until that thread is parked
     * waiting for it.
     */
    private static void underContention(ReentrantLock lock, Runnable action) {
        AtomicReference<Thread> worker = new AtomicReference<>();
        lock.lock();
        try {
            Mono.fromRunnable(() -> {
                worker.set(Thread.currentThread());
                action.run();
            }).subscribeOn(Schedulers.parallel()).subscribe(v -> { }, e -> { });
            // parked, or reported by BlockHound when about to park
            awaitTrue(() -> !BLOCKED.isEmpty() || worker.get() != null && lock.hasQueuedThread(worker.get())
                    && worker.get().getState() == Thread.State.WAITING);
        } finally {
            lock.unlock();
        }
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition not met in time").isLessThan(deadline);
            Thread.onSpinWait();
        }
    }

    private static ReentrantLock engineLock(Semaphore semaphore) throws ReflectiveOperationException {
        Field field = semaphore.getClass().getDeclaredField("lock");
        field.setAccessible(true);
        return (ReentrantLock) field.get(semaphore);
    }

    @Test
    void contendedLockOnManyNonBlockingThreadsIsAllowed() {
        // 32 non-blocking threads on few cores: a thread preempted inside sema-core's critical section makes
        // others park on its lock, the short wait SemaBlockHoundIntegration allows.
        reactor.core.scheduler.Scheduler many = Schedulers.newParallel("sema-bh", 32);
        try {
            Semaphore semaphore = Semaphore.create(4);
            Long count = Flux.range(0, 200_000).flatMap(i -> Mono.just(i)
                    .transformDeferred(SemaReactor.withPermits(semaphore, 1 + i % 3))
                    .subscribeOn(many), 256).count().block(Duration.ofSeconds(100));
            assertThat(count).isEqualTo(200_000);
            assertThat(BLOCKED).isEmpty();
            assertThat(semaphore.availablePermits()).isEqualTo(4);
            assertThat(semaphore.queueLength()).isZero();
        } finally {
            many.dispose();
        }
    }

    @Test
    void mapWeightedAndAcquireOnParallelThreadsBlockNothing() {
        Semaphore semaphore = Semaphore.create(16);
        Long count = Flux.range(0, 8).flatMap(flow -> SemaReactor.mapWeighted(Flux.range(0, 2_000), semaphore,
                        i -> 1 + i % 4, i -> SemaReactor.acquire(semaphore, 0).map(p -> {
                            p.close();
                            return i;
                        }).publishOn(Schedulers.parallel()))
                .subscribeOn(Schedulers.parallel())).count().block(Duration.ofSeconds(100));
        assertThat(count).isEqualTo(16_000);
        assertThat(BLOCKED).isEmpty();
        assertThat(semaphore.availablePermits()).isEqualTo(16);
    }
}
