package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class CancellationTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void noThreadLeftBehind() throws InterruptedException {
        attempts.close();
        assertThat(Thread.interrupted()).as("test thread left interrupted").isFalse();
    }

    /** Every blocking entry point, called on the test thread. */
    enum BlockingCall {
        ACQUIRE_ONE, ACQUIRE_N, ACQUIRE_TIMED, ACQUIRE_ZERO_TIMEOUT, ACQUIRE_ZERO_PERMITS, AWAIT_IDLE, WITH_PERMITS;

        void call(Semaphore s) throws Exception {
            switch (this) {
                case ACQUIRE_ONE -> s.acquire().close();
                case ACQUIRE_N -> s.acquire(2).close();
                case ACQUIRE_TIMED -> s.acquire(2, AcquireStyle.LONG).close();
                case ACQUIRE_ZERO_TIMEOUT -> s.acquire(2, Duration.ZERO).close();
                case ACQUIRE_ZERO_PERMITS -> s.acquire(0).close();
                case AWAIT_IDLE -> s.awaitIdle();
                case WITH_PERMITS -> s.withPermits(2, () -> {
                    throw new AssertionError("action must not run");
                });
            }
        }
    }

    @ParameterizedTest
    @EnumSource(BlockingCall.class)
    void interruptOnEntryThrowsAndClearsTheFlag(BlockingCall call) {
        Semaphore s = Semaphore.create(3); // everything is free: the interrupt alone decides
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> call.call(s)).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).as("interrupt status cleared").isFalse();
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(value = AcquireStyle.class, names = {"BLOCKING", "BLOCKING_VIRTUAL", "TIMED"})
    void interruptWhileWaitingThrowsClearsTheFlagAndLeavesTheQueue(AcquireStyle style) throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        Attempt<Permit> a = style.startQueued(attempts, s, 1);
        Waiting.untilParked(a.thread);
        a.thread.interrupt();
        assertThat(a.failure()).isInstanceOf(InterruptedException.class);
        assertThat(a.interruptedAfter()).as("interrupt status cleared").isFalse();
        assertThat(s.queueLength()).isZero();
        assertThat(s.availablePermits()).isZero();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void interruptedWaiterBehindTheHeadLeavesWithoutDisturbingOthers() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        Attempt<Permit> head = AcquireStyle.BLOCKING.startQueued(attempts, s, 2);
        Attempt<Permit> middle = AcquireStyle.BLOCKING.startQueued(attempts, s, 1);
        Attempt<Permit> last = AcquireStyle.ASYNC.startQueued(attempts, s, 1);
        middle.thread.interrupt();
        assertThat(middle.failure()).isInstanceOf(InterruptedException.class);
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(s.availablePermits()).isZero();
        held.close();
        Permit ph = head.join();
        last.assertPending();
        ph.close();
        last.join().close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void cancelledHeadWaiterWakesNext(AcquireStyle style) throws Exception {
        Semaphore s = Semaphore.create(3);
        Permit held = s.acquire(2); // 1 free
        Attempt<Permit> head = style.startQueued(attempts, s, 3);
        Attempt<Permit> next = style.startQueued(attempts, s, 1);
        assertThat(s.queueLength()).isEqualTo(2);
        head.giveUp();
        Permit pn = next.join();
        assertThat(head.failure()).isInstanceOfAny(InterruptedException.class, CancellationException.class);
        assertThat(s.queueLength()).isZero();
        assertThat(s.availablePermits()).isZero();
        pn.close();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(value = AcquireStyle.class, names = {"TIMED", "ASYNC_TIMED"})
    void timedOutHeadWaiterWakesNext(AcquireStyle style) throws Exception {
        // The next waiter must queue behind the head before the head times out; on a slow machine a
        // short timeout may expire first, so the scenario is retried with longer ones.
        for (long millis = 30; ; millis *= 4) {
            assertThat(millis).as("the scenario could be set up").isLessThan(10_000);
            Duration timeout = Duration.ofMillis(millis);
            Semaphore s = Semaphore.create(3);
            Permit held = s.acquire(2); // 1 free
            Attempt<Permit> head = style == AcquireStyle.TIMED
                    ? attempts.blocking("timed head", () -> s.acquire(3, timeout))
                    : attempts.async("async timed head", s.acquireAsync(3, timeout));
            Waiting.until("head queued or timed out", () -> s.queueLength() == 1 || head.isDone());
            CompletableFuture<Permit> next = s.acquireAsync(1);
            boolean queuedBehindTheHead = !next.isDone();
            assertThat(head.failure()).isInstanceOf(TimeoutException.class);
            if (!queuedBehindTheHead) { // the head had already left: try again with more time
                Waiting.result(next).close();
                held.close();
                continue;
            }
            Permit pn = Waiting.result(next);
            assertThat(s.queueLength()).isZero();
            pn.close();
            held.close();
            assertThat(s.availablePermits()).isEqualTo(3);
            checkInvariants(s);
            return;
        }
    }

    @Test
    void blockingTimeoutThrowsTimeoutExceptionAndLeavesTheQueue() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        Attempt<Permit> a = attempts.blocking("timed", () -> s.acquire(1, Duration.ofMillis(20)));
        assertThat(a.failure()).isInstanceOf(TimeoutException.class).hasMessageContaining(s.name());
        assertThat(a.interruptedAfter()).isFalse();
        assertThat(s.queueLength()).isZero();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void asyncTimeoutFailsTheFutureWithTimeoutException() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> f = s.acquireAsync(1, Duration.ofMillis(20));
        assertThat(Attempt.async("async timed", f).failure()).isInstanceOf(TimeoutException.class);
        assertThat(s.queueLength()).isZero();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    /** The ways anyone may complete an async waiter's future from outside. */
    enum Withdrawal {
        CANCEL, OR_TIMEOUT, COMPLETE_EXCEPTIONALLY, COMPLETE, COMPLETE_ON_TIMEOUT;

        void apply(CompletableFuture<Permit> f) {
            switch (this) {
                case CANCEL -> assertThat(f.cancel(false)).isTrue();
                case OR_TIMEOUT -> f.orTimeout(1, TimeUnit.MILLISECONDS);
                case COMPLETE_EXCEPTIONALLY -> assertThat(f.completeExceptionally(new IllegalStateException("gave up")))
                        .isTrue();
                case COMPLETE -> assertThat(f.complete(null)).isTrue();
                case COMPLETE_ON_TIMEOUT -> f.completeOnTimeout(null, 1, TimeUnit.MILLISECONDS);
            }
        }

        void assertOutcome(CompletableFuture<Permit> f) {
            Waiting.until(this + " completed the future", f::isDone);
            switch (this) {
                case CANCEL -> assertThat(f).isCancelled();
                case OR_TIMEOUT -> assertThat(Attempt.async("f", f).failure()).isInstanceOf(TimeoutException.class);
                case COMPLETE_EXCEPTIONALLY -> assertThat(Attempt.async("f", f).failure())
                        .isInstanceOf(IllegalStateException.class).hasMessage("gave up");
                case COMPLETE, COMPLETE_ON_TIMEOUT -> assertThat(f).isCompletedWithValue(null);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Withdrawal.class)
    void completingTheFutureFromOutsideWithdrawsTheWaiter(Withdrawal how) throws Exception {
        for (boolean timed : new boolean[] {false, true}) {
            Semaphore s = Semaphore.create(3);
            Permit held = s.acquire(2); // 1 free
            CompletableFuture<Permit> head = timed ? s.acquireAsync(3, AcquireStyle.LONG) : s.acquireAsync(3);
            CompletableFuture<Permit> next = s.acquireAsync(1);
            assertThat(s.queueLength()).isEqualTo(2);
            how.apply(head);
            Waiting.until("the head withdrawn and the next served", next::isDone);
            how.assertOutcome(head);
            assertThat(s.queueLength()).isZero();
            next.join().close();
            held.close();
            assertThat(s.availablePermits()).isEqualTo(3);
            checkInvariants(s);
        }
    }

    @ParameterizedTest
    @EnumSource(Withdrawal.class)
    void withdrawnWaiterBehindTheHeadGetsNothing(Withdrawal how) throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> head = s.acquireAsync(2);
        CompletableFuture<Permit> middle = s.acquireAsync(1);
        CompletableFuture<Permit> last = s.acquireAsync(1);
        how.apply(middle);
        Waiting.untilQueued(s, 2);
        how.assertOutcome(middle);
        assertThat(head).isNotDone();
        assertThat(last).isNotDone();
        held.close();
        assertThat(head).isCompleted();
        head.join().close();
        assertThat(last).isCompleted();
        last.join().close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void cancellingAGrantedFutureChangesNothing() {
        Semaphore s = Semaphore.create(2);
        CompletableFuture<Permit> f = s.acquireAsync(1);
        assertThat(f.cancel(true)).isFalse();
        assertThat(f.completeExceptionally(new RuntimeException())).isFalse();
        assertThat(s.availablePermits()).isEqualTo(1);
        f.join().close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void cancellingAFutureGrantedFromTheQueueChangesNothing() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> f = s.acquireAsync(1);
        held.close();
        assertThat(f).isCompleted();
        assertThat(f.cancel(false)).isFalse();
        assertThat(s.availablePermits()).isZero();
        f.join().close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void timeoutOfZeroOrLessBehavesLikeTryAcquire() throws Exception {
        for (Duration none : new Duration[] {Duration.ZERO, Duration.ofNanos(-1), Duration.ofDays(-1),
                Duration.ofSeconds(Long.MIN_VALUE)}) {
            Semaphore s = Semaphore.create(3);
            // free and nobody queued: taken at once
            Permit p = s.acquire(2, none);
            assertThat(p.permits()).isEqualTo(2);
            Permit q = Waiting.result(s.acquireAsync(1, none));
            assertThat(s.availablePermits()).isZero();
            // not enough: fails at once, never queues
            assertThatThrownBy(() -> s.acquire(1, none)).isInstanceOf(TimeoutException.class);
            CompletableFuture<Permit> f = s.acquireAsync(1, none);
            assertThat(Attempt.async("zero timeout", f).failure()).isInstanceOf(TimeoutException.class);
            assertThat(s.queueLength()).isZero();
            q.close();
            // FIFO: free but someone is queued: fails like tryAcquire
            CompletableFuture<Permit> waiter = s.acquireAsync(2);
            assertThat(s.availablePermits()).isEqualTo(1);
            assertThatThrownBy(() -> s.acquire(1, none)).isInstanceOf(TimeoutException.class);
            assertThat(Attempt.async("zero timeout", s.acquireAsync(1, none)).failure())
                    .isInstanceOf(TimeoutException.class);
            assertThat(s.queueLength()).isEqualTo(1);
            p.close();
            waiter.join().close();
            assertThat(s.availablePermits()).isEqualTo(3);
            checkInvariants(s);
        }
    }

    @Test
    void timeoutOfZeroBargesLikeTryAcquireUnderBarging() throws Exception {
        Semaphore s = Semaphore.builder().permits(3).fairness(Fairness.BARGING).build();
        Permit p = s.acquire(2);
        CompletableFuture<Permit> waiter = s.acquireAsync(2);
        Permit barged = s.acquire(1, Duration.ZERO);
        assertThat(s.availablePermits()).isZero();
        barged.close();
        s.acquireAsync(1, Duration.ZERO).join().close();
        p.close();
        waiter.join().close();
        checkInvariants(s);
    }

    @Test
    void nullTimeoutIsRejectedByTheCall() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire();
        assertThatThrownBy(() -> s.acquire(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> s.acquireAsync(1, null)).isInstanceOf(NullPointerException.class);
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThat(s.queueLength()).isZero();
        s.close();
        assertThatThrownBy(() -> s.acquire(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> s.acquireAsync(1, null)).isInstanceOf(NullPointerException.class);
        held.close();
        checkInvariants(s);
    }

    @Test
    void hugeTimeoutsDoNotOverflow() throws Exception {
        for (Duration huge : new Duration[] {Duration.ofSeconds(Long.MAX_VALUE, 999_999_999),
                ChronoUnit.FOREVER.getDuration(), Duration.ofDays(365L * 300), Duration.ofNanos(Long.MAX_VALUE)}) {
            Semaphore s = Semaphore.create(1);
            Permit held = s.acquire();
            Attempt<Permit> blocking = attempts.queued(s,
                    () -> attempts.blocking("acquire(1, " + huge + ")", () -> s.acquire(1, huge)));
            Attempt<Permit> async = attempts.queued(s,
                    () -> attempts.async("acquireAsync(1, " + huge + ")", s.acquireAsync(1, huge)));
            Waiting.untilParked(blocking.thread);
            assertThat(s.queueLength()).isEqualTo(2);
            held.close();
            blocking.join().close();
            async.join().close();
            assertThat(s.availablePermits()).isEqualTo(1);
            checkInvariants(s);
        }
    }

    @Test
    void grantRacingCancelNeverLosesPermits() throws Exception {
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            Semaphore s = Semaphore.create(2);
            int granted = 0;
            for (int i = 0; i < 1000; i++) {
                Permit held = s.acquire(2);
                CompletableFuture<Permit> f = i % 2 == 0 ? s.acquireAsync(2) : s.acquireAsync(2, AcquireStyle.LONG);
                CyclicBarrier start = new CyclicBarrier(2);
                Future<Boolean> cancel = other.submit(() -> {
                    start.await();
                    return f.cancel(false);
                });
                start.await();
                held.close();
                boolean cancelled = cancel.get();
                assertThat(f).isDone();
                if (cancelled) {
                    assertThat(f).isCancelled();
                } else {
                    f.join().close();
                    granted++;
                }
                assertThat(s.queueLength()).isZero();
                assertThat(s.availablePermits()).as("iteration %d", i).isEqualTo(2);
                checkInvariants(s);
            }
            assertThat(granted).isBetween(0, 1000); // both outcomes are legal; neither may lose permits
        } finally {
            other.shutdownNow();
            assertThat(other.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void grantRacingInterruptIsNeverBothNorNeither() throws Exception {
        Semaphore s = Semaphore.create(1);
        for (int i = 0; i < 200; i++) {
            Permit held = s.acquire();
            Attempt<Permit> a = AcquireStyle.values()[i % 3].startQueued(attempts, s, 1);
            a.thread.interrupt();
            held.close();
            a.joinThread();
            if (a.outcome.isCompletedExceptionally()) {
                assertThat(a.failure()).isInstanceOf(InterruptedException.class);
                assertThat(a.interruptedAfter()).as("IE thrown with the status cleared").isFalse();
            } else {
                assertThat(a.interruptedAfter()).as("permit returned with the status set again").isTrue();
                a.join().close();
            }
            assertThat(s.queueLength()).isZero();
            assertThat(s.availablePermits()).as("iteration %d", i).isEqualTo(1);
            checkInvariants(s);
        }
    }

    @Test
    void timeoutRacingGrantNeverLosesPermits() throws Exception {
        Semaphore s = Semaphore.create(1);
        for (int i = 0; i < 300; i++) {
            Permit held = s.acquire();
            CompletableFuture<Permit> f = s.acquireAsync(1, Duration.ofNanos(1000L * (i % 50)));
            held.close();
            Waiting.until("future done", f::isDone);
            if (!f.isCompletedExceptionally()) {
                f.join().close();
            } else {
                assertThat(Attempt.async("f", f).failure()).isInstanceOf(TimeoutException.class);
            }
            Waiting.untilQueued(s, 0);
            assertThat(s.availablePermits()).as("iteration %d", i).isEqualTo(1);
            checkInvariants(s);
        }
    }
    @Test
    void nonBlockingCallsIgnoreAndKeepTheInterruptStatus() throws Exception {
        Semaphore s = Semaphore.create(2);
        Thread.currentThread().interrupt();
        try {
            Permit a = s.tryAcquire().orElseThrow();
            Permit b = Waiting.result(s.acquireAsync(1));
            CompletableFuture<Permit> queued = s.acquireAsync(1);
            CompletableFuture<Void> idle = s.awaitIdleAsync();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
            a.close();
            assertThat(queued).isCompleted();
            b.close();
            queued.join().close();
            assertThat(idle).isCompleted();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
        checkInvariants(s);
    }

    @Test
    void closeRacingInterruptEndsTheWaitEitherWay() throws Exception {
        for (int i = 0; i < 100; i++) {
            Semaphore s = Semaphore.create(1);
            Permit held = s.acquire();
            Attempt<Permit> a = AcquireStyle.values()[i % 3].startQueued(attempts, s, 1);
            a.thread.interrupt();
            s.close();
            a.joinThread();
            assertThat(a.failure()).isInstanceOfAny(InterruptedException.class, SemaphoreClosedException.class);
            if (a.failure() instanceof InterruptedException) {
                assertThat(a.interruptedAfter()).isFalse();
            }
            assertThat(s.queueLength()).isZero();
            held.close();
            assertThat(s.availablePermits()).isEqualTo(1);
            checkInvariants(s);
        }
    }

    @Test
    void idleCompletionRacingInterruptIsNeverBothNorNeither() throws Exception {
        Semaphore s = Semaphore.create(1);
        for (int i = 0; i < 100; i++) {
            Permit held = s.acquire();
            Attempt<Void> a = attempts.queued(s, () -> attempts.blocking("awaitIdle", () -> {
                s.awaitIdle();
                return null;
            }));
            a.thread.interrupt();
            held.close();
            a.joinThread();
            if (a.outcome.isCompletedExceptionally()) {
                assertThat(a.failure()).isInstanceOf(InterruptedException.class);
                assertThat(a.interruptedAfter()).isFalse();
            } else {
                assertThat(a.interruptedAfter()).as("returned with the status set again").isTrue();
            }
            assertThat(s.queueLength()).isZero();
            assertThat(s.availablePermits()).isEqualTo(1);
            checkInvariants(s);
        }
    }
    @ParameterizedTest
    @EnumSource(Withdrawal.class)
    void withdrawnFutureHasLeftTheQueueWhenItsDependentsRun(Withdrawal how) throws Exception {
        futureHasLeftTheQueueBeforeItsDependentsRun(how::apply, 100);
    }

    @Test
    void asyncTimeoutHasLeftTheQueueWhenTheFutureFails() throws Exception {
        futureHasLeftTheQueueBeforeItsDependentsRun(null, 100);
    }

    /**
     * Once an async waiter's future has failed (or been completed) from outside, a dependent stage sees
     * the semaphore without it: not queued, and (FIFO) no longer keeping a newcomer from free permits.
     */
    private void futureHasLeftTheQueueBeforeItsDependentsRun(Consumer<CompletableFuture<Permit>> giveUp,
            int rounds) throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(1); // 1 free
        for (int i = 0; i < rounds; i++) {
            CompletableFuture<Permit> f = giveUp == null ? s.acquireAsync(2, Duration.ofNanos(100_000))
                    : s.acquireAsync(2);
            CompletableFuture<String> seen = f.handle((p, e) -> {
                int queued = s.queueLength();
                Optional<Permit> newcomer = s.tryAcquire(1);
                newcomer.ifPresent(Permit::close);
                return "queueLength " + queued + ", tryAcquire(1) " + (newcomer.isPresent() ? "took" : "empty");
            });
            if (giveUp != null) {
                giveUp.accept(f);
            }
            assertThat(Waiting.result(seen)).as("round %d", i).isEqualTo("queueLength 0, tryAcquire(1) took");
            checkInvariants(s);
        }
        held.close();
        assertThat(s.availablePermits()).isEqualTo(2);
    }
}
