package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PermitTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void tearDown() throws InterruptedException {
        attempts.close();
    }

    @Test
    void closeReleasesEverythingOnceAndIsIdempotent() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit other = s.acquire(1);
        Permit p = s.acquire(3);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(1);
        p.close();
        assertThat(p.permits()).isZero();
        assertThat(s.availablePermits()).isEqualTo(4);
        p.close();
        p.close();
        assertThat(s.availablePermits()).isEqualTo(4);
        other.close();
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void tryWithResourcesReleases() throws Exception {
        Semaphore s = Semaphore.create(2);
        try (Permit p = s.acquire(2)) {
            assertThat(p.permits()).isEqualTo(2);
            assertThat(s.availablePermits()).isZero();
        }
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void releaseGivesBackPartAndServesWaiters() throws Exception {
        Semaphore s = Semaphore.create(4);
        Permit p = s.acquire(4);
        CompletableFuture<Permit> w = s.acquireAsync(2);
        p.release(0);
        assertThat(p.permits()).isEqualTo(4);
        p.release(1);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(w).isNotDone();
        p.release(1);
        assertThat(w).isCompleted();
        assertThat(p.permits()).isEqualTo(2);
        p.release(2);
        assertThat(p.permits()).isZero();
        p.close(); // nothing left: no-op
        w.join().close();
        assertThat(s.availablePermits()).isEqualTo(4);
        checkInvariants(s);
    }

    @Test
    void releaseOutOfRangeThrowsNamingBothNumbersAndChangesNothing() throws Exception {
        Semaphore s = Semaphore.create(10);
        Permit p = s.acquire(3);
        assertThatThrownBy(() -> p.release(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4").hasMessageContaining("3");
        assertThatThrownBy(() -> p.release(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-1");
        assertThatThrownBy(() -> p.release(Long.MIN_VALUE)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.release(Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(7);
        p.close();
        checkInvariants(s);
    }

    @Test
    void splitMovesPartIntoAnIndependentPermitWithoutReleasing() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit p = s.acquire(5);
        Permit q = p.split(2);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(q.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isZero();
        Permit empty = p.split(0);
        assertThat(empty.permits()).isZero();
        assertThat(p.permits()).isEqualTo(3);
        q.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(p.permits()).isEqualTo(3);
        Permit rest = p.split(3);
        assertThat(p.permits()).isZero();
        p.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        rest.close();
        empty.close();
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void splitOutOfRangeThrowsNamingBothNumbersAndChangesNothing() throws Exception {
        Semaphore s = Semaphore.create(10);
        Permit p = s.acquire(3);
        assertThatThrownBy(() -> p.split(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4").hasMessageContaining("3");
        assertThatThrownBy(() -> p.split(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(7);
        p.close();
        checkInvariants(s);
    }

    @Test
    void mergeTakesOverTheOthersPermits() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit p = s.acquire(2);
        Permit q = s.acquire(3);
        p.merge(q);
        assertThat(p.permits()).isEqualTo(5);
        assertThat(q.permits()).isZero();
        assertThat(s.availablePermits()).isZero();
        q.close(); // empty: releases nothing
        assertThat(s.availablePermits()).isZero();
        p.merge(q); // merging an empty permit moves nothing
        assertThat(p.permits()).isEqualTo(5);
        p.close();
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void mergeIntoAClosedPermitLetsALaterCloseReleaseThem() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit p = s.acquire(2);
        Permit q = s.acquire(3);
        p.close();
        p.merge(q);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(2);
        p.close();
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void mergingAPermitOfAnotherSemaphoreThrowsAndChangesNothing() throws Exception {
        Semaphore s = Semaphore.create(5);
        Semaphore t = Semaphore.create(5);
        Permit p = s.acquire(2);
        Permit foreign = t.acquire(3);
        assertThatThrownBy(() -> p.merge(foreign)).isInstanceOf(IllegalArgumentException.class);
        Permit alien = new Permit() {
            @Override
            public long permits() {
                return 1;
            }

            @Override
            public void close() {
                throw new AssertionError("must not be touched");
            }

            @Override
            public void release(long permits) {
                throw new AssertionError("must not be touched");
            }

            @Override
            public Permit split(long permits) {
                throw new AssertionError("must not be touched");
            }

            @Override
            public void merge(Permit other) {
                throw new AssertionError("must not be touched");
            }

            @Override
            public void forget() {
                throw new AssertionError("must not be touched");
            }
        };
        assertThatThrownBy(() -> p.merge(alien)).isInstanceOf(IllegalArgumentException.class);
        assertThat(p.permits()).isEqualTo(2);
        assertThat(foreign.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(t.availablePermits()).isEqualTo(2);
        p.close();
        foreign.close();
        checkInvariants(s);
        checkInvariants(t);
    }

    @Test
    void mergingAPermitIntoItselfThrowsAndChangesNothing() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit p = s.acquire(2);
        assertThatThrownBy(() -> p.merge(p)).isInstanceOf(IllegalArgumentException.class);
        assertThat(p.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(3);
        p.close();
        assertThatThrownBy(() -> p.merge(p)).isInstanceOf(IllegalArgumentException.class);
        checkInvariants(s);
    }

    @Test
    void mergingNullThrowsNullPointerException() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit p = s.acquire(2);
        assertThatThrownBy(() -> p.merge(null)).isInstanceOf(NullPointerException.class);
        assertThat(p.permits()).isEqualTo(2);
        p.close();
        checkInvariants(s);
    }

    @Test
    void forgetLowersTheLimitAndEmptiesThePermit() throws Exception {
        Semaphore s = Semaphore.builder().permits(5).maxPermits(8).build();
        Permit other = s.acquire(1);
        Permit p = s.acquire(2);
        p.forget();
        assertThat(p.permits()).isZero();
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(s.maxPermits()).isEqualTo(8);
        p.close(); // no-op
        p.forget(); // no-op
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(2);
        other.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(s.addPermits(Long.MAX_VALUE)).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void forgetDoesNotLowerTheLimitBelowZero() throws Exception {
        Semaphore s = Semaphore.create(5);
        Permit p = s.acquire(3);
        Permit q = s.acquire(1);
        s.setPermits(2); // held 4: available -2
        p.forget(); // the limit would drop by 3, to -1: it stops at 0
        assertThat(s.permits()).isZero();
        assertThat(s.availablePermits()).isEqualTo(-1);
        checkInvariants(s);
        q.close();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.permits()).isZero();
        checkInvariants(s);
    }

    @Test
    void forgetWakesNoAcquirerButKeepsTheQueueConsistent() throws Exception {
        Semaphore s = Semaphore.builder().permits(3).maxPermits(5).build();
        Permit p = s.acquire(2);
        CompletableFuture<Permit> w = s.acquireAsync(2);
        p.forget();
        assertThat(s.permits()).isEqualTo(1);
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThat(w).isNotDone();
        assertThat(s.queueLength()).isEqualTo(1);
        checkInvariants(s);
        s.addPermits(1);
        assertThat(w).isCompleted();
        w.join().close();
        checkInvariants(s);
    }

    @Test
    void emptyPermitAcceptsOnlyZero() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit p = s.acquire(2);
        p.close();
        p.release(0);
        assertThat(p.split(0).permits()).isZero();
        assertThatThrownBy(() -> p.release(1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.split(1)).isInstanceOf(IllegalArgumentException.class);
        p.forget();
        assertThat(s.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void permitAcquiredOnOneThreadMayBeReleasedOnAnother() throws Exception {
        Semaphore s = Semaphore.create(1);
        Attempt<Permit> acquiredElsewhere = AcquireStyle.BLOCKING.start(attempts, s, 1);
        Permit p = acquiredElsewhere.join();
        acquiredElsewhere.joinThread();
        CompletableFuture<Permit> w = s.acquireAsync(1);
        p.close(); // on this thread
        assertThat(w).isCompleted();
        Permit q = w.join();
        Attempt<Permit> waiter = AcquireStyle.BLOCKING.startQueued(attempts, s, 1);
        attempts.blocking("releaser", () -> {
            q.close();
            return null;
        }).join();
        waiter.join().close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void zeroPermitFromAZeroRequestIsHarmless() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit zero = s.acquire(0);
        Permit p = s.acquire(2);
        zero.merge(p);
        assertThat(zero.permits()).isEqualTo(2);
        zero.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }
}
