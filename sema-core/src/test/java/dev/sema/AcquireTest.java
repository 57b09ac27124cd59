package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class AcquireTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void noThreadLeftBehind() throws InterruptedException {
        attempts.close();
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void takesFreePermitsAtOnce(AcquireStyle style) {
        Semaphore s = Semaphore.create(3);
        Attempt<Permit> a = style.start(attempts, s, 2);
        Permit p = a.join();
        assertThat(p.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThat(s.queueLength()).isZero();
        p.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void waitsUntilEnoughIsReleased(AcquireStyle style) {
        Semaphore s = Semaphore.create(3);
        Permit held = s.tryAcquire(3).orElseThrow();
        Attempt<Permit> a = style.startQueued(attempts, s, 2);
        held.release(1);
        assertThat(s.queueLength()).isEqualTo(1);
        assertThat(s.availablePermits()).isEqualTo(1);
        held.release(1);
        Permit p = a.join();
        assertThat(p.permits()).isEqualTo(2);
        assertThat(s.queueLength()).isZero();
        assertThat(s.availablePermits()).isZero();
        p.close();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(value = AcquireStyle.class, names = {"BLOCKING", "BLOCKING_VIRTUAL", "TIMED"})
    void blockedThreadParks(AcquireStyle style) throws InterruptedException {
        Semaphore s = Semaphore.create(1);
        Permit held = s.tryAcquire().orElseThrow();
        Attempt<Permit> a = style.startQueued(attempts, s, 1);
        Waiting.untilParked(a.thread);
        held.close();
        a.join().close();
        a.joinThread();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void fifoServesWaitersInArrivalOrder(AcquireStyle style) {
        Semaphore s = Semaphore.create(3);
        Permit held = s.tryAcquire(3).orElseThrow();
        Attempt<Permit> a = style.startQueued(attempts, s, 2);
        Attempt<Permit> b = style.startQueued(attempts, s, 2);
        Attempt<Permit> c = style.startQueued(attempts, s, 1);
        assertThat(s.queueLength()).isEqualTo(3);

        held.close(); // 3 free: a takes 2; b (2) does not fit, and c (1) must not overtake it
        Permit pa = a.join();
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(1);
        if (!style.blocking) {
            b.assertPending();
            c.assertPending();
        }

        pa.close(); // 3 free: b then c
        Permit pb = b.join();
        Permit pc = c.join();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.queueLength()).isZero();
        pb.close();
        pc.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void fifoOrderHoldsAcrossBlockingAndAsyncWaiters() {
        Semaphore s = Semaphore.create(1);
        Permit held = s.tryAcquire().orElseThrow();
        List<Attempt<Permit>> queue = new ArrayList<>();
        AcquireStyle[] styles = AcquireStyle.values();
        for (int i = 0; i < 10; i++) {
            queue.add(styles[i % styles.length].startQueued(attempts, s, 1));
        }
        held.close();
        for (int i = 0; i < queue.size(); i++) {
            Permit p = queue.get(i).join();
            assertThat(s.queueLength()).isEqualTo(queue.size() - i - 1);
            for (int j = i + 1; j < queue.size(); j++) {
                if (!queue.get(j).isBlocking()) {
                    queue.get(j).assertPending();
                }
            }
            p.close();
        }
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void largeRequestIsNotStarvedBySmallOnes(AcquireStyle style) {
        Semaphore s = Semaphore.create(4);
        Permit small = s.tryAcquire(1).orElseThrow();
        Attempt<Permit> big = style.startQueued(attempts, s, 4);
        // 3 are free, but every newcomer waits behind the large head request
        assertThat(s.tryAcquire(1)).isEmpty();
        Attempt<Permit> next1 = style.startQueued(attempts, s, 1);
        Attempt<Permit> next2 = style.startQueued(attempts, s, 1);
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(s.queueLength()).isEqualTo(3);

        small.close();
        Permit pBig = big.join();
        assertThat(pBig.permits()).isEqualTo(4);
        assertThat(s.queueLength()).isEqualTo(2);
        pBig.close();
        next1.join().close();
        next2.join().close();
        assertThat(s.availablePermits()).isEqualTo(4);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void oversizedRequestWaitsUntilTheLimitIsRaised(AcquireStyle style) {
        Semaphore s = Semaphore.builder().permits(2).maxPermits(10).build();
        Attempt<Permit> big = style.startQueued(attempts, s, 5);
        assertThat(s.availablePermits()).isEqualTo(2);
        // FIFO: a later small request does not overtake the oversized head
        Attempt<Permit> small = style.startQueued(attempts, s, 1);
        assertThat(s.tryAcquire(1)).isEmpty();

        s.setPermits(4);
        assertThat(s.queueLength()).isEqualTo(2);
        s.setPermits(5);
        Permit pBig = big.join();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.queueLength()).isEqualTo(1);
        assertThat(s.addPermits(1)).isEqualTo(1);
        Permit pSmall = small.join();
        pBig.close();
        pSmall.close();
        assertThat(s.availablePermits()).isEqualTo(6);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void oversizedRequestDoesNotBlockBargingArrivals(AcquireStyle style) {
        Semaphore s = Semaphore.builder().permits(2).maxPermits(10).fairness(Fairness.BARGING).build();
        Attempt<Permit> big = style.startQueued(attempts, s, 5);
        Attempt<Permit> small = style.start(attempts, s, 2);
        Permit pSmall = small.join();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.queueLength()).isEqualTo(1);
        pSmall.close();
        s.setPermits(5);
        big.join().close();
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void zeroRequestSucceedsAtOnceEvenWithWaitersQueued(AcquireStyle style) {
        Semaphore s = Semaphore.create(2);
        Permit held = s.tryAcquire(2).orElseThrow();
        Attempt<Permit> waiter = style.startQueued(attempts, s, 2);
        Permit zero = style.start(attempts, s, 0).join();
        assertThat(zero.permits()).isZero();
        assertThat(s.queueLength()).isEqualTo(1);
        zero.close();
        assertThat(s.availablePermits()).isZero();

        s.setPermits(1); // available now negative: still fine for 0
        assertThat(s.availablePermits()).isEqualTo(-1);
        style.start(attempts, s, 0).join().close();
        assertThat(s.tryAcquire(0)).get().extracting(Permit::permits).isEqualTo(0L);
        s.setPermits(2);
        held.close();
        waiter.join().close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Fairness.class)
    void zeroRequestsOfEveryKindSucceedWhileQueued(Fairness fairness) throws Exception {
        Semaphore s = Semaphore.builder().permits(1).fairness(fairness).build();
        Permit held = s.acquire();
        CompletableFuture<Permit> waiter = s.acquireAsync(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(s.acquire(0).permits()).isZero();
        assertThat(s.acquire(0, Duration.ZERO).permits()).isZero();
        assertThat(s.acquire(0, Duration.ofSeconds(-1)).permits()).isZero();
        assertThat(s.tryAcquire(0)).isPresent();
        assertThat(s.acquireAsync(0)).isCompletedWithValueMatching(p -> p.permits() == 0);
        assertThat(s.acquireAsync(0, Duration.ZERO)).isCompletedWithValueMatching(p -> p.permits() == 0);
        assertThat(s.queueLength()).isEqualTo(2);
        held.close();
        waiter.join().close();
        assertThat(idle).isCompleted();
        checkInvariants(s);
    }

    @Test
    void tryAcquireIsEmptyWhileWaitersAreQueuedUnderFifo() throws Exception {
        Semaphore s = Semaphore.create(3);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> waiter = s.acquireAsync(2);
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThat(s.tryAcquire()).isEmpty();
        assertThat(s.tryAcquire(1)).isEmpty();
        assertThatThrownBy(() -> s.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
        assertThat(s.acquireAsync(1, Duration.ZERO)).isCompletedExceptionally();
        // a waiting newcomer queues behind instead of taking the free permit
        CompletableFuture<Permit> newcomer = s.acquireAsync(1);
        assertThat(newcomer).isNotDone();
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(1);
        held.close();
        assertThat(waiter).isCompleted();
        assertThat(newcomer).isCompleted();
        waiter.join().close();
        newcomer.join().close();
        assertThat(s.tryAcquire(3)).isPresent();
        checkInvariants(s);
    }

    @Test
    void tryAcquireTakesWhenFreeAndNobodyQueued() {
        Semaphore s = Semaphore.create(3);
        Optional<Permit> one = s.tryAcquire();
        assertThat(one).get().extracting(Permit::permits).isEqualTo(1L);
        Optional<Permit> two = s.tryAcquire(2);
        assertThat(two).get().extracting(Permit::permits).isEqualTo(2L);
        assertThat(s.tryAcquire()).isEmpty();
        assertThat(s.queueLength()).isZero(); // never queues
        one.get().close();
        two.get().close();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void bargingArrivalTakesPastTheQueueButTheQueueStaysFifo(AcquireStyle style) {
        Semaphore s = Semaphore.builder().permits(3).fairness(Fairness.BARGING).build();
        Permit held = s.tryAcquire(3).orElseThrow();
        Attempt<Permit> a = style.startQueued(attempts, s, 3);
        Attempt<Permit> b = style.startQueued(attempts, s, 1);

        held.release(1); // 1 free: the head (3) does not fit, and b must not overtake it
        assertThat(s.queueLength()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(1);
        // ...but a new arrival barges
        Permit barger = style.start(attempts, s, 1).join();
        assertThat(s.availablePermits()).isZero();
        Permit barger2 = s.tryAcquire(0).orElseThrow();
        held.release(1);
        assertThat(s.tryAcquire(1)).isPresent().get().satisfies(Permit::close);
        assertThat(s.queueLength()).isEqualTo(2);

        barger.close();
        barger2.close();
        held.close(); // 3 free: the head a, then b once a is done
        Permit pa = a.join();
        assertThat(s.queueLength()).isEqualTo(1);
        pa.close();
        b.join().close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void bargingArrivalThatDoesNotFitQueuesAtTheTail(AcquireStyle style) {
        Semaphore s = Semaphore.builder().permits(2).fairness(Fairness.BARGING).build();
        Permit held = s.tryAcquire(2).orElseThrow();
        Attempt<Permit> a = style.startQueued(attempts, s, 2);
        Attempt<Permit> b = style.startQueued(attempts, s, 1);
        held.close();
        Permit pa = a.join();
        assertThat(s.queueLength()).isEqualTo(1);
        pa.close();
        b.join().close();
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void requestOutOfRangeIsThrownByTheCallAndChangesNothing(AcquireStyle style) {
        Semaphore s = Semaphore.builder().permits(4).maxPermits(37).build();
        Permit held = s.tryAcquire(1).orElseThrow();
        for (long bad : new long[] {-1, 38, Long.MAX_VALUE, Long.MIN_VALUE}) {
            assertThatThrownBy(() -> style.callHere(s, bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(Long.toString(bad))
                    .hasMessageContaining("37");
        }
        assertThatThrownBy(() -> s.tryAcquire(38)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("38").hasMessageContaining("37");
        assertThatThrownBy(() -> s.tryAcquire(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(s.permits()).isEqualTo(4);
        assertThat(s.queueLength()).isZero();
        held.close();
        checkInvariants(s);
    }

    @ParameterizedTest
    @ValueSource(longs = {-1, 6})
    void asyncFormsThrowProgrammingErrorsInsteadOfFailingTheFuture(long bad) {
        Semaphore s = Semaphore.create(5);
        assertThatThrownBy(() -> s.acquireAsync(bad)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.acquireAsync(bad, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.withPermitsAsync(bad, () -> CompletableFuture.completedFuture(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void noArgumentFormsTakeOnePermit() throws Exception {
        Semaphore s = Semaphore.create(3);
        Permit a = s.acquire();
        Permit b = s.tryAcquire().orElseThrow();
        Permit c = Waiting.result(s.acquireAsync());
        assertThat(a.permits()).isEqualTo(1);
        assertThat(b.permits()).isEqualTo(1);
        assertThat(c.permits()).isEqualTo(1);
        assertThat(s.availablePermits()).isZero();
        CompletableFuture<Permit> d = s.acquireAsync();
        assertThat(d).isNotDone();
        a.close();
        assertThat(d).isCompletedWithValueMatching(p -> p.permits() == 1);
        b.close();
        c.close();
        d.join().close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void requestUpToTheCeilingCanBeWholeSemaphore(AcquireStyle style) {
        Semaphore s = Semaphore.create(5);
        Permit p = style.start(attempts, s, 5).join();
        assertThat(s.availablePermits()).isZero();
        Attempt<Permit> next = style.startQueued(attempts, s, 5);
        p.close();
        next.join().close();
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @Test
    void manyWaitersAreServedInOrderAsPermitsTrickleBack() {
        Semaphore s = Semaphore.create(1);
        Permit held = s.tryAcquire().orElseThrow();
        List<CompletableFuture<Permit>> waiters = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            waiters.add(s.acquireAsync());
        }
        assertThat(s.queueLength()).isEqualTo(50);
        held.close();
        for (int i = 0; i < waiters.size(); i++) {
            assertThat(waiters.get(i)).as("waiter %d", i).isCompleted();
            if (i + 1 < waiters.size()) {
                assertThat(waiters.get(i + 1)).as("waiter %d", i + 1).isNotDone();
            }
            waiters.get(i).join().close();
        }
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }
    @Test
    void manyVirtualThreadsCanWaitAtOnce() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit held = s.acquire();
        int n = 500;
        List<Attempt<Long>> waiters = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            waiters.add(attempts.blocking("virtual#" + i, true, () -> {
                try (Permit p = s.acquire(1)) {
                    return p.permits();
                }
            }));
        }
        Waiting.untilQueued(s, n);
        held.close();
        for (Attempt<Long> w : waiters) {
            assertThat(w.join()).isEqualTo(1L);
            w.joinThread();
        }
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }
}
