package dev.sema.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SemaReactorTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final Semaphore semaphore = Semaphore.builder().name("test").permits(4).maxPermits(10).build();

    /** Waits until {@code n} requests are queued on the semaphore. */
    private void awaitQueued(int n) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (semaphore.queueLength() != n) {
            assertThat(System.nanoTime()).as("queue length %d, expected %d", semaphore.queueLength(), n)
                    .isLessThan(deadline);
            Thread.onSpinWait();
        }
    }

    private void assertAllBack() {
        assertThat(semaphore.availablePermits()).isEqualTo(4);
        assertThat(semaphore.queueLength()).isZero();
    }

    // ---------------------------------------------------------------- acquire

    @Test
    void acquireEmitsThePermitOnSubscribeNotOnAssembly() {
        Mono<Permit> mono = SemaReactor.acquire(semaphore, 3);
        assertThat(semaphore.availablePermits()).isEqualTo(4);
        AtomicReference<Permit> got = new AtomicReference<>();
        StepVerifier.create(mono).consumeNextWith(got::set).verifyComplete();
        assertThat(got.get().permits()).isEqualTo(3);
        assertThat(semaphore.availablePermits()).isEqualTo(1);
        got.get().close();
        assertAllBack();
    }

    @Test
    void eachSubscriptionAcquiresAgain() {
        Mono<Permit> mono = SemaReactor.acquire(semaphore, 1);
        List<Permit> permits = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            permits.add(mono.block(WAIT));
        }
        assertThat(semaphore.availablePermits()).isZero();
        permits.forEach(Permit::close);
        assertAllBack();
    }

    @Test
    void acquireWaitsWithoutAThreadAndIsGrantedOnRelease() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        StepVerifier.create(SemaReactor.acquire(semaphore, 2))
                .expectSubscription()
                .then(() -> awaitQueued(1))
                .expectNoEvent(Duration.ofMillis(20))
                .then(held::close)
                .assertNext(p -> {
                    assertThat(p.permits()).isEqualTo(2);
                    p.close();
                })
                .verifyComplete();
        assertAllBack();
    }

    @Test
    void grantedButNotRequestedPermitIsClosedOnCancel() {
        AtomicReference<BaseSubscriber<Permit>> ref = new AtomicReference<>();
        BaseSubscriber<Permit> noDemand = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(org.reactivestreams.Subscription subscription) {
                // no request: the grant waits for demand
            }
        };
        ref.set(noDemand);
        SemaReactor.acquire(semaphore, 3).subscribe(noDemand);
        assertThat(semaphore.availablePermits()).isEqualTo(1); // granted at once, kept for the subscriber
        noDemand.cancel();
        assertAllBack();
    }

    @Test
    void grantedButNotRequestedPermitIsEmittedOnRequest() {
        StepVerifier.create(SemaReactor.acquire(semaphore, 3), 0)
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(10))
                .thenRequest(1)
                .assertNext(Permit::close)
                .verifyComplete();
        assertAllBack();
    }

    @Test
    void cancelWhileQueuedWithdrawsTheRequest() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        Disposable d = SemaReactor.acquire(semaphore, 2).subscribe(p -> {
            throw new AssertionError("granted after cancel");
        });
        awaitQueued(1);
        d.dispose();
        assertThat(semaphore.queueLength()).isZero();
        held.close();
        assertAllBack();
    }

    @Test
    void timeoutFailsWithTimeoutExceptionAndLeavesNothingQueued() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        StepVerifier.create(SemaReactor.acquire(semaphore, 1, Duration.ofMillis(50)))
                .expectError(TimeoutException.class)
                .verify(WAIT);
        assertThat(semaphore.queueLength()).isZero();
        held.close();
        assertAllBack();
    }

    @Test
    void zeroTimeoutOnlyTriesOnce() {
        StepVerifier.create(SemaReactor.acquire(semaphore, 4, Duration.ZERO))
                .assertNext(Permit::close).verifyComplete();
        Permit held = semaphore.tryAcquire(1).orElseThrow();
        StepVerifier.create(SemaReactor.acquire(semaphore, 4, Duration.ZERO))
                .expectError(TimeoutException.class).verify(WAIT);
        held.close();
        assertAllBack();
    }

    @Test
    void closedSemaphoreIsAnErrorSignal() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        Mono<Permit> waiting = SemaReactor.acquire(semaphore, 1);
        StepVerifier.create(waiting)
                .expectSubscription()
                .then(() -> awaitQueued(1))
                .then(semaphore::close)
                .expectError(SemaphoreClosedException.class)
                .verify(WAIT);
        StepVerifier.create(SemaReactor.acquire(semaphore, 1)).expectError(SemaphoreClosedException.class).verify(WAIT);
        held.close();
        assertThat(semaphore.availablePermits()).isEqualTo(4);
    }

    @Test
    void badArgumentsFailAtAssembly() {
        assertThatThrownBy(() -> SemaReactor.acquire(semaphore, 11))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("11").hasMessageContaining("maxPermits (10)").hasMessageContaining("test");
        assertThatThrownBy(() -> SemaReactor.acquire(semaphore, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1");
        assertThatThrownBy(() -> SemaReactor.acquire(semaphore, 1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> SemaReactor.acquire(null, 1)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> SemaReactor.withPermits(semaphore, 11))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("11");
        assertThatThrownBy(() -> SemaReactor.mapWeighted(Flux.just(1), semaphore, null, Mono::just))
                .isInstanceOf(NullPointerException.class);
        assertAllBack();
    }

    @Test
    void requestAboveTheLimitWithinTheCeilingWaitsForTheLimitToRise() {
        StepVerifier.create(SemaReactor.acquire(semaphore, 6))
                .expectSubscription()
                .then(() -> awaitQueued(1))
                .then(() -> semaphore.addPermits(2))
                .assertNext(Permit::close)
                .verifyComplete();
        assertThat(semaphore.availablePermits()).isEqualTo(6);
    }

    // ---------------------------------------------------------------- withPermits

    @Test
    void monoStaysAMonoAndFluxAFlux() {
        PermitOperator<Integer> op = SemaReactor.withPermits(semaphore, 1);
        assertThat(op.apply(Mono.just(1))).isInstanceOf(Mono.class);
        assertThat(op.apply(Flux.just(1, 2))).isInstanceOf(Flux.class);
        assertThat(op.apply(subscriber -> Flux.just(1).subscribe(subscriber))).isInstanceOf(Flux.class);
    }

    @Test
    void permitsAreHeldFromSubscriptionToCompletion() {
        AtomicInteger seen = new AtomicInteger(-1);
        Mono<Integer> work = Mono.fromCallable(() -> {
            seen.set((int) semaphore.availablePermits());
            return 42;
        });
        Mono<Integer> guarded = work.transformDeferred(SemaReactor.withPermits(semaphore, 3));
        assertThat(semaphore.availablePermits()).isEqualTo(4); // nothing at assembly
        StepVerifier.create(guarded).expectNext(42).verifyComplete();
        assertThat(seen.get()).isEqualTo(1);
        assertAllBack();
    }

    @Test
    void monoValueSeesThePermitsBack() {
        Integer v = Mono.just(7).transformDeferred(SemaReactor.withPermits(semaphore, 4))
                .doOnNext(x -> assertThat(semaphore.availablePermits()).isEqualTo(4))
                .block(WAIT);
        assertThat(v).isEqualTo(7);
        assertAllBack();
    }

    @Test
    void fluxHoldsUntilItCompletes() {
        TestPublisher<String> source = TestPublisher.create();
        StepVerifier.create(source.flux().transformDeferred(SemaReactor.withPermits(semaphore, 2)))
                .then(() -> source.next("a"))
                .expectNext("a")
                .then(() -> assertThat(semaphore.availablePermits()).isEqualTo(2))
                .then(() -> source.next("b"))
                .expectNext("b")
                .then(() -> assertThat(semaphore.availablePermits()).isEqualTo(2))
                .then(source::complete)
                .verifyComplete();
        assertAllBack();
    }

    @Test
    void errorGivesThePermitsBack() {
        StepVerifier.create(Flux.just(1, 2).concatWith(Mono.error(new IllegalStateException("boom")))
                        .transformDeferred(SemaReactor.withPermits(semaphore, 4)))
                .expectNext(1, 2)
                .expectErrorMessage("boom")
                .verify(WAIT);
        assertAllBack();
        StepVerifier.create(Mono.error(new IllegalStateException("boom"))
                .transformDeferred(SemaReactor.withPermits(semaphore, 4))).expectErrorMessage("boom").verify(WAIT);
        assertAllBack();
    }

    @Test
    void sourceIsNotSubscribedBeforeTheGrant() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        AtomicInteger subscribed = new AtomicInteger();
        Mono<String> work = Mono.fromCallable(() -> "done").doOnSubscribe(s -> subscribed.incrementAndGet());
        StepVerifier.create(work.transformDeferred(SemaReactor.withPermits(semaphore, 1)))
                .expectSubscription()
                .then(() -> awaitQueued(1))
                .then(() -> assertThat(subscribed).hasValue(0))
                .then(held::close)
                .expectNext("done")
                .verifyComplete();
        assertThat(subscribed).hasValue(1);
        assertAllBack();
    }

    @Test
    void cancelBeforeTheGrantWithdrawsTheRequest() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        AtomicInteger subscribed = new AtomicInteger();
        Disposable d = Mono.just(1).doOnSubscribe(s -> subscribed.incrementAndGet())
                .transformDeferred(SemaReactor.withPermits(semaphore, 2)).subscribe();
        awaitQueued(1);
        d.dispose();
        assertThat(semaphore.queueLength()).isZero();
        held.close();
        assertAllBack();
        assertThat(subscribed).hasValue(0);
    }

    @Test
    void cancelWhileTheSourceRunsGivesThePermitsBack() {
        Sinks.One<String> never = Sinks.one();
        AtomicInteger cancelled = new AtomicInteger();
        Disposable d = never.asMono().doOnCancel(cancelled::incrementAndGet)
                .transformDeferred(SemaReactor.withPermits(semaphore, 3)).subscribe();
        assertThat(semaphore.availablePermits()).isEqualTo(1);
        d.dispose();
        assertThat(cancelled).hasValue(1);
        assertAllBack();
        d.dispose(); // twice: released once
        assertAllBack();
    }

    @Test
    void cancelAfterTheGrantBeforeTheSourceIsSubscribed() {
        // the grant runs the subscriber's code (doOnSubscribe of the source) inline; it cancels from there
        AtomicReference<Disposable> ref = new AtomicReference<>();
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        AtomicInteger duringSubscribe = new AtomicInteger(-1);
        Mono<Integer> work = Mono.defer(() -> {
            ref.get().dispose(); // cancelled after the grant, while the source is being subscribed
            duringSubscribe.set((int) semaphore.availablePermits());
            return Mono.just(1);
        });
        ref.set(work.transformDeferred(SemaReactor.withPermits(semaphore, 2)).subscribe(v -> {
            throw new AssertionError("emitted after cancel");
        }));
        awaitQueued(1);
        held.close();
        assertThat(duringSubscribe).as("held until the source was told to cancel").hasValue(2);
        assertAllBack();
    }

    @Test
    void closedSemaphoreFailsTheSubscription() {
        semaphore.close();
        StepVerifier.create(Mono.just(1).transformDeferred(SemaReactor.withPermits(semaphore, 1)))
                .expectError(SemaphoreClosedException.class).verify(WAIT);
    }

    @Test
    void demandBeforeTheGrantIsPassedOn() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        StepVerifier.create(Flux.range(1, 10).transformDeferred(SemaReactor.withPermits(semaphore, 1)), 3)
                .expectSubscription()
                .then(() -> awaitQueued(1))
                .then(held::close)
                .expectNext(1, 2, 3)
                .expectNoEvent(Duration.ofMillis(10))
                .thenRequest(7)
                .expectNextCount(7)
                .verifyComplete();
        assertAllBack();
    }

    /** The work's own end is counted in doOnSuccess: a doFinally inside the guard runs after it has let go. */
    @Test
    void limitHoldsAcrossConcurrentSubscribers() {
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        Mono<Integer> work = Mono.defer(() -> {
            most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            return Mono.delay(Duration.ofMillis(2)).thenReturn(1).doOnSuccess(v -> inFlight.decrementAndGet());
        });
        Integer sum = Flux.range(0, 100)
                .flatMap(i -> work.transformDeferred(SemaReactor.withPermits(semaphore, 1)), 100)
                .reduce(0, Integer::sum).block(WAIT);
        assertThat(sum).isEqualTo(100);
        assertThat(most.get()).isBetween(1, 4);
        assertAllBack();
    }

    @Test
    void timedWorkHoldsItsPermitsForItsWholeDurationInVirtualTime() {
        Semaphore one = Semaphore.create(1);
        // assembled inside the supplier, so that Mono.delay and elapsed() take the virtual clock
        StepVerifier.withVirtualTime(() -> Flux.merge(
                                Mono.delay(Duration.ofHours(1)).thenReturn("first")
                                        .transformDeferred(SemaReactor.withPermits(one, 1)),
                                Mono.delay(Duration.ofHours(1)).thenReturn("second")
                                        .transformDeferred(SemaReactor.withPermits(one, 1)))
                        .elapsed())
                .expectSubscription()
                .thenAwait(Duration.ofMinutes(30))
                .then(() -> assertThat(one.queueLength()).isEqualTo(1)) // the second waits for the first
                .thenAwait(Duration.ofMinutes(60))
                .then(() -> assertThat(one.availablePermits()).isZero()) // the second holds it now
                .thenAwait(Duration.ofHours(1))
                // the second's hour starts when the first ends: it waited without a timer of its own
                .expectNextMatches(t -> t.getT1() == Duration.ofHours(1).toMillis() && t.getT2().equals("first"))
                .expectNextMatches(t -> t.getT1() == Duration.ofHours(1).toMillis() && t.getT2().equals("second"))
                .expectComplete()
                .verify(WAIT);
        assertThat(one.availablePermits()).isEqualTo(1);
    }

    @Test
    void retryAcquiresAgain() {
        AtomicInteger attempts = new AtomicInteger();
        Mono<Integer> flaky = Mono.fromCallable(() -> {
            assertThat(semaphore.availablePermits()).isEqualTo(0);
            if (attempts.incrementAndGet() < 3) {
                throw new IllegalStateException("again");
            }
            return 1;
        });
        StepVerifier.create(flaky.transformDeferred(SemaReactor.withPermits(semaphore, 4)).retry(5))
                .expectNext(1).verifyComplete();
        assertThat(attempts).hasValue(3);
        assertAllBack();
    }

    // ---------------------------------------------------------------- grant against cancel

    /** Runs {@code a} and {@code b} at once on two threads, many times over, checking that every permit came back. */
    private void race(int rounds, java.util.function.Function<Permit, Runnable> setUp, Runnable afterRound)
            throws Exception {
        java.util.concurrent.ExecutorService two = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < rounds; i++) {
                Permit held = semaphore.tryAcquire(4).orElseThrow();
                Runnable cancel = setUp.apply(held);
                java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
                java.util.concurrent.Future<?> release = two.submit(() -> {
                    start.await();
                    held.close();
                    return null;
                });
                java.util.concurrent.Future<?> dispose = two.submit(() -> {
                    start.await();
                    cancel.run();
                    return null;
                });
                release.get(10, TimeUnit.SECONDS);
                dispose.get(10, TimeUnit.SECONDS);
                afterRound.run();
                assertThat(semaphore.availablePermits()).as("round %d", i).isEqualTo(4);
                assertThat(semaphore.queueLength()).as("round %d", i).isZero();
            }
        } finally {
            two.shutdownNow();
        }
    }

    /**
     * A subscriber that closes every permit it receives, also one that arrives as it cancels (Reactor allows
     * signals after a cancel; the lambda subscribers of {@code subscribe(...)} drop such a value to
     * {@code Hooks.onNextDropped}, which is why the permit of a racing cancel may be the subscriber's).
     */
    private static final class ClosingSubscriber implements reactor.core.CoreSubscriber<Permit> {
        private volatile org.reactivestreams.Subscription subscription;

        @Override
        public void onSubscribe(org.reactivestreams.Subscription s) {
            subscription = s;
            s.request(1);
        }

        @Override
        public void onNext(Permit permit) {
            permit.close();
        }

        @Override
        public void onError(Throwable t) {
        }

        @Override
        public void onComplete() {
        }

        void cancel() {
            subscription.cancel();
        }
    }

    @Test
    void acquireGrantRacingWithCancelLeavesNothingHeld() throws Exception {
        race(2_000, held -> {
            ClosingSubscriber subscriber = new ClosingSubscriber();
            SemaReactor.acquire(semaphore, 2).subscribe(subscriber);
            awaitQueued(1);
            return subscriber::cancel;
        }, () -> { });
    }

    @Test
    void withPermitsGrantRacingWithCancelGivesBackOnce() throws Exception {
        race(2_000, held -> {
            Disposable d = Mono.just(1).concatWith(Mono.never())
                    .transformDeferred(SemaReactor.withPermits(semaphore, 3)).subscribe();
            awaitQueued(1);
            return d::dispose;
        }, () -> { });
    }

    // ---------------------------------------------------------------- mapWeighted

    @Test
    void mapWeightedKeepsSourceOrderAndTheLimit() {
        AtomicInteger weightInFlight = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        Flux<Integer> out = SemaReactor.mapWeighted(Flux.range(1, 60), semaphore, i -> i % 4 + 1,
                i -> Mono.defer(() -> {
                    most.accumulateAndGet(weightInFlight.addAndGet(i % 4 + 1), Math::max);
                    return Mono.delay(Duration.ofMillis(60 - i)).thenReturn(i * 10)
                            .doOnSuccess(v -> weightInFlight.addAndGet(-(i % 4 + 1)));
                }));
        List<Integer> expected = new ArrayList<>();
        for (int i = 1; i <= 60; i++) {
            expected.add(i * 10);
        }
        StepVerifier.create(out).expectNextSequence(expected)
                .verifyComplete();
        assertThat(most.get()).isBetween(1, 4);
        assertAllBack();
    }

    @Test
    void mapWeightedCallsTheMapperOnlyOnceGranted() {
        Permit held = semaphore.tryAcquire(4).orElseThrow();
        AtomicInteger mapped = new AtomicInteger();
        StepVerifier.create(SemaReactor.mapWeighted(Flux.just(1, 2), semaphore, i -> 1, i -> {
                    mapped.incrementAndGet();
                    return Mono.just(i);
                }))
                .expectSubscription()
                .then(() -> awaitQueued(1))
                .then(() -> assertThat(mapped).hasValue(0))
                .then(held::close)
                .expectNext(1, 2)
                .verifyComplete();
        assertAllBack();
    }

    @Test
    void mapWeightedOversizedElementIsAnErrorNamingItsWeight() {
        StepVerifier.create(SemaReactor.mapWeighted(Flux.just(1, 12, 3), semaphore, i -> i, Mono::just))
                .expectNext(1)
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("weighs 12 permits").hasMessageContaining("maxPermits (10)"))
                .verify(WAIT);
        assertAllBack();
    }

    @Test
    void mapWeightedInnerErrorFailsTheFluxAndGivesEverythingBack() {
        Sinks.One<Integer> never = Sinks.one();
        StepVerifier.create(SemaReactor.mapWeighted(Flux.range(1, 10), semaphore, i -> 1,
                        i -> i == 3 ? Mono.<Integer>error(new IllegalStateException("inner " + i))
                                : i < 3 ? Mono.just(i) : never.asMono()))
                .expectNext(1, 2)
                .expectErrorMessage("inner 3")
                .verify(WAIT);
        assertAllBack();
    }

    @Test
    void mapWeightedCancelGivesEverythingBack() {
        Sinks.One<Integer> never = Sinks.one();
        StepVerifier.create(SemaReactor.mapWeighted(Flux.range(1, 100), semaphore, i -> 2, i -> never.asMono()))
                .expectSubscription()
                .then(() -> assertThat(semaphore.availablePermits()).isZero())
                .then(() -> awaitQueued(1)) // one flow's requests queue one at a time
                .thenCancel()
                .verify(WAIT);
        assertAllBack();
    }

    @Test
    void mapWeightedDoesNotRequestTheWholeSource() {
        AtomicInteger requested = new AtomicInteger();
        Flux<Integer> source = Flux.range(0, 1_000_000).doOnRequest(n -> requested.addAndGet((int) Math.min(n, 1 << 30)));
        StepVerifier.create(SemaReactor.mapWeighted(source, semaphore, i -> 1, Mono::just), 5)
                .expectNextCount(5)
                .thenCancel()
                .verify(WAIT);
        assertThat(requested.get()).isLessThanOrEqualTo(512);
        assertAllBack();
    }

    @Test
    void mapWeightedFlowsShareTheLimit() {
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        Flux<Integer> flow = SemaReactor.mapWeighted(Flux.range(0, 40), semaphore, i -> 1 + i % 2,
                i -> Mono.defer(() -> {
                    most.accumulateAndGet(inFlight.addAndGet(1 + i % 2), Math::max);
                    return Mono.delay(Duration.ofMillis(1)).thenReturn(i)
                            .doOnSuccess(v -> inFlight.addAndGet(-(1 + i % 2)));
                }));
        Long total = Flux.merge(flow, flow, flow).count().block(WAIT);
        assertThat(total).isEqualTo(120);
        assertThat(most.get()).isBetween(1, 4);
        assertAllBack();
    }

    @Test
    void mapWeightedGrantsOneFlowInSourceOrderEvenOnABargingSemaphore() {
        // Were the third element's request made at once, it would barge past the second (4 permits, queued
        // behind the first's 3) with the 1 free permit, fill its buffer while the second is next to emit, and hold
        // that permit for good: the second could then never have its 4.
        Semaphore barging = Semaphore.builder().permits(4).fairness(dev.sema.Fairness.BARGING).build();
        Sinks.Many<Integer> first = Sinks.many().unicast().onBackpressureBuffer();
        StepVerifier.create(SemaReactor.mapWeighted(Flux.just(3, 4, 1), barging, i -> i,
                        i -> i == 3 ? first.asFlux() : Flux.range(0, 100).map(x -> i)))
                .expectSubscription()
                .then(() -> {
                    assertThat(barging.queueLength()).isEqualTo(1); // the second
                    assertThat(barging.availablePermits()).as("the third waits for its turn").isEqualTo(1);
                    first.tryEmitComplete();
                })
                .expectNextCount(200)
                .expectComplete()
                .verify(WAIT);
        assertThat(barging.availablePermits()).isEqualTo(4);
        assertThat(barging.queueLength()).isZero();
    }

    @Test
    void mapWeightedGrantCascadeDoesNotOverflowTheStack() {
        Semaphore wide = Semaphore.create(1_000);
        Permit all = wide.tryAcquire(1_000).orElseThrow();
        StepVerifier.create(SemaReactor.mapWeighted(Flux.range(0, 100_000), wide, i -> i % 2,
                        i -> i % 3 == 0 ? Mono.just(i)
                                : Mono.just(i).publishOn(reactor.core.scheduler.Schedulers.parallel())))
                .expectSubscription()
                .then(all::close) // every waiting element's turn comes in one release
                .expectNextCount(100_000)
                .expectComplete()
                .verify(WAIT);
        assertThat(wide.availablePermits()).isEqualTo(1_000);
    }

    @Test
    void mapWeightedBackpressureAndMultiValueInners() {
        StepVerifier.create(SemaReactor.mapWeighted(Flux.range(0, 5), semaphore, i -> 2,
                        i -> Flux.range(i * 100, 50)), 10)
                .expectNextCount(10)
                .thenRequest(Long.MAX_VALUE)
                .expectNextCount(240)
                .verifyComplete();
        assertAllBack();
    }
}
