package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class AwaitIdleTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void noThreadLeftBehind() throws InterruptedException {
        attempts.close();
    }

    /** The two forms of awaitIdle, as attempts. */
    enum IdleStyle {
        BLOCKING, ASYNC;

        Attempt<Void> start(Attempts attempts, Semaphore s) {
            return this == BLOCKING
                    ? attempts.blocking("awaitIdle#" + attempts.nextId(), () -> {
                        s.awaitIdle();
                        return null;
                    })
                    : attempts.async("awaitIdleAsync#" + attempts.nextId(), s.awaitIdleAsync());
        }

        Attempt<Void> startQueued(Attempts attempts, Semaphore s) {
            return attempts.queued(s, () -> start(attempts, s));
        }
    }

    @ParameterizedTest
    @EnumSource(IdleStyle.class)
    void completesAtOnceWhenNothingIsHeldAndNobodyWaits(IdleStyle style) throws Exception {
        Semaphore s = Semaphore.create(3);
        assertThat(style.start(attempts, s).join()).isNull();
        s.acquire(2).close();
        Permit empty = s.acquire(0); // an empty permit holds nothing
        assertThat(style.start(attempts, s).join()).isNull();
        empty.close();
        Semaphore none = Semaphore.create(0);
        assertThat(style.start(attempts, none).join()).isNull();
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(IdleStyle.class)
    void waitsUntilEveryHeldPermitIsBackAndTakesNone(IdleStyle style) throws Exception {
        Semaphore s = Semaphore.create(4);
        Permit a = s.acquire(1);
        Permit b = s.acquire(2);
        Attempt<Void> idle = style.startQueued(attempts, s);
        assertThat(s.queueLength()).as("awaitIdle callers are counted").isEqualTo(1);
        a.close();
        b.release(1);
        assertThat(s.queueLength()).isEqualTo(1);
        b.close();
        idle.join();
        assertThat(s.queueLength()).isZero();
        assertThat(s.availablePermits()).as("awaitIdle takes no permits").isEqualTo(4);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void waitsForWaitersQueuedBeforeIt(Fairness fairness) throws Exception {
        for (IdleStyle style : IdleStyle.values()) {
            Semaphore s = Semaphore.builder().permits(2).fairness(fairness).build();
            Permit held = s.acquire(2);
            CompletableFuture<Permit> before = s.acquireAsync(2);
            Attempt<Void> idle = style.startQueued(attempts, s);
            assertThat(s.queueLength()).isEqualTo(2);
            held.close();
            assertThat(before).isCompleted(); // served first...
            assertThat(s.queueLength()).isEqualTo(1); // ...and the idle waiter now waits for its permits
            before.join().close();
            idle.join();
            assertThat(s.queueLength()).isZero();
            checkInvariants(s);
        }
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void newArrivalsQueueBehindItInBothFairnessModes(AcquireStyle arrivalStyle) throws Exception {
        for (Fairness fairness : Fairness.values()) {
            Semaphore s = Semaphore.builder().permits(3).fairness(fairness).build();
            Permit held = s.acquire(1); // 2 free
            CompletableFuture<Void> idle = s.awaitIdleAsync();
            assertThat(idle).isNotDone();
            assertThat(s.tryAcquire(1)).as(fairness + ": tryAcquire behind awaitIdle").isEmpty();
            assertThatThrownBy(() -> s.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
            Attempt<Permit> arrival = arrivalStyle.startQueued(attempts, s, 1);
            assertThat(s.queueLength()).isEqualTo(2);
            assertThat(s.availablePermits()).isEqualTo(2);
            held.close();
            assertThat(idle).isCompleted();
            arrival.join().close();
            assertThat(s.availablePermits()).isEqualTo(3);
            assertThat(s.queueLength()).isZero();
            checkInvariants(s);
        }
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void zeroRequestsAreNotHeldBackByIt(Fairness fairness) throws Exception {
        Semaphore s = Semaphore.builder().permits(3).fairness(fairness).build();
        Permit held = s.acquire(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        assertThat(s.acquire(0).permits()).isZero();
        assertThat(s.tryAcquire(0)).isPresent();
        assertThat(s.acquireAsync(0)).isCompleted();
        held.close();
        assertThat(idle).isCompleted();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void cancellingTheAsyncFormWithdrawsItAndLetsTheArrivalsBehindRun(Fairness fairness) throws Exception {
        Semaphore s = Semaphore.builder().permits(3).fairness(fairness).build();
        Permit held = s.acquire(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        CompletableFuture<Permit> arrival = s.acquireAsync(2);
        assertThat(arrival).isNotDone();
        assertThat(idle.cancel(false)).isTrue();
        assertThat(arrival).as("served as soon as the idle waiter left the head").isCompleted();
        assertThat(s.queueLength()).isZero();
        // with no idle waiter queued, tryAcquire works again
        arrival.join().close();
        assertThat(s.tryAcquire(2)).isPresent().get().satisfies(Permit::close);
        held.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void cancellingAnIdleWaiterBehindTheHeadLeavesTheRestQueued() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> head = s.acquireAsync(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        CompletableFuture<Permit> tail = s.acquireAsync(1);
        idle.cancel(false);
        assertThat(s.queueLength()).isEqualTo(2);
        held.close();
        assertThat(head).isCompleted();
        assertThat(tail).isCompleted();
        head.join().close();
        tail.join().close();
        checkInvariants(s);
    }

    @Test
    void interruptingTheBlockingFormThrowsClearsTheFlagAndWithdrawsIt() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(1);
        Attempt<Void> idle = IdleStyle.BLOCKING.startQueued(attempts, s);
        CompletableFuture<Permit> arrival = s.acquireAsync(1);
        assertThat(arrival).isNotDone();
        Waiting.untilParked(idle.thread);
        idle.thread.interrupt();
        assertThat(idle.failure()).isInstanceOf(InterruptedException.class);
        assertThat(idle.interruptedAfter()).isFalse();
        Waiting.until("arrival served", arrival::isDone);
        assertThat(s.queueLength()).isZero();
        arrival.join().close();
        held.close();
        checkInvariants(s);
    }

    @Test
    void cancelledIdleFutureReportsCancellation() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        idle.cancel(true);
        assertThat(Attempt.async("idle", idle).failure()).isInstanceOf(CancellationException.class);
        held.close();
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void waitsBehindAnOversizedHeadEvenWithNothingHeld() {
        Semaphore s = Semaphore.builder().permits(1).maxPermits(4).build();
        CompletableFuture<Permit> oversized = s.acquireAsync(4);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        assertThat(idle).isNotDone();
        assertThat(s.queueLength()).isEqualTo(2);
        oversized.cancel(false);
        assertThat(idle).isCompleted();
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void forgettingTheLastHeldPermitCompletesIt() throws Exception {
        Semaphore s = Semaphore.create(3);
        Permit held = s.acquire(2);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        held.forget();
        assertThat(idle).isCompleted();
        assertThat(s.permits()).isEqualTo(1);
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void waitsWhileAvailableIsNegative() throws Exception {
        Semaphore s = Semaphore.create(3);
        Permit held = s.acquire(3);
        s.setPermits(0);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        held.release(2);
        assertThat(idle).isNotDone();
        held.close();
        assertThat(idle).isCompleted();
        assertThat(s.availablePermits()).isZero();
        checkInvariants(s);
    }

    @Test
    void severalIdleWaitersCompleteTogether() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire();
        CompletableFuture<Void> a = s.awaitIdleAsync();
        Attempt<Void> b = IdleStyle.BLOCKING.startQueued(attempts, s);
        CompletableFuture<Void> c = s.awaitIdleAsync();
        assertThat(s.queueLength()).isEqualTo(3);
        held.close();
        assertThat(a).isCompleted();
        assertThat(c).isCompleted();
        b.join();
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void waitsForPermitsHeldOnOtherThreadsAndWorkQueuedBehindItDoesNotDelayIt() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        CompletableFuture<Permit> behind = s.acquireAsync(1);
        Attempt<Void> releaser = attempts.blocking("releaser", () -> {
            held.close();
            return null;
        });
        releaser.join();
        assertThat(idle).isCompleted();
        assertThat(behind).isCompleted(); // served right after the idle waiter left the head
        behind.join().close();
        checkInvariants(s);
    }
}
