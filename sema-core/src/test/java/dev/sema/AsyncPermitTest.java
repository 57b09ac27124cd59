package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static dev.sema.Waiting.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The Permit of an async request is its own future: a queued request once granted (see {@link Waiter}),
 * or one granted at once ({@link ReadyPermit}). The Permit rules run here on those kinds (PermitRaceTest
 * races each kind). Every test first checks that it holds the kind it means, so none passes by testing
 * another.
 */
class AsyncPermitTest {
    /** A grant of {@code n} to an async request that queued behind all of {@code s}'s permits. */
    private static Permit queuedGrant(Semaphore s, long n) throws Exception {
        Permit blocker = s.acquire(s.availablePermits());
        CompletableFuture<Permit> f = s.acquireAsync(n);
        assertThat(f).isNotDone();
        blocker.close();
        Permit p = result(f);
        assertThat(p).as("the request is its own grant").isSameAs(f).isInstanceOf(Waiter.class);
        assertThat(p.permits()).isEqualTo(n);
        return p;
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void closeReleasesOnceAndTheRulesOfPermitHold(Fairness fairness) throws Exception {
        Semaphore s = Semaphore.builder().permits(6).fairness(fairness).build();
        Permit p = queuedGrant(s, 5);
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThat(p).hasToString("Permit[semaphore=" + s.name() + ", permits=5]");

        Permit part = p.split(2);
        assertThat(part).isNotInstanceOf(Waiter.class);
        assertThat(p.permits()).isEqualTo(3);
        assertThatThrownBy(() -> p.split(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("split(4)").hasMessageContaining("3 permits");
        assertThatThrownBy(() -> p.release(4)).isInstanceOf(IllegalArgumentException.class);
        assertThat(p.permits()).isEqualTo(3);

        p.release(1);
        assertThat(s.availablePermits()).isEqualTo(2);
        part.merge(p);
        assertThat(p.permits()).isZero();
        assertThat(part.permits()).isEqualTo(4);
        p.merge(part);
        assertThat(p.permits()).isEqualTo(4);
        assertThatThrownBy(() -> p.merge(p)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.merge(Semaphore.create(1).acquire())).isInstanceOf(IllegalArgumentException.class);

        p.close();
        p.close();
        part.close();
        assertThat(s.availablePermits()).isEqualTo(6);
        checkInvariants(s);
    }

    @Test
    void forgetLowersTheLimit() throws Exception {
        Semaphore s = Semaphore.builder().permits(4).maxPermits(4).build();
        Permit p = queuedGrant(s, 3);
        p.forget();
        assertThat(p.permits()).isZero();
        assertThat(s.permits()).isEqualTo(1);
        assertThat(s.availablePermits()).isEqualTo(1);
        p.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    /**
     * Nothing outside the contract loses permits either: a caller that casts the pending future to a
     * Permit and merges into it keeps what it merged, whether the grant then reaches the future or loses
     * to a cancel.
     */
    @Test
    void permitsMergedIntoAPendingRequestAreKeptWhetherItIsGrantedOrCancelled() throws Exception {
        Semaphore s = Semaphore.create(4);
        Permit blocker = s.acquire(3);
        CompletableFuture<Permit> granted = s.acquireAsync(2);
        Permit pending = (Permit) granted;
        pending.merge(blocker.split(1));
        assertThat(pending.permits()).isEqualTo(1);
        blocker.close();
        assertThat(result(granted)).isSameAs(pending);
        assertThat(pending.permits()).isEqualTo(3);
        pending.close();
        assertThat(s.availablePermits()).isEqualTo(4);

        // The grant is decided under the lock but delivered after; a cancel in between wins the future.
        AtomicLong seen = new AtomicLong(-1);
        blocker = s.acquire(4);
        CompletableFuture<Permit> first = s.acquireAsync(1);
        CompletableFuture<Permit> second = s.acquireAsync(1);
        Permit secondAsPermit = (Permit) second;
        secondAsPermit.merge(blocker.split(1));
        first.thenRun(() -> {
            // runs while the release below delivers its grants: the second grant is decided, not yet delivered
            seen.set(secondAsPermit.permits());
            second.cancel(false);
        });
        blocker.close();
        assertThat(first.join().permits()).isEqualTo(1);
        assertThat(second).isCancelled();
        assertThat(seen.get()).as("the second grant was decided but not yet delivered").isEqualTo(1L);
        assertThat(secondAsPermit.permits()).as("the merged permit stays, the lost grant went back").isEqualTo(1);
        first.join().close();
        secondAsPermit.close();
        assertThat(s.availablePermits()).isEqualTo(4);
        checkInvariants(s);
    }

    @Test
    void withLeakDetectionTheGrantIsATrackedPermit() throws Exception {
        Semaphore s = Semaphore.builder().permits(2).leakDetection(LeakDetection.SAMPLED).build();
        Permit blocker = s.acquire(2);
        CompletableFuture<Permit> f = s.acquireAsync(1);
        blocker.close();
        Permit p = result(f);
        assertThat(p).isInstanceOf(TrackedPermit.class).isNotSameAs(f);
        p.close();
        assertThat(s.availablePermits()).isEqualTo(2);
    }

    @Test
    void withAListenerTheGrantIsATimedPermitThatReportsItsHoldTime() throws Exception {
        Semaphore s = Semaphore.create(1);
        AtomicLong heldNanos = new AtomicLong(-2);
        s.addListener(new SemaphoreListener() {
            @Override
            public void released(Semaphore semaphore, long permits, long nanos) {
                heldNanos.set(nanos);
            }
        });
        Permit blocker = s.acquire();
        CompletableFuture<Permit> f = s.acquireAsync(1);
        blocker.close();
        Permit p = result(f);
        assertThat(p).isInstanceOf(TimedPermit.class).isNotSameAs(f);
        p.close();
        assertThat(heldNanos.get()).as("hold time of a timed grant").isNotNegative();
        assertThat(s.availablePermits()).isEqualTo(1);
    }

    @Test
    void aFutureThatFailedDescribesItselfWithoutThrowing() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit blocker = s.acquire();
        CompletableFuture<Permit> cancelled = s.acquireAsync(1);
        CompletableFuture<Permit> timedOut = s.acquireAsync(1, java.time.Duration.ofMillis(1));
        CompletableFuture<Permit> closed = s.acquireAsync(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        cancelled.cancel(false);
        assertThat(Attempt.async("timed out", timedOut).failure()).isInstanceOf(java.util.concurrent.TimeoutException.class);
        idle.cancel(false);
        s.close();
        assertThat(closed).isCompletedExceptionally();
        for (CompletableFuture<?> f : List.of(cancelled, timedOut, closed, idle)) {
            assertThat(f.toString()).contains("Completed exceptionally");
        }
        CompletableFuture<Permit> pending = Semaphore.builder().permits(0).maxPermits(1).build().acquireAsync(1);
        assertThat(pending.toString()).contains("Not completed");
        pending.cancel(false);
        blocker.close();
    }

    @Test
    void aGrantThatLosesToAnObtrudedValueGoesBack() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit blocker = s.acquire(2);
        CompletableFuture<Permit> f = s.acquireAsync(2);
        Permit other = Semaphore.create(1).acquire();
        f.obtrudeValue(other);
        blocker.close();
        Waiting.until("the bypassed request's grant went back", () -> s.availablePermits() == 2 && s.queueLength() == 0);
        assertThat(((Permit) f).permits()).isZero();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void anAsyncRequestGrantedAtOnceIsItsOwnPermitAndFollowsItsRules(Fairness fairness) throws Exception {
        Semaphore s = Semaphore.builder().permits(5).fairness(fairness).build();
        CompletableFuture<Permit> f = s.acquireAsync(3);
        assertThat(f).isCompletedWithValue((Permit) f).isInstanceOf(ReadyPermit.class);
        Permit p = f.join();
        assertThat(p.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(p).hasToString("Permit[semaphore=" + s.name() + ", permits=3]");
        assertThat(f.cancel(false)).as("already complete: cancel changes nothing").isFalse();
        assertThat(f.complete(null)).isFalse();
        assertThat(f.completeExceptionally(new RuntimeException())).isFalse();
        assertThat(f.join()).isSameAs(p);
        assertThat(p.permits()).isEqualTo(3);

        Permit part = p.split(1);
        assertThat(part).isInstanceOf(PlainPermit.class);
        p.release(1);
        assertThat(s.availablePermits()).isEqualTo(3);
        part.merge(p);
        assertThat(p.permits()).isZero();
        p.merge(part);
        assertThat(p.permits()).isEqualTo(2);
        assertThatThrownBy(() -> p.release(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("release(3)").hasMessageContaining("2 permits");
        p.close();
        p.close();
        part.close();
        assertThat(s.availablePermits()).isEqualTo(5);

        Permit forgotten = s.acquireAsync(2, java.time.Duration.ofSeconds(1)).join();
        assertThat(forgotten).isInstanceOf(ReadyPermit.class);
        forgotten.forget();
        assertThat(s.permits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void grantedAtOnceWhileTrackedOrTimedTheFutureHoldsASeparatePermit() throws Exception {
        Semaphore tracked = Semaphore.builder().permits(1).leakDetection(LeakDetection.SAMPLED).build();
        CompletableFuture<Permit> f = tracked.acquireAsync(1);
        assertThat(f.join()).isInstanceOf(TrackedPermit.class).isNotSameAs(f);
        f.join().close();

        Semaphore timed = Semaphore.create(1);
        timed.addListener(new SemaphoreListener() { });
        CompletableFuture<Permit> g = timed.acquireAsync(1);
        assertThat(g.join()).isInstanceOf(TimedPermit.class).isNotSameAs(g);
        g.join().close();
        assertThat(tracked.availablePermits()).isEqualTo(1);
        assertThat(timed.availablePermits()).isEqualTo(1);
    }
}
