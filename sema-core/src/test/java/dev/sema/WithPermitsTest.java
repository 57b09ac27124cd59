package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class WithPermitsTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void noThreadLeftBehind() throws InterruptedException {
        attempts.close();
    }

    @Test
    void withPermitsRunsTheActionHoldingThePermitsAndReturnsItsResult() throws Exception {
        Semaphore s = Semaphore.create(5);
        AtomicLong availableInside = new AtomicLong(-99);
        String result = s.withPermits(3, () -> {
            availableInside.set(s.availablePermits());
            return "done";
        });
        assertThat(result).isEqualTo("done");
        assertThat(availableInside).hasValue(2);
        assertThat(s.availablePermits()).isEqualTo(5);
        assertThat(s.<Object, RuntimeException>withPermits(0, () -> null)).isNull();
        checkInvariants(s);
    }

    @Test
    void withPermitsReleasesWhenTheActionThrows() {
        Semaphore s = Semaphore.create(2);
        IOException checked = new IOException("disk");
        assertThatThrownBy(() -> s.withPermits(2, () -> {
            throw checked;
        })).isSameAs(checked);
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThatThrownBy(() -> s.withPermits(1, () -> {
            throw new IllegalStateException("boom");
        })).isInstanceOf(IllegalStateException.class).hasMessage("boom");
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThatThrownBy(() -> s.withPermits(1, () -> {
            throw new StackOverflowError("deep");
        })).isInstanceOf(StackOverflowError.class);
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void withPermitsLetsTheActionThrowItsDeclaredCheckedException() {
        Semaphore s = Semaphore.create(1);
        try {
            s.<Void, IOException>withPermits(1, () -> {
                throw new IOException("declared");
            });
        } catch (IOException expected) {
            assertThat(expected).hasMessage("declared");
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void withPermitsRejectsBadArgumentsWithoutRunning() {
        Semaphore s = Semaphore.create(2);
        AtomicBoolean ran = new AtomicBoolean();
        assertThatThrownBy(() -> s.withPermits(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> s.withPermits(3, () -> ran.getAndSet(true)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.withPermits(-1, () -> ran.getAndSet(true)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(ran).isFalse();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void withPermitsWaitsForPermitsAndCanBeInterrupted() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        AtomicBoolean ran = new AtomicBoolean();
        Attempt<Boolean> waiting = attempts.queued(s, () -> attempts.blocking("withPermits",
                () -> s.withPermits(1, () -> ran.getAndSet(true))));
        Waiting.untilParked(waiting.thread);
        waiting.thread.interrupt();
        assertThat(waiting.failure()).isInstanceOf(InterruptedException.class);
        assertThat(ran).isFalse();

        Attempt<Long> served = attempts.queued(s, () -> attempts.blocking("withPermits",
                () -> s.withPermits(1, s::availablePermits)));
        held.close();
        assertThat(served.join()).isZero();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncHoldsThePermitsUntilTheStageCompletes() throws Exception {
        Semaphore s = Semaphore.create(3);
        CompletableFuture<String> work = new CompletableFuture<>();
        AtomicLong availableInside = new AtomicLong(-99);
        CompletableFuture<String> result = s.withPermitsAsync(2, () -> {
            availableInside.set(s.availablePermits());
            return work;
        });
        assertThat(availableInside).hasValue(1);
        assertThat(result).isNotDone();
        assertThat(s.availablePermits()).isEqualTo(1);
        AtomicLong availableAfter = new AtomicLong(-99);
        CompletableFuture<Void> observed = result.thenRun(() -> availableAfter.set(s.availablePermits()));
        work.complete("ok");
        assertThat(result).isCompletedWithValue("ok");
        observed.join();
        assertThat(availableAfter).as("released before the result completes").hasValue(3);
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncWaitsForPermitsThenRuns() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<Integer> result = s.withPermitsAsync(2, () -> {
            ran.set(true);
            return CompletableFuture.completedFuture(7);
        });
        assertThat(ran).isFalse();
        assertThat(s.queueLength()).isEqualTo(1);
        held.close();
        assertThat(result).isCompletedWithValue(7);
        assertThat(ran).isTrue();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncFailsAndReleasesWhenTheSupplierThrows() {
        Semaphore s = Semaphore.create(2);
        IllegalStateException boom = new IllegalStateException("boom");
        CompletableFuture<Object> result = s.withPermitsAsync(2, () -> {
            throw boom;
        });
        assertThat(Attempt.async("result", result).failure()).isSameAs(boom);
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncFailsWithNullPointerExceptionAndReleasesWhenTheSupplierReturnsNull() {
        Semaphore s = Semaphore.create(2);
        CompletableFuture<Object> result = s.withPermitsAsync(2, () -> null);
        assertThat(Attempt.async("result", result).failure()).isInstanceOf(NullPointerException.class);
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncFailsAndReleasesWhenTheStageFails() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(1);
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> result = s.withPermitsAsync(1, () -> work);
        assertThat(s.availablePermits()).isZero();
        IOException failure = new IOException("io");
        work.completeExceptionally(failure);
        Throwable seen = Attempt.async("result", result).failure();
        assertThat(seen.getCause() == failure || seen == failure).as("fails with the stage's failure: %s", seen)
                .isTrue();
        assertThat(s.availablePermits()).isEqualTo(1);
        held.close();
        checkInvariants(s);
    }

    @Test
    void cancellingTheResultWhileWaitingWithdrawsTheRequest() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit held = s.acquire(2);
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<Integer> result = s.withPermitsAsync(2, () -> {
            ran.set(true);
            return CompletableFuture.completedFuture(1);
        });
        CompletableFuture<Permit> behind = s.acquireAsync(1);
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(result.cancel(false)).isTrue();
        assertThat(s.queueLength()).isEqualTo(1);
        held.release(1);
        assertThat(behind).as("the next waiter is no longer held up").isCompleted();
        held.close();
        behind.join().close();
        assertThat(ran).isFalse();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void resultGivenUpByTimeoutWhileWaitingWithdrawsTheRequest() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        CompletableFuture<Integer> result = s.withPermitsAsync(1, () -> CompletableFuture.completedFuture(1));
        result.orTimeout(1, TimeUnit.MILLISECONDS);
        assertThat(Attempt.async("result", result).failure()).isInstanceOf(TimeoutException.class);
        assertThat(s.queueLength()).isZero();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncRejectsBadArgumentsByThrowing() {
        Semaphore s = Semaphore.create(2);
        assertThatThrownBy(() -> s.withPermitsAsync(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> s.withPermitsAsync(3, () -> CompletableFuture.completedFuture(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(s.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncFailsWhenClosedWhileWaiting() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<Integer> result = s.withPermitsAsync(1, () -> {
            ran.set(true);
            return CompletableFuture.completedFuture(1);
        });
        s.close();
        assertThat(Attempt.async("result", result).failure()).isInstanceOf(SemaphoreClosedException.class);
        assertThat(ran).isFalse();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }
    @Test
    void cancellingTheResultAfterTheWorkStartedKeepsThePermitsUntilTheWorkEnds() throws Exception {
        Semaphore s = Semaphore.create(2);
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> result = s.withPermitsAsync(2, () -> work);
        assertThat(s.availablePermits()).isZero();
        assertThat(result.cancel(false)).isTrue();
        assertThat(s.availablePermits()).as("the work still runs, so its permits stay held").isZero();
        work.complete("late");
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(result).isCancelled();
        checkInvariants(s);
    }

    @Test
    void withPermitsAsyncOfZeroRunsAtOnceEvenWhileOthersWait() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> waiter = s.acquireAsync(1);
        CompletableFuture<String> result = s.withPermitsAsync(0, () -> CompletableFuture.completedFuture("free"));
        assertThat(result).isCompletedWithValue("free");
        held.close();
        Waiting.result(waiter).close();
        checkInvariants(s);
    }
    @Test
    void cancelledResultHasWithdrawnTheRequestBeforeItsDependentsRun() throws Exception {
        for (CancellationTest.Withdrawal how : CancellationTest.Withdrawal.values()) {
            Semaphore s = Semaphore.create(2);
            Permit held = s.acquire(1); // 1 free
            AtomicBoolean ran = new AtomicBoolean();
            CompletableFuture<Permit> result = s.withPermitsAsync(2, () -> {
                ran.set(true);
                return CompletableFuture.completedFuture(null);
            });
            assertThat(s.queueLength()).isEqualTo(1);
            CompletableFuture<String> seen = result.handle((p, e) -> {
                int queued = s.queueLength();
                Optional<Permit> newcomer = s.tryAcquire(1);
                newcomer.ifPresent(Permit::close);
                return "queueLength " + queued + ", tryAcquire(1) " + (newcomer.isPresent() ? "took" : "empty");
            });
            how.apply(result);
            assertThat(Waiting.result(seen)).as(how.name()).isEqualTo("queueLength 0, tryAcquire(1) took");
            held.close();
            assertThat(ran).isFalse();
            assertThat(s.availablePermits()).isEqualTo(2);
            checkInvariants(s);
        }
    }
}
