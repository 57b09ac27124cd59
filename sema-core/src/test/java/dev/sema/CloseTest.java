package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class CloseTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void noThreadLeftBehind() throws InterruptedException {
        attempts.close();
    }

    @Test
    void closeIsIdempotent() {
        Semaphore s = Semaphore.create(2);
        assertThat(s.isClosed()).isFalse();
        s.close();
        assertThat(s.isClosed()).isTrue();
        s.close();
        assertThat(s.isClosed()).isTrue();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void queuedWaitersOfEveryStyleFailWithSemaphoreClosedException(Fairness fairness) {
        Semaphore s = Semaphore.builder().permits(2).fairness(fairness).name("closing").build();
        Permit held = s.tryAcquire(2).orElseThrow();
        AcquireStyle[] styles = AcquireStyle.values();
        List<Attempt<Permit>> waiters = new ArrayList<>();
        for (int i = 0; i < styles.length; i++) {
            waiters.add(styles[i].startQueued(attempts, s, 1 + i % 2));
        }
        for (Attempt<Permit> w : waiters) {
            if (w.isBlocking()) {
                Waiting.untilParked(w.thread);
            }
        }
        s.close();
        assertThat(s.queueLength()).isZero();
        for (Attempt<Permit> w : waiters) {
            if (!w.isBlocking()) {
                assertThat(w.future).as("%s failed by close() before it returns", w).isCompletedExceptionally();
            }
            assertThat(w.failure()).as(w.label).isInstanceOf(SemaphoreClosedException.class)
                    .hasMessageContaining("closing");
        }
        // the held permits are unaffected and can still be released
        assertThat(held.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isZero();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(s.permits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void closeDoesNotInterruptOrLeaveTheInterruptStatus() {
        Semaphore s = Semaphore.create(1);
        Permit held = s.tryAcquire().orElseThrow();
        Attempt<Permit> w = AcquireStyle.BLOCKING.startQueued(attempts, s, 1);
        s.close();
        assertThat(w.failure()).isInstanceOf(SemaphoreClosedException.class);
        assertThat(w.interruptedAfter()).isFalse();
        held.close();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void everyLaterAcquireFailsIncludingTryAcquireAndZero(Fairness fairness) {
        Semaphore s = Semaphore.builder().permits(5).fairness(fairness).name("shut").build();
        s.close();
        ThrowingCallable[] calls = {
            () -> s.acquire(),
            () -> s.acquire(2),
            () -> s.acquire(0),
            () -> s.acquire(2, Duration.ofSeconds(5)),
            () -> s.acquire(2, Duration.ZERO),
            () -> s.acquire(0, Duration.ZERO),
            () -> s.tryAcquire(),
            () -> s.tryAcquire(2),
            () -> s.tryAcquire(0),
            () -> s.withPermits(1, () -> {
                throw new AssertionError("action must not run");
            }),
            () -> s.withPermits(0, () -> {
                throw new AssertionError("action must not run");
            }),
        };
        for (ThrowingCallable call : calls) {
            assertThatThrownBy(call).isInstanceOf(SemaphoreClosedException.class).hasMessageContaining("shut");
        }
        assertThat(s.availablePermits()).isEqualTo(5);
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void asyncAcquireOnAClosedSemaphoreReturnsAFailedFutureInsteadOfThrowing() {
        Semaphore s = Semaphore.builder().permits(5).name("shut").build();
        s.close();
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<?>[] futures = new CompletableFuture<?>[] {
            s.acquireAsync(),
            s.acquireAsync(2),
            s.acquireAsync(0),
            s.acquireAsync(2, Duration.ofSeconds(5)),
            s.acquireAsync(2, Duration.ZERO),
            s.acquireAsync(0, Duration.ZERO),
            s.withPermitsAsync(1, () -> {
                ran.set(true);
                return CompletableFuture.completedFuture(1);
            }),
        };
        for (CompletableFuture<?> f : futures) {
            assertThat(f).isCompletedExceptionally();
            assertThat(Attempt.async("f", f).failure()).isInstanceOf(SemaphoreClosedException.class)
                    .hasMessageContaining("shut");
        }
        assertThat(ran).isFalse();
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void programmingErrorsAreStillThrownOnAClosedSemaphore() {
        Semaphore s = Semaphore.create(5);
        s.close();
        assertThatThrownBy(() -> s.acquire(6)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.acquireAsync(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.tryAcquire(6)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.acquireAsync(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> s.withPermits(1, null)).isInstanceOf(NullPointerException.class);
        checkInvariants(s);
    }

    @Test
    void heldPermitsStillReleaseAndCountsKeepReporting() throws Exception {
        Semaphore s = Semaphore.builder().permits(5).maxPermits(8).build();
        Permit a = s.acquire(2);
        Permit b = s.acquire(1);
        s.close();
        assertThat(s.permits()).isEqualTo(5);
        assertThat(s.availablePermits()).isEqualTo(2);
        a.release(1);
        assertThat(s.availablePermits()).isEqualTo(3);
        Permit c = a.split(1);
        c.merge(b);
        assertThat(c.permits()).isEqualTo(2);
        c.close();
        c.close();
        a.close();
        assertThat(s.availablePermits()).isEqualTo(5);
        assertThat(s.permits()).isEqualTo(5);
        assertThat(s.maxPermits()).isEqualTo(8);
        checkInvariants(s);
    }

    @Test
    void forgettingAfterCloseStillLowersTheLimit() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit a = s.acquire(2);
        s.close();
        a.forget();
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void releaseAfterCloseGrantsNothing() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> w = s.acquireAsync(1);
        s.close();
        assertThat(w).isCompletedExceptionally();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void awaitIdleIsNotFailedByClose() throws Exception {
        Semaphore s = Semaphore.create(3);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> waiter = s.acquireAsync(3);
        CompletableFuture<Void> idleAsync = s.awaitIdleAsync();
        Attempt<Void> idleBlocking = attempts.queued(s, () -> attempts.blocking("awaitIdle", () -> {
            s.awaitIdle();
            return null;
        }));
        assertThat(s.queueLength()).isEqualTo(3);
        s.close();
        assertThat(waiter).isCompletedExceptionally();
        assertThat(s.queueLength()).as("the idle waiters stay queued").isEqualTo(2);
        assertThat(idleAsync).isNotDone();
        idleBlocking.assertPending();
        held.release(1);
        assertThat(idleAsync).isNotDone();
        assertThat(s.queueLength()).isEqualTo(2);
        held.close();
        assertThat(idleAsync).isCompleted();
        assertThat(idleBlocking.join()).isNull();
        assertThat(s.queueLength()).isZero();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void awaitIdleOnAClosedSemaphoreCompletesOnceNothingIsHeld() throws Exception {
        Semaphore s = Semaphore.create(3);
        s.close();
        s.awaitIdle();
        assertThat(s.awaitIdleAsync()).isCompleted();

        Semaphore t = Semaphore.create(3);
        Permit held = t.acquire();
        t.close();
        CompletableFuture<Void> idle = t.awaitIdleAsync();
        assertThat(idle).isNotDone();
        held.close();
        assertThat(idle).isCompleted();
        checkInvariants(s);
        checkInvariants(t);
    }

    @Test
    void closeWhileIdleWaiterIsBehindFailedWaitersCompletesItWhenNothingIsHeld() throws Exception {
        // nothing held, but an oversized waiter keeps the idle waiter queued until close removes it
        Semaphore s = Semaphore.builder().permits(1).maxPermits(5).build();
        CompletableFuture<Permit> oversized = s.acquireAsync(5);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        assertThat(idle).isNotDone();
        s.close();
        assertThat(oversized).isCompletedExceptionally();
        assertThat(idle).isCompleted();
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void closeRacingAcquiresLeavesNoWaiterBehindAndLosesNoPermits() throws Exception {
        for (int i = 0; i < 100; i++) {
            Semaphore s = Semaphore.create(2);
            Permit held = s.acquire(2);
            CompletableFuture<?>[] waiters = new CompletableFuture<?>[20];
            Attempt<Void> closer = attempts.blocking("closer", () -> {
                s.close();
                return null;
            });
            for (int j = 0; j < waiters.length; j++) {
                waiters[j] = s.acquireAsync(1);
            }
            closer.join();
            for (CompletableFuture<?> f : waiters) {
                assertThat(f).isCompletedExceptionally();
            }
            assertThat(s.queueLength()).isZero();
            held.close();
            assertThat(s.availablePermits()).isEqualTo(2);
            checkInvariants(s);
        }
    }

    @Test
    void toleratesCloseFromAContinuationOfAGrant() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> first = s.acquireAsync(1);
        CompletableFuture<Permit> second = s.acquireAsync(1);
        first.thenAccept(p -> s.close());
        held.close();
        assertThat(first).isCompleted();
        assertThat(second).isCompletedExceptionally();
        first.join().close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }
}
