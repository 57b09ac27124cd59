package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.internal.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** I7: every acquire request that ends is recorded once, with the outcome its caller saw. */
class OutcomeTest {
    private final List<Outcome> recorded = new CopyOnWriteArrayList<>();

    private LocalSemaphore observed(long permits) {
        LocalSemaphore s = (LocalSemaphore) Semaphore.builder().permits(permits).maxPermits(8).build();
        s.observer = (outcome, n) -> recorded.add(outcome);
        return s;
    }

    @Test
    void grantsAndRefusalsWithoutWaitingAreRecordedOnce() throws Exception {
        LocalSemaphore s = observed(1);
        Permit p = s.acquire();
        assertThat(s.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> s.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> s.acquireAsync(1, Duration.ZERO).join()).hasCauseInstanceOf(TimeoutException.class);
        s.acquire(0).close();
        Thread.currentThread().interrupt();
        assertThatThrownBy(s::acquire).isInstanceOf(InterruptedException.class);
        p.close();
        s.close();
        assertThatThrownBy(s::tryAcquire).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> s.acquireAsync(1).join()).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThat(recorded).containsExactly(Outcome.GRANTED, Outcome.UNAVAILABLE, Outcome.TIMEOUT, Outcome.TIMEOUT,
                Outcome.GRANTED, Outcome.INTERRUPTED, Outcome.CLOSED, Outcome.CLOSED);
    }

    @Test
    void queuedRequestsAreRecordedOnceHoweverTheyEnd() throws Exception {
        LocalSemaphore s = observed(0);
        CompletableFuture<Permit> cancelled = s.acquireAsync(1);
        CompletableFuture<Permit> timedOut = s.acquireAsync(1).orTimeout(1, TimeUnit.MILLISECONDS);
        CompletableFuture<Permit> ownTimer = s.acquireAsync(1, Duration.ofMillis(1));
        CompletableFuture<Permit> granted = s.acquireAsync(1);
        CompletableFuture<Permit> closed = s.acquireAsync(1);
        cancelled.cancel(false);
        cancelled.cancel(false); // a second give-up records nothing
        assertThatThrownBy(timedOut::join).hasCauseInstanceOf(TimeoutException.class);
        assertThatThrownBy(ownTimer::join).hasCauseInstanceOf(TimeoutException.class);
        s.addPermits(1);
        Permit p = Waiting.result(granted);
        s.close();
        assertThatThrownBy(closed::join).hasCauseInstanceOf(SemaphoreClosedException.class);
        p.close();
        assertThat(recorded).containsExactlyInAnyOrder(Outcome.CANCELLED, Outcome.TIMEOUT, Outcome.TIMEOUT,
                Outcome.GRANTED, Outcome.CLOSED);
        s.checkInvariants();
    }

    @Test
    void awaitIdleIsNotAnAcquireAndRecordsNothing() throws Exception {
        LocalSemaphore s = observed(1);
        Permit p = s.acquire();
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        idle.cancel(false);
        CompletableFuture<Void> idle2 = s.awaitIdleAsync();
        p.close();
        Waiting.result(idle2);
        assertThat(recorded).containsExactly(Outcome.GRANTED);
    }
}
