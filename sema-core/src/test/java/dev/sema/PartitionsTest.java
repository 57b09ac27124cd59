package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.internal.Partitioned;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The rules of API.md §11a on the local engine, one scenario per rule (the P rules of {@link Partitions}):
 * each one sets up held permits and waiters with async acquires, so that what was granted is read from the
 * futures at once, without timing.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PartitionsTest {

    /** Limit 10: checkout 0.5 (guarantee 5), browse 0.3 (3), batch 0.2 (2). */
    private static Semaphore api() {
        return Semaphore.builder().name("api").permits(10).maxPermits(100)
                .partition("checkout", 0.5).partition("browse", 0.3).partition("batch", 0.2).build();
    }

    private static Partitions group(Semaphore s) {
        return ((LocalSemaphore) s).group;
    }

    private static void check(Semaphore s) {
        ((LocalSemaphore) s).checkInvariants();
    }

    // ---------------------------------------------------------------- declaration

    @Test
    void viewsAreNamedAfterTheParentAndListedInPriorityOrder() {
        Semaphore api = api();
        assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch");
        Semaphore batch = api.partition("batch");
        assertThat(batch.name()).isEqualTo("api/batch");
        assertThat(api.partition("batch")).isSameAs(batch);
        assertThat(batch.partitionNames()).isEmpty();
        assertThat(batch.permits()).isEqualTo(10);
        assertThat(batch.maxPermits()).isEqualTo(100);
        assertThat(batch.fairness()).isEqualTo(Fairness.FIFO);
        assertThat(Semaphore.create(3).partitionNames()).isEmpty();
    }

    @Test
    void anUnknownPartitionIsRefusedNamingTheKnownOnes() {
        Semaphore api = api();
        assertThatThrownBy(() -> api.partition("admin")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'admin'").hasMessageContaining("[checkout, browse, batch]");
        assertThatThrownBy(() -> Semaphore.create(1).partition("x")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no partitions");
        assertThatThrownBy(() -> api.partition("batch").partition("x"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("partition of semaphore 'api'");
        assertThatThrownBy(() -> api.partition(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void badSharesAndNamesStopTheBuildNamingThePartitionAndTheNumbers() {
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10)
                .partition("a", 0.6).partition("b", 0.5).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("add up to 1.1").hasMessageContaining("a 0.6 + b 0.5");
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10).partition("a", 0).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a'").hasMessageContaining("0.0");
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10).partition("a", 1.5).build())
                .hasMessageContaining("share 1.5");
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10).partition("a", Double.NaN).build())
                .hasMessageContaining("share NaN");
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10)
                .partition("a", 0.1).partition("a", 0.1).build())
                .hasMessageContaining("'a'").hasMessageContaining("twice");
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10).partition("", 0.1).build())
                .hasMessageContaining("empty name");
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10).partition(null, 0.1))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Semaphore.builder().name("api").permits(10).fairness(Fairness.BARGING)
                .partition("a", 0.1).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("FIFO");
        // exact decimals: 0.6 + 0.3 + 0.1 is 1, and 0.29 of 100 is 29
        Semaphore s = Semaphore.builder().permits(100).partition("a", 0.6).partition("b", 0.3)
                .partition("c", 0.1).build();
        assertThat(s.partitionNames()).hasSize(3);
        Semaphore t = Semaphore.builder().permits(100).partition("a", 0.29).build();
        assertThat(((Partitioned) t).partitionStates().get(0).guarantee()).isEqualTo(29);
        dev.sema.internal.PartitionSpec spec = dev.sema.internal.PartitionSpec.of("x", List.of("a", "b", "c"),
                List.of(0.29, 1.0 / 3, 0.123456789012345));
        assertThat(spec.guarantee(0, 100)).isEqualTo(29);
        assertThat(spec.guarantee(1, 3)).isEqualTo(0); // 0.3333333333333333 × 3 < 1
        assertThat(spec.guarantee(1, 300)).isEqualTo(99);
        assertThat(spec.guarantee(0, Semaphore.MAX_PERMITS)).isEqualTo(
                new java.math.BigDecimal("0.29").multiply(java.math.BigDecimal.valueOf(Semaphore.MAX_PERMITS))
                        .setScale(0, java.math.RoundingMode.FLOOR).longValueExact()); // past long: the decimal way
        assertThat(spec.guarantee(2, Semaphore.MAX_PERMITS)).isEqualTo(
                new java.math.BigDecimal("0.123456789012345").multiply(
                        java.math.BigDecimal.valueOf(Semaphore.MAX_PERMITS))
                        .setScale(0, java.math.RoundingMode.FLOOR).longValueExact());
    }

    @Test
    void viewsCannotBeResizedClosedOrListenedTo() {
        Semaphore api = api();
        Semaphore batch = api.partition("batch");
        assertThatThrownBy(() -> batch.setPermits(3)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("'api/batch'").hasMessageContaining("semaphore 'api'");
        assertThatThrownBy(() -> batch.addPermits(3)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> batch.reducePermits(3)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(batch::close).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> batch.addListener(new SemaphoreListener() { }))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("semaphore 'api'");
        assertThat(batch.isClosed()).isFalse();
        assertThat(api.permits()).isEqualTo(10);
    }

    // ---------------------------------------------------------------- P1: the hard limit

    @Test
    void allPartitionsTogetherNeverHoldMoreThanTheLimit() throws Exception {
        Semaphore api = api();
        List<Permit> held = new ArrayList<>();
        for (String p : api.partitionNames()) {
            held.add(api.partition(p).tryAcquire(3).orElseThrow());
        }
        held.add(api.tryAcquire(1).orElseThrow());
        assertThat(api.availablePermits()).isZero();
        for (String p : api.partitionNames()) {
            assertThat(api.partition(p).tryAcquire()).isEmpty();
        }
        assertThat(api.tryAcquire()).isEmpty();
        check(api);
        held.forEach(Permit::close);
        assertThat(api.availablePermits()).isEqualTo(10);
        check(api);
    }

    // ---------------------------------------------------------------- work-conserving

    @Test
    void aPartitionAloneMayUseTheWholeLimit() throws Exception {
        Semaphore api = api();
        Semaphore batch = api.partition("batch");
        assertThat(batch.availablePermits()).isEqualTo(10);
        try (Permit p = batch.acquire(10)) {
            assertThat(api.availablePermits()).isZero();
            assertThat(group(api).heldForTests()).containsEntry("batch", 10L);
        }
        check(api);
    }

    // ---------------------------------------------------------------- P2: guarantee first

    @Test
    void permitsOwedToAWaitingPartitionGoToItAndAreNeverLent() {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore batch = api.partition("batch");
        Permit batchHolds = batch.tryAcquire(10).orElseThrow(); // batch alone took everything
        CompletableFuture<Permit> owed = checkout.acquireAsync(5); // within checkout's guarantee of 5
        assertThat(owed).isNotDone();
        batchHolds.release(3); // 3 free, all owed to checkout
        assertThat(owed).isNotDone();
        assertThat(batch.tryAcquire()).as("batch may not take permits owed to checkout").isEmpty();
        assertThat(api.partition("browse").tryAcquire()).as("browse may not take permits owed to checkout").isEmpty();
        assertThat(api.tryAcquire()).as("the parent's own requests may not take permits owed to checkout").isEmpty();
        assertThat(batch.availablePermits()).isZero();
        assertThat(checkout.availablePermits()).isEqualTo(3);
        check(api);
        batchHolds.release(2);
        assertThat(owed).isCompletedWithValueMatching(p -> p.permits() == 5);
        check(api);
        owed.join().close();
        batchHolds.close();
        check(api);
    }

    @Test
    void aGuaranteedRequestOfALowPartitionIsServedBeforeAHighOneBeyondItsGuarantee() {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore browse = api.partition("browse");
        Permit checkoutHolds = checkout.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> beyond = checkout.acquireAsync(2); // checkout is past its guarantee
        CompletableFuture<Permit> guaranteed = browse.acquireAsync(3); // browse is owed 3
        checkoutHolds.release(3);
        assertThat(guaranteed).as("guarantee first").isCompletedWithValueMatching(p -> p.permits() == 3);
        assertThat(beyond).isNotDone();
        checkoutHolds.release(2);
        assertThat(beyond).isCompleted();
        check(api);
    }

    @Test
    void whenFreePermitsDoNotCoverEverythingOwedTheyArePaidInPriorityOrder() {
        Semaphore api = api();
        Permit parentHolds = api.tryAcquire(10).orElseThrow(); // the parent's own took everything
        CompletableFuture<Permit> batch = api.partition("batch").acquireAsync(2);
        CompletableFuture<Permit> checkout = api.partition("checkout").acquireAsync(5);
        parentHolds.release(2); // both are owed; checkout comes first
        assertThat(batch).isNotDone();
        assertThat(checkout).isNotDone();
        parentHolds.release(3);
        assertThat(checkout).isCompleted();
        assertThat(batch).isNotDone();
        parentHolds.release(2);
        assertThat(batch).isCompleted();
        check(api);
    }

    // ---------------------------------------------------------------- P3: then priority

    @Test
    void beyondTheirGuaranteesHigherPartitionsAreServedFirst() {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore browse = api.partition("browse");
        Permit c = checkout.tryAcquire(5).orElseThrow(); // each at its guarantee
        Permit b = browse.tryAcquire(3).orElseThrow();
        Permit own = api.tryAcquire(2).orElseThrow();
        CompletableFuture<Permit> browseMore = browse.acquireAsync(1); // arrived first
        CompletableFuture<Permit> checkoutMore = checkout.acquireAsync(1);
        own.release(1);
        assertThat(checkoutMore).as("higher priority first").isCompleted();
        assertThat(browseMore).isNotDone();
        own.release(1);
        assertThat(browseMore).isCompleted();
        c.close();
        b.close();
        checkoutMore.join().close();
        browseMore.join().close();
        check(api);
    }

    @Test
    void aLowerRequestNeverTakesWhatAWaitingHigherHeadNeeds() {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore batch = api.partition("batch");
        Permit checkoutHolds = checkout.tryAcquire(5).orElseThrow(); // its guarantee
        Permit batchHolds = batch.tryAcquire(3).orElseThrow(); // its guarantee of 2, and 1 borrowed
        Permit ownHolds = api.tryAcquire(2).orElseThrow();
        CompletableFuture<Permit> big = checkout.acquireAsync(3); // beyond checkout's guarantee
        ownHolds.close(); // 2 free, the big head needs 3
        assertThat(big).isNotDone();
        assertThat(batch.tryAcquire()).as("batch is at its guarantee: beyond it, it comes after checkout").isEmpty();
        assertThat(api.tryAcquire()).isEmpty();
        CompletableFuture<Permit> small = batch.acquireAsync(1);
        batchHolds.release(1);
        assertThat(big).as("the large high-priority head is not starved").isCompleted();
        assertThat(small).isNotDone();
        big.join().close();
        assertThat(small).isCompleted();
        checkoutHolds.close();
        batchHolds.close();
        small.join().close();
        assertThat(api.availablePermits()).isEqualTo(10);
        check(api);
    }

    @Test
    void aPartitionBackBelowItsGuaranteeIsServedBeforeAHigherOneBeyondIts() {
        Semaphore api = api();
        Semaphore checkout = api.partition("checkout");
        Semaphore batch = api.partition("batch");
        Permit checkoutHolds = checkout.tryAcquire(5).orElseThrow();
        Permit batchHolds = batch.tryAcquire(5).orElseThrow();
        CompletableFuture<Permit> big = checkout.acquireAsync(4); // beyond checkout's guarantee
        CompletableFuture<Permit> small = batch.acquireAsync(1); // beyond batch's, for now
        batchHolds.release(4); // batch holds 1 < 2: its head is within what it is owed
        assertThat(small).as("guarantee first").isCompleted();
        assertThat(big).isNotDone(); // 3 free
        batchHolds.close();
        assertThat(big).isCompleted();
        check(api);
    }

    @Test
    void theParentsOwnRequestsComeLast() {
        Semaphore api = api();
        Permit all = api.partition("batch").tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> own = api.acquireAsync(1);
        CompletableFuture<Permit> browse = api.partition("browse").acquireAsync(4); // 3 owed + 1 beyond
        all.release(1);
        assertThat(own).isNotDone();
        assertThat(browse).isNotDone();
        all.release(3);
        assertThat(browse).isCompleted();
        assertThat(own).isNotDone();
        all.release(1);
        assertThat(own).isCompleted();
        check(api);
    }

    @Test
    void withinAPartitionRequestsAreServedInArrivalOrder() {
        Semaphore api = api();
        Semaphore browse = api.partition("browse");
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> first = browse.acquireAsync(3);
        CompletableFuture<Permit> second = browse.acquireAsync(1);
        all.release(1);
        assertThat(second).as("not before the head").isNotDone();
        all.release(2);
        assertThat(first).isCompleted();
        all.release(1);
        assertThat(second).isCompleted();
        assertThat(browse.queueLength()).isZero();
        check(api);
    }

    // ---------------------------------------------------------------- resizing

    @Test
    void guaranteesFollowTheLimit() {
        Semaphore api = api();
        Partitioned p = (Partitioned) api;
        assertThat(p.partitionStates()).extracting(Partitioned.PartitionState::guarantee).containsExactly(5L, 3L, 2L);
        api.setPermits(20);
        assertThat(p.partitionStates()).extracting(Partitioned.PartitionState::guarantee).containsExactly(10L, 6L, 4L);
        Permit batch = api.partition("batch").tryAcquire(20).orElseThrow();
        CompletableFuture<Permit> checkout = api.partition("checkout").acquireAsync(10);
        api.setPermits(30); // 10 more: all owed to checkout (guarantee 15 now)
        assertThat(checkout).isCompleted();
        api.setPermits(4); // below what is held: nobody revoked
        assertThat(p.partitionStates()).extracting(Partitioned.PartitionState::used).containsExactly(10L, 0L, 20L);
        assertThat(api.availablePermits()).isEqualTo(-26);
        check(api);
        batch.close();
        checkout.join().close();
        assertThat(api.availablePermits()).isEqualTo(4);
        check(api);
    }

    // ---------------------------------------------------------------- P5, P6, views' queries

    @Test
    void tryAcquireOnAViewSucceedsExactlyWhenTheRequestWouldBeServed() {
        Semaphore api = api();
        Semaphore browse = api.partition("browse");
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> queued = browse.acquireAsync(3);
        all.release(3);
        assertThat(queued).isCompleted(); // would have been served: it was
        CompletableFuture<Permit> waiting = browse.acquireAsync(2);
        all.release(1);
        assertThat(browse.tryAcquire(1)).as("FIFO: a queue is in the way").isEmpty();
        assertThat(browse.availablePermits()).isEqualTo(1);
        waiting.cancel(false);
        assertThat(browse.tryAcquire(1)).isPresent();
        check(api);
    }

    @Test
    void awaitIdleOnAViewWaitsForThePartitionOnly() {
        Semaphore api = api();
        Semaphore batch = api.partition("batch");
        Permit other = api.partition("checkout").tryAcquire(2).orElseThrow();
        Permit mine = batch.tryAcquire(1).orElseThrow();
        CompletableFuture<Void> batchIdle = batch.awaitIdleAsync();
        CompletableFuture<Void> allIdle = api.awaitIdleAsync();
        assertThat(batchIdle).isNotDone();
        mine.close();
        assertThat(batchIdle).isCompleted();
        assertThat(allIdle).isNotDone();
        other.close();
        assertThat(allIdle).isCompleted();
        assertThat(batch.awaitIdleAsync()).isCompleted();
        check(api);
    }

    @Test
    void queueLengthsAreEachPartitionsAndTheParentsIsTheirSum() {
        Semaphore api = api();
        Permit all = api.tryAcquire(10).orElseThrow();
        api.partition("browse").acquireAsync(1);
        api.partition("batch").acquireAsync(1);
        api.partition("batch").acquireAsync(1);
        api.acquireAsync(1);
        assertThat(api.partition("checkout").queueLength()).isZero();
        assertThat(api.partition("batch").queueLength()).isEqualTo(2);
        assertThat(api.queueLength()).isEqualTo(4);
        assertThat(((Partitioned) api).partitionStates()).extracting(Partitioned.PartitionState::queued)
                .containsExactly(0, 1, 2);
        all.close();
        assertThat(api.queueLength()).isZero();
        check(api);
    }

    // ---------------------------------------------------------------- close

    @Test
    void closingTheParentClosesEveryPartition() throws Exception {
        Semaphore api = api();
        Semaphore batch = api.partition("batch");
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> waiting = batch.acquireAsync(1);
        IllegalStateException cause = new IllegalStateException("shutting down");
        api.close(cause);
        assertThat(batch.isClosed()).isTrue();
        assertThatThrownBy(waiting::get).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(SemaphoreClosedException.class).hasMessageContaining("api/batch")
                .cause().isSameAs(cause);
        assertThatThrownBy(() -> batch.tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
        all.close();
        assertThat(batch.awaitIdleAsync()).isCompleted();
        check(api);
    }

    // ---------------------------------------------------------------- Permits

    @Test
    void aPermitGoesBackToItsOwnPartitionWhateverIsDoneWithIt() throws Exception {
        Semaphore api = api();
        Semaphore browse = api.partition("browse");
        Permit p = browse.acquire(6);
        Permit part = p.split(2);
        assertThat(group(api).heldForTests()).containsEntry("browse", 6L);
        p.release(1);
        assertThat(group(api).heldForTests()).containsEntry("browse", 5L);
        part.forget(); // consumed: the limit drops by 2
        assertThat(api.permits()).isEqualTo(8);
        assertThat(group(api).heldForTests()).containsEntry("browse", 3L);
        Permit other = api.partition("batch").acquire(1);
        assertThatThrownBy(() -> p.merge(other)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("another semaphore");
        p.merge(browse.acquire(1));
        assertThat(p.permits()).isEqualTo(4);
        p.close();
        other.close();
        assertThat(group(api).heldForTests()).containsValues(0L, 0L, 0L, 0L);
        assertThat(api.availablePermits()).isEqualTo(8);
        check(api);
    }

    @Test
    void drainTakesWhatThePartitionCouldTakeNow() {
        Semaphore api = api();
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> checkout = api.partition("checkout").acquireAsync(5);
        all.release(7); // 5 to checkout, 2 free
        assertThat(checkout).isCompleted();
        try (Permit d = api.partition("batch").drainPermits()) {
            assertThat(d.permits()).isEqualTo(2);
        }
        check(api);
    }

    @Test
    void blockingAndTimedAcquiresOfAViewWaitAndTimeOutLikeAnyOther() throws Exception {
        Semaphore api = api();
        Semaphore batch = api.partition("batch");
        Permit all = api.partition("checkout").tryAcquire(10).orElseThrow();
        assertThatThrownBy(() -> batch.acquire(1, Duration.ofMillis(20))).isInstanceOf(TimeoutException.class)
                .hasMessageContaining("api/batch");
        Thread t = Thread.ofVirtual().start(() -> {
            try (Permit p = batch.acquire(2)) {
                assertThat(p.permits()).isEqualTo(2);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        while (batch.queueLength() == 0) {
            Thread.onSpinWait();
        }
        all.release(2);
        t.join();
        all.close();
        assertThat(api.availablePermits()).isEqualTo(10);
        check(api);
    }

    // ---------------------------------------------------------------- listeners

    @Test
    void eventsOfAPartitionsRequestCarryTheView() {
        List<String> events = new CopyOnWriteArrayList<>();
        SemaphoreListener l = new SemaphoreListener() {
            @Override
            public void acquired(Semaphore s, long permits, long waitNanos) {
                events.add("acquired " + s.name() + " " + permits);
            }

            @Override
            public void released(Semaphore s, long permits, long heldNanos) {
                events.add("released " + s.name() + " " + permits);
            }

            @Override
            public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
                events.add("rejected " + s.name() + " " + why);
            }
        };
        Semaphore api = api();
        Semaphore batch = api.partition("batch"); // made before the listener: it still hears
        api.addListener(l);
        batch.tryAcquire(2).orElseThrow().close();
        api.tryAcquire(1).orElseThrow().close();
        Permit all = api.tryAcquire(10).orElseThrow();
        assertThat(batch.tryAcquire()).isEmpty();
        all.close();
        api.removeListener(l);
        batch.tryAcquire().orElseThrow().close();
        assertThat(events).containsExactly("acquired api/batch 2", "released api/batch 2", "acquired api 1",
                "released api 1", "acquired api 10", "rejected api/batch UNAVAILABLE", "released api 10");
    }
}
