package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.internal.PartitionSpec;
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
 * The rules of API.md §11a on the Redis semaphore, the scenarios of the local engine's PartitionsTest one for
 * one (P1-P6 of dev.sema.Partitions, kept by partitions.lua), plus what only Redis has: two processes on one
 * partitioned limit, the stored partitions winning over a builder's, exact guarantees computed in Lua.
 *
 * <p>A waiter's grant reaches it by a message, after the release that made it has returned; so whether a
 * request was served is read from Redis (the queues' lengths, each partition's held permits), which the
 * release's script decided before it returned, and only then is the future awaited. No timing is asserted.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisPartitionsTest extends RedisTestSupport {

    /** Limit 10: checkout 0.5 (guarantee 5), browse 0.3 (3), batch 0.2 (2). */
    private RedisSemaphore api() {
        return api(a);
    }

    private RedisSemaphore api(RedisSemaphores on) {
        return on.semaphore(name).permits(10).maxPermits(100)
                .partition("checkout", 0.5).partition("browse", 0.3).partition("batch", 0.2).build();
    }

    private static Permit granted(CompletableFuture<Permit> f) throws Exception {
        return f.get(20, TimeUnit.SECONDS);
    }

    /** Each partition's held permits (partitionStates, one round trip), then the parent's own. */
    private static List<Long> held(Semaphore api) {
        List<Long> out = new ArrayList<>();
        long sum = 0;
        for (Partitioned.PartitionState p : ((Partitioned) api).partitionStates()) {
            out.add(p.used());
            sum += p.used();
        }
        out.add(api.permits() - api.availablePermits() - sum);
        return out;
    }

    private void check() {
        checkPartitionInvariants(redis, name);
    }

    // ---------------------------------------------------------------- declaration

    @Test
    void viewsAreNamedAfterTheParentAndListedInPriorityOrder() {
        RedisSemaphore api = api();
        assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch");
        RedisSemaphore batch = api.partition("batch");
        assertThat(batch.name()).isEqualTo(name + "/batch");
        assertThat(api.partition("batch")).isSameAs(batch);
        assertThat(batch.partitionNames()).isEmpty();
        assertThat(batch.permits()).isEqualTo(10);
        assertThat(batch.maxPermits()).isEqualTo(100);
        assertThat(batch.lease()).isEqualTo(api.lease());
        assertThat(((Partitioned) batch).partitionStates()).isEmpty();
        assertThat(a.semaphore(name + "-flat").permits(3).build().partitionNames()).isEmpty();
        assertThat(((Partitioned) api).partitionStates()).extracting(Partitioned.PartitionState::name)
                .containsExactly("checkout", "browse", "batch");
    }

    @Test
    void anUnknownPartitionIsRefusedNamingTheKnownOnes() {
        RedisSemaphore api = api();
        assertThatThrownBy(() -> api.partition("admin")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'admin'").hasMessageContaining("[checkout, browse, batch]");
        assertThatThrownBy(() -> a.semaphore(name + "-flat").permits(1).build().partition("x"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no partitions");
        assertThatThrownBy(() -> api.partition("batch").partition("x"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("partition of semaphore '" + name + "'");
        assertThatThrownBy(() -> api.partition(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void badSharesAndNamesStopTheBuildAsTheLocalBuilderDoes() {
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition("a", 0.6).partition("b", 0.5).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("add up to 1.1").hasMessageContaining("a 0.6 + b 0.5");
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition("a", 0).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'a'").hasMessageContaining("0.0");
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition("a", 1.5).build())
                .hasMessageContaining("share 1.5");
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition("a", Double.NaN).build())
                .hasMessageContaining("share NaN");
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition("a", 0.1).partition("a", 0.1).build())
                .hasMessageContaining("'a'").hasMessageContaining("twice");
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition("", 0.1).build())
                .hasMessageContaining("empty name");
        assertThatThrownBy(() -> a.semaphore(name).permits(10).partition(null, 0.1))
                .isInstanceOf(NullPointerException.class);
        assertThat(redis.exists("sem:{" + name + "}:meta")).as("nothing was created").isZero();
    }

    @Test
    void viewsCannotBeResizedClosedOrListenedTo() {
        RedisSemaphore api = api();
        RedisSemaphore batch = api.partition("batch");
        assertThatThrownBy(() -> batch.setPermits(3)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("'" + name + "/batch'").hasMessageContaining("semaphore '" + name + "'");
        assertThatThrownBy(() -> batch.addPermits(3)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> batch.reducePermits(3)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(batch::close).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> batch.close(new IllegalStateException())).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> batch.addListener(new SemaphoreListener() { }))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("semaphore '" + name + "'");
        assertThat(batch.isClosed()).isFalse();
        assertThat(api.permits()).isEqualTo(10);
    }

    // ---------------------------------------------------------------- P1: the hard limit

    @Test
    void allPartitionsTogetherNeverHoldMoreThanTheLimit() {
        RedisSemaphore api = api();
        List<Permit> all = new ArrayList<>();
        for (String p : api.partitionNames()) {
            all.add(api.partition(p).tryAcquire(3).orElseThrow());
        }
        all.add(api.tryAcquire(1).orElseThrow());
        assertThat(api.availablePermits()).isZero();
        for (String p : api.partitionNames()) {
            assertThat(api.partition(p).tryAcquire()).isEmpty();
            assertThat(api.partition(p).availablePermits()).isZero();
        }
        assertThat(api.tryAcquire()).isEmpty();
        assertThat(held(api)).containsExactly(3L, 3L, 3L, 1L);
        check();
        all.forEach(Permit::close);
        assertThat(api.availablePermits()).isEqualTo(10);
        check();
    }

    // ---------------------------------------------------------------- work-conserving

    @Test
    void aPartitionAloneMayUseTheWholeLimit() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore batch = api.partition("batch");
        assertThat(batch.availablePermits()).isEqualTo(10);
        try (Permit p = batch.acquire(10)) {
            assertThat(api.availablePermits()).isZero();
            assertThat(held(api)).containsExactly(0L, 0L, 10L, 0L);
        }
        check();
    }

    // ---------------------------------------------------------------- P2: guarantee first

    @Test
    void permitsOwedToAWaitingPartitionGoToItAndAreNeverLent() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore checkout = api.partition("checkout");
        RedisSemaphore batch = api.partition("batch");
        Permit batchHolds = batch.tryAcquire(10).orElseThrow(); // batch alone took everything
        CompletableFuture<Permit> owed = checkout.acquireAsync(5); // within checkout's guarantee of 5
        awaitQueueLength(checkout, 1);
        batchHolds.release(3); // 3 free, all owed to checkout
        assertThat(checkout.queueLength()).isOne();
        assertThat(batch.tryAcquire()).as("batch may not take permits owed to checkout").isEmpty();
        assertThat(api.partition("browse").tryAcquire()).as("browse may not take permits owed to checkout").isEmpty();
        assertThat(api.tryAcquire()).as("the parent's own requests may not take permits owed to checkout").isEmpty();
        assertThat(batch.availablePermits()).isZero();
        assertThat(checkout.availablePermits()).isEqualTo(3);
        check();
        batchHolds.release(2);
        assertThat(checkout.queueLength()).isZero();
        assertThat(granted(owed).permits()).isEqualTo(5);
        check();
        owed.join().close();
        batchHolds.close();
        check();
    }

    @Test
    void aGuaranteedRequestOfALowPartitionIsServedBeforeAHighOneBeyondItsGuarantee() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore checkout = api.partition("checkout");
        RedisSemaphore browse = api.partition("browse");
        Permit checkoutHolds = checkout.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> beyond = checkout.acquireAsync(2); // checkout is past its guarantee
        CompletableFuture<Permit> guaranteed = browse.acquireAsync(3); // browse is owed 3
        awaitQueueLength(api, 2);
        checkoutHolds.release(3);
        assertThat(browse.queueLength()).as("guarantee first").isZero();
        assertThat(checkout.queueLength()).isOne();
        assertThat(granted(guaranteed).permits()).isEqualTo(3);
        checkoutHolds.release(2);
        assertThat(granted(beyond).permits()).isEqualTo(2);
        check();
    }

    @Test
    void whenFreePermitsDoNotCoverEverythingOwedTheyArePaidInPriorityOrder() throws Exception {
        RedisSemaphore api = api();
        Permit parentHolds = api.tryAcquire(10).orElseThrow(); // the parent's own took everything
        CompletableFuture<Permit> batch = api.partition("batch").acquireAsync(2);
        CompletableFuture<Permit> checkout = api.partition("checkout").acquireAsync(5);
        awaitQueueLength(api, 2);
        parentHolds.release(2); // both are owed; checkout comes first
        assertThat(api.queueLength()).isEqualTo(2);
        parentHolds.release(3);
        assertThat(api.partition("checkout").queueLength()).isZero();
        assertThat(api.partition("batch").queueLength()).isOne();
        granted(checkout);
        parentHolds.release(2);
        granted(batch);
        check();
    }

    // ---------------------------------------------------------------- P3: then priority

    @Test
    void beyondTheirGuaranteesHigherPartitionsAreServedFirst() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore checkout = api.partition("checkout");
        RedisSemaphore browse = api.partition("browse");
        Permit c = checkout.tryAcquire(5).orElseThrow(); // each at its guarantee
        Permit b = browse.tryAcquire(3).orElseThrow();
        Permit own = api.tryAcquire(2).orElseThrow();
        CompletableFuture<Permit> browseMore = browse.acquireAsync(1); // arrived first
        awaitQueueLength(browse, 1);
        CompletableFuture<Permit> checkoutMore = checkout.acquireAsync(1);
        awaitQueueLength(checkout, 1);
        own.release(1);
        assertThat(checkout.queueLength()).as("higher priority first").isZero();
        assertThat(browse.queueLength()).isOne();
        granted(checkoutMore);
        own.release(1);
        granted(browseMore);
        c.close();
        b.close();
        checkoutMore.join().close();
        browseMore.join().close();
        assertThat(api.availablePermits()).isEqualTo(10);
        check();
    }

    @Test
    void aLowerRequestNeverTakesWhatAWaitingHigherHeadNeeds() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore checkout = api.partition("checkout");
        RedisSemaphore batch = api.partition("batch");
        Permit checkoutHolds = checkout.tryAcquire(5).orElseThrow(); // its guarantee
        Permit batchHolds = batch.tryAcquire(3).orElseThrow(); // its guarantee of 2, and 1 borrowed
        Permit ownHolds = api.tryAcquire(2).orElseThrow();
        CompletableFuture<Permit> big = checkout.acquireAsync(3); // beyond checkout's guarantee
        awaitQueueLength(checkout, 1);
        ownHolds.close(); // 2 free, the big head needs 3
        assertThat(checkout.queueLength()).isOne();
        assertThat(batch.tryAcquire()).as("batch is at its guarantee: beyond it, it comes after checkout").isEmpty();
        assertThat(api.tryAcquire()).isEmpty();
        CompletableFuture<Permit> small = batch.acquireAsync(1);
        awaitQueueLength(batch, 1);
        batchHolds.release(1);
        assertThat(checkout.queueLength()).as("the large high-priority head is not starved").isZero();
        assertThat(batch.queueLength()).isOne();
        granted(big).close();
        granted(small);
        checkoutHolds.close();
        batchHolds.close();
        small.join().close();
        assertThat(api.availablePermits()).isEqualTo(10);
        check();
    }

    @Test
    void aPartitionBackBelowItsGuaranteeIsServedBeforeAHigherOneBeyondIts() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore checkout = api.partition("checkout");
        RedisSemaphore batch = api.partition("batch");
        Permit checkoutHolds = checkout.tryAcquire(5).orElseThrow();
        Permit batchHolds = batch.tryAcquire(5).orElseThrow();
        CompletableFuture<Permit> big = checkout.acquireAsync(4); // beyond checkout's guarantee
        awaitQueueLength(checkout, 1);
        CompletableFuture<Permit> small = batch.acquireAsync(1); // beyond batch's, for now
        awaitQueueLength(batch, 1);
        batchHolds.release(4); // batch holds 1 < 2: its head is within what it is owed
        assertThat(batch.queueLength()).as("guarantee first").isZero();
        assertThat(checkout.queueLength()).isOne(); // 3 free
        granted(small);
        batchHolds.close();
        granted(big);
        check();
    }

    @Test
    void theParentsOwnRequestsComeLast() throws Exception {
        RedisSemaphore api = api();
        Permit all = api.partition("batch").tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> own = api.acquireAsync(1);
        awaitQueueLength(api, 1);
        CompletableFuture<Permit> browse = api.partition("browse").acquireAsync(4); // 3 owed + 1 beyond
        awaitQueueLength(api, 2);
        all.release(1);
        assertThat(api.queueLength()).isEqualTo(2);
        all.release(3);
        assertThat(api.partition("browse").queueLength()).isZero();
        assertThat(api.queueLength()).isOne();
        granted(browse);
        all.release(1);
        granted(own);
        check();
    }

    @Test
    void withinAPartitionRequestsAreServedInArrivalOrder() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore browse = api.partition("browse");
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> first = browse.acquireAsync(3);
        awaitQueueLength(browse, 1);
        CompletableFuture<Permit> second = browse.acquireAsync(1);
        awaitQueueLength(browse, 2);
        all.release(1);
        assertThat(browse.queueLength()).as("not before the head").isEqualTo(2);
        all.release(2);
        assertThat(browse.queueLength()).isOne();
        assertThat(granted(first).permits()).isEqualTo(3);
        all.release(1);
        granted(second);
        assertThat(browse.queueLength()).isZero();
        check();
    }

    @Test
    void aWholeReleaseServesTheOnlyPartitionWithWaitersWhicheverPartitionsBothAreOf() throws Exception {
        // p_release.lua's fast path: every waiter in one slot, whose counts change with the releaser's.
        RedisSemaphore api = api();
        RedisSemaphore checkout = api.partition("checkout");
        RedisSemaphore browse = api.partition("browse");
        Permit checkoutHolds = checkout.tryAcquire(7).orElseThrow();
        Permit batchHolds = api.partition("batch").tryAcquire(1).orElseThrow();
        Permit browseHolds = browse.tryAcquire(1).orElseThrow();
        Permit ownHolds = api.tryAcquire(1).orElseThrow(); // all 10 held
        // batch to browse
        CompletableFuture<Permit> f = browse.acquireAsync(1);
        awaitQueueLength(api, 1);
        batchHolds.close();
        assertThat(api.queueLength()).isZero();
        Permit b1 = granted(f);
        assertThat(held(api)).containsExactly(7L, 2L, 0L, 1L);
        check();
        // browse to browse
        f = browse.acquireAsync(1);
        awaitQueueLength(api, 1);
        browseHolds.close();
        assertThat(api.queueLength()).isZero();
        Permit b2 = granted(f);
        assertThat(held(api)).containsExactly(7L, 2L, 0L, 1L);
        check();
        // the parent's own to checkout
        f = checkout.acquireAsync(1);
        awaitQueueLength(api, 1);
        ownHolds.close();
        assertThat(api.queueLength()).isZero();
        Permit c1 = granted(f);
        assertThat(held(api)).containsExactly(8L, 2L, 0L, 0L);
        check();
        // checkout to the parent's own
        f = api.acquireAsync(1);
        awaitQueueLength(api, 1);
        c1.close();
        assertThat(api.queueLength()).isZero();
        Permit o1 = granted(f);
        assertThat(held(api)).containsExactly(7L, 2L, 0L, 1L);
        check();
        // a head that does not fit yet: the release alone, then the next one serves it
        f = checkout.acquireAsync(2);
        awaitQueueLength(api, 1);
        o1.close();
        assertThat(api.queueLength()).isOne();
        assertThat(held(api)).containsExactly(7L, 2L, 0L, 0L);
        check();
        b1.close();
        assertThat(api.queueLength()).isZero();
        Permit c2 = granted(f);
        assertThat(held(api)).containsExactly(9L, 1L, 0L, 0L);
        check();
        checkoutHolds.close();
        b2.close();
        c2.close();
        assertThat(api.availablePermits()).isEqualTo(10);
        check();
    }

    // ---------------------------------------------------------------- resizing

    @Test
    void guaranteesFollowTheLimit() throws Exception {
        RedisSemaphore api = api();
        Partitioned p = (Partitioned) api;
        assertThat(p.partitionStates()).extracting(Partitioned.PartitionState::guarantee).containsExactly(5L, 3L, 2L);
        api.setPermits(20);
        assertThat(p.partitionStates()).extracting(Partitioned.PartitionState::guarantee).containsExactly(10L, 6L, 4L);
        Permit batch = api.partition("batch").tryAcquire(20).orElseThrow();
        CompletableFuture<Permit> checkout = api.partition("checkout").acquireAsync(10);
        awaitQueueLength(api, 1);
        api.setPermits(30); // 10 more: all owed to checkout (guarantee 15 now)
        assertThat(api.queueLength()).isZero();
        granted(checkout);
        api.setPermits(4); // below what is held: nobody revoked
        assertThat(p.partitionStates()).extracting(Partitioned.PartitionState::used).containsExactly(10L, 0L, 20L);
        assertThat(api.availablePermits()).isEqualTo(-26);
        assertThat(api.partition("browse").availablePermits()).as("a view reports what it could take: never negative")
                .isZero();
        check();
        batch.close();
        checkout.join().close();
        assertThat(api.availablePermits()).isEqualTo(4);
        check();
    }

    @Test
    void guaranteesAreTheExactDecimalsOfTheSharesWhateverTheLimit() {
        List<String> names = List.of("a", "b", "c", "d");
        List<Double> shares = List.of(0.29, 1.0 / 3, 0.123456789012345, 1e-5);
        RedisSemaphore.Builder builder = a.semaphore(name).permits(100).maxPermits(Semaphore.MAX_PERMITS);
        for (int i = 0; i < names.size(); i++) {
            builder.partition(names.get(i), shares.get(i));
        }
        RedisSemaphore s = builder.build();
        PartitionSpec spec = PartitionSpec.of(name, names, shares);
        for (long limit : new long[] {100, 0, 1, 3, 7, 300, 99_999, 100_000, 123_456_789, 1L << 31, 1L << 40,
            Semaphore.MAX_PERMITS - 1, Semaphore.MAX_PERMITS}) {
            s.setPermits(limit);
            List<Long> expected = new ArrayList<>();
            for (int i = 0; i < names.size(); i++) {
                expected.add(spec.guarantee(i, limit));
            }
            assertThat(((Partitioned) s).partitionStates()).as("guarantees under " + limit)
                    .extracting(Partitioned.PartitionState::guarantee).containsExactlyElementsOf(expected);
        }
        assertThat(((Partitioned) s).partitionStates()).extracting(Partitioned.PartitionState::share)
                .containsExactlyElementsOf(shares);
    }

    // ---------------------------------------------------------------- P5, P6, views' queries

    @Test
    void tryAcquireOnAViewSucceedsExactlyWhenTheRequestWouldBeServed() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore browse = api.partition("browse");
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> queued = browse.acquireAsync(3);
        awaitQueueLength(browse, 1);
        all.release(3);
        assertThat(browse.queueLength()).isZero(); // would have been served: it was
        granted(queued);
        CompletableFuture<Permit> waiting = browse.acquireAsync(2);
        awaitQueueLength(browse, 1);
        all.release(1);
        assertThat(browse.tryAcquire(1)).as("FIFO: a queue is in the way").isEmpty();
        assertThat(browse.availablePermits()).isEqualTo(1);
        waiting.cancel(false); // its CANCEL goes before the next call, on the same connection
        assertThat(browse.tryAcquire(1)).isPresent();
        check();
    }

    @Test
    void awaitIdleOnAViewWaitsForThePartitionOnly() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore batch = api.partition("batch");
        Permit other = api.partition("checkout").tryAcquire(2).orElseThrow();
        Permit mine = batch.tryAcquire(1).orElseThrow();
        CompletableFuture<Void> batchIdle = batch.awaitIdleAsync();
        CompletableFuture<Void> allIdle = api.awaitIdleAsync();
        awaitQueueLength(api, 2);
        mine.close();
        batchIdle.get(20, TimeUnit.SECONDS);
        assertThat(api.queueLength()).as("the parent's idle wait still waits").isOne();
        other.close();
        allIdle.get(20, TimeUnit.SECONDS);
        batch.awaitIdleAsync().get(20, TimeUnit.SECONDS);
        batch.awaitIdle();
        check();
    }

    @Test
    void queueLengthsAreEachPartitionsAndTheParentsIsTheirSum() {
        RedisSemaphore api = api();
        Permit all = api.tryAcquire(10).orElseThrow();
        List<CompletableFuture<Permit>> waiting = List.of(api.partition("browse").acquireAsync(1),
                api.partition("batch").acquireAsync(1), api.partition("batch").acquireAsync(1), api.acquireAsync(1));
        awaitQueueLength(api, 4);
        assertThat(api.partition("checkout").queueLength()).isZero();
        assertThat(api.partition("batch").queueLength()).isEqualTo(2);
        assertThat(api.queueLength()).isEqualTo(4);
        assertThat(((Partitioned) api).partitionStates()).extracting(Partitioned.PartitionState::queued)
                .containsExactly(0, 1, 2);
        all.close();
        assertThat(api.queueLength()).isZero();
        waiting.forEach(f -> f.join().close());
        check();
    }

    // ---------------------------------------------------------------- close

    @Test
    void closingTheParentClosesEveryPartition() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore batch = api.partition("batch");
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> waiting = batch.acquireAsync(1);
        awaitQueueLength(batch, 1);
        IllegalStateException cause = new IllegalStateException("shutting down");
        api.close(cause);
        assertThat(batch.isClosed()).isTrue();
        assertThatThrownBy(() -> waiting.get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(SemaphoreClosedException.class).hasMessageContaining(name + "/batch")
                .cause().isSameAs(cause);
        assertThatThrownBy(() -> batch.tryAcquire()).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining(name + "/batch");
        all.close();
        batch.awaitIdleAsync().get(20, TimeUnit.SECONDS);
        check();
    }

    @Test
    void aCloseByAnotherProcessFailsThisProcesssPartitionWaiters() throws Exception {
        RedisSemaphore mine = api(a);
        RedisSemaphore theirs = b.semaphore(name).build();
        Permit all = mine.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> waiting = mine.partition("checkout").acquireAsync(1);
        awaitQueueLength(mine, 1);
        theirs.close();
        assertThatThrownBy(() -> waiting.get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(SemaphoreClosedException.class).hasMessageContaining(name + "/checkout");
        all.close();
        check();
    }

    // ---------------------------------------------------------------- Permits

    @Test
    void aPermitGoesBackToItsOwnPartitionWhateverIsDoneWithIt() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore browse = api.partition("browse");
        RedisPermit p = browse.acquire(6);
        Permit part = p.split(2);
        assertThat(held(api)).containsExactly(0L, 6L, 0L, 0L);
        p.release(1);
        assertThat(held(api)).containsExactly(0L, 5L, 0L, 0L);
        part.forget(); // consumed: the limit drops by 2
        assertThat(api.permits()).isEqualTo(8);
        assertThat(held(api)).containsExactly(0L, 3L, 0L, 0L);
        Permit other = api.partition("batch").acquire(1);
        assertThatThrownBy(() -> p.merge(other)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("another semaphore");
        p.merge(browse.acquire(1));
        assertThat(p.permits()).isEqualTo(4);
        assertThat(held(api)).containsExactly(0L, 4L, 1L, 0L);
        check();
        p.close();
        other.close();
        assertThat(held(api)).containsExactly(0L, 0L, 0L, 0L);
        assertThat(api.availablePermits()).isEqualTo(8);
        check();
    }

    @Test
    void fencingTokensIncreaseAcrossThePartitionsOfOneSemaphore() throws Exception {
        RedisSemaphore api = api();
        long last = 0;
        for (String p : List.of("batch", "checkout", "browse", "batch")) {
            try (RedisPermit permit = api.partition(p).acquire()) {
                assertThat(permit.fencingToken()).isGreaterThan(last);
                last = permit.fencingToken();
            }
        }
        try (RedisPermit permit = api.acquire()) {
            assertThat(permit.fencingToken()).isGreaterThan(last);
        }
    }

    @Test
    void drainTakesWhatThePartitionCouldTakeNow() throws Exception {
        RedisSemaphore api = api();
        Permit all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> checkout = api.partition("checkout").acquireAsync(5);
        awaitQueueLength(api, 1);
        all.release(7); // 5 to checkout, 2 free
        granted(checkout);
        try (Permit d = api.partition("batch").drainPermits()) {
            assertThat(d.permits()).isEqualTo(2);
            assertThat(held(api)).containsExactly(5L, 0L, 2L, 3L);
        }
        check();
    }

    @Test
    void blockingTimedInterruptedAndCancelledAcquiresOfAViewLeaveItsQueue() throws Exception {
        RedisSemaphore api = api();
        RedisSemaphore batch = api.partition("batch");
        Permit all = api.partition("checkout").tryAcquire(10).orElseThrow();
        assertThatThrownBy(() -> batch.acquire(1, Duration.ofMillis(20))).isInstanceOf(TimeoutException.class)
                .hasMessageContaining(name + "/batch");
        assertThat(batch.queueLength()).isZero();
        Thread interrupted = Thread.ofPlatform().start(() -> {
            try {
                batch.acquire(1);
                throw new AssertionError("granted");
            } catch (InterruptedException expected) {
                // left the queue
            }
        });
        awaitQueueLength(batch, 1);
        interrupted.interrupt();
        interrupted.join(20_000);
        assertThat(interrupted.isAlive()).isFalse();
        CompletableFuture<Permit> cancelled = batch.acquireAsync(1);
        awaitQueueLength(batch, 1);
        cancelled.cancel(false);
        awaitQueueLength(batch, 0);
        Thread t = Thread.ofVirtual().start(() -> {
            try (Permit p = batch.acquire(2)) {
                assertThat(p.permits()).isEqualTo(2);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        awaitQueueLength(batch, 1);
        all.release(2);
        t.join(20_000);
        assertThat(t.isAlive()).isFalse();
        all.close();
        assertThat(api.availablePermits()).isEqualTo(10);
        check();
    }

    // ---------------------------------------------------------------- listeners

    @Test
    void eventsOfAPartitionsRequestCarryTheView() throws Exception {
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
        RedisSemaphore api = api();
        RedisSemaphore batch = api.partition("batch"); // made before the listener: it still hears
        api.addListener(l);
        batch.tryAcquire(2).orElseThrow().close();
        api.tryAcquire(1).orElseThrow().close();
        Permit all = api.tryAcquire(10).orElseThrow();
        assertThat(batch.tryAcquire()).isEmpty();
        all.close();
        String b = name + "/batch";
        assertThat(events).containsExactly("acquired " + b + " 2", "released " + b + " 2", "acquired " + name + " 1",
                "released " + name + " 1", "acquired " + name + " 10", "rejected " + b + " UNAVAILABLE",
                "released " + name + " 10");
        // A request granted through the queue, by a message: its events carry the view too.
        events.clear();
        all = api.tryAcquire(10).orElseThrow();
        CompletableFuture<Permit> queued = batch.acquireAsync(1);
        awaitQueueLength(batch, 1);
        all.close();
        Permit p = granted(queued);
        await("the grant is reported", () -> events.contains("acquired " + b + " 1"));
        p.close();
        api.removeListener(l);
        batch.tryAcquire().orElseThrow().close();
        assertThat(events).containsExactlyInAnyOrder("acquired " + name + " 10", "released " + name + " 10",
                "acquired " + b + " 1", "released " + b + " 1");
    }

    // ---------------------------------------------------------------- across processes

    @Test
    void twoProcessesShareOnePartitionedLimit() throws Exception {
        RedisSemaphore one = api(a);
        RedisSemaphore two = api(b);
        Permit batchHolds = two.partition("batch").tryAcquire(10).orElseThrow(); // the other process took it all
        CompletableFuture<Permit> checkout = one.partition("checkout").acquireAsync(5);
        CompletableFuture<Permit> twoBrowse = two.partition("browse").acquireAsync(3);
        awaitQueueLength(one, 2);
        assertThat(one.partition("batch").tryAcquire()).as("the hard limit holds across processes").isEmpty();
        batchHolds.release(4); // owed: checkout 5 first, then browse 3
        assertThat(one.partition("checkout").queueLength()).isOne();
        batchHolds.release(1);
        assertThat(two.partition("checkout").queueLength()).as("each process sees the same queues").isZero();
        Permit c = granted(checkout);
        assertThat(two.partition("browse").queueLength()).isOne();
        batchHolds.release(3);
        Permit bw = granted(twoBrowse);
        assertThat(held(two)).containsExactly(5L, 3L, 2L, 0L);
        assertThat(held(one)).containsExactly(5L, 3L, 2L, 0L);
        check();
        c.close();
        bw.close();
        batchHolds.close();
        assertThat(two.availablePermits()).isEqualTo(10);
        check();
    }

    @Test
    void theStoredPartitionsWinOverAnotherBuildersDeclaration() throws Exception {
        RedisSemaphore first = api(a);
        RedisSemaphore none = b.semaphore(name).permits(3).build(); // declares none: takes the stored ones
        assertThat(none.partitionNames()).containsExactly("checkout", "browse", "batch");
        assertThat(none.permits()).isEqualTo(10);
        RedisSemaphore other = b.semaphore(name).permits(3).partition("x", 0.5).partition("y", 0.5).build();
        assertThat(other.partitionNames()).as("a different declaration: the stored ones are used")
                .containsExactly("checkout", "browse", "batch");
        RedisSemaphore renamed = b.semaphore(name).partition("a", 0.5).partition("b", 0.3).partition("c", 0.2).build();
        assertThat(renamed.partitionNames()).as("as many, named otherwise: still the stored ones")
                .containsExactly("checkout", "browse", "batch");
        assertThat(((Partitioned) other).partitionStates()).extracting(Partitioned.PartitionState::share)
                .containsExactly(0.5, 0.3, 0.2);
        // they all work on the one semaphore
        try (Permit p = none.partition("batch").acquire(4)) {
            assertThat(held(first)).containsExactly(0L, 0L, 4L, 0L);
            assertThat(other.partition("batch").availablePermits()).isEqualTo(6);
        }
        // and a flat semaphore stays flat, whatever a builder declares
        String flat = name + "-flat";
        a.semaphore(flat).permits(2).build();
        RedisSemaphore declared = b.semaphore(flat).partition("x", 0.5).build();
        assertThat(declared.partitionNames()).isEmpty();
        assertThatThrownBy(() -> declared.partition("x")).isInstanceOf(IllegalArgumentException.class);
        try (Permit p = declared.acquire(2)) {
            assertThat(declared.availablePermits()).isZero();
        }
        checkInvariants(flat);
        check();
    }

    @Test
    void aHandleWhoseSemaphoreWasCreatedAgainWithOtherPartitionsIsToldSo() throws Exception {
        RedisSemaphore old = api(a);
        for (String k : redis.keys("sem:{" + name + "}:*")) {
            redis.del(k);
        }
        RedisSemaphore flat = b.semaphore(name).permits(2).build(); // created again, without partitions
        assertThat(flat.partitionNames()).isEmpty();
        assertThatThrownBy(() -> old.partition("batch").tryAcquire()).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("no partitions").hasMessageContaining("open a new handle");
        assertThat(a.semaphore(name).partition("x", 1).build().partitionNames()).as("a new handle takes what is stored")
                .isEmpty();
        assertThat(flat.tryAcquire(2)).isPresent();
        checkInvariants();
    }

    @Test
    void aHandleWhoseSemaphoreWasCreatedAgainWithFewerPartitionsKeepsItsOwnRequestsOfNone() throws Exception {
        RedisSemaphore old = api(a);
        for (String k : redis.keys("sem:{" + name + "}:*")) {
            redis.del(k);
        }
        RedisSemaphore fewer = b.semaphore(name).permits(10).partition("only", 1).build();
        assertThatThrownBy(() -> old.partition("batch").tryAcquire()).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("no such partition");
        try (Permit own = old.tryAcquire(2).orElseThrow(); Permit first = old.partition("checkout").tryAcquire(3)
                .orElseThrow()) {
            assertThat(held(fewer)).as("the old handle's own requests are still of no partition; its first view's"
                    + " go to the one stored partition").containsExactly(3L, 2L);
            check();
        }
        assertThat(fewer.availablePermits()).isEqualTo(10);
    }

    @Test
    void aMissingPartitionedSemaphoreIsCreatedAgainWithItsPartitions() throws Exception {
        RedisSemaphore api = api();
        Permit p = api.partition("browse").acquire(2);
        for (String k : redis.keys("sem:{" + name + "}:*")) {
            redis.del(k);
        }
        try (Permit q = api.partition("batch").acquire(3)) {
            assertThat(held(api)).containsExactly(0L, 0L, 3L, 0L);
            assertThat(api.partitionNames()).containsExactly("checkout", "browse", "batch");
        }
        p.close(); // its grant went with the keys: nothing to give back
        check();
        assertThat(api.availablePermits()).isEqualTo(10);
    }

    @Test
    void aPartitionedSemaphoreExpiresWhenIdleWithAllItsKeys() throws Exception {
        RedisSemaphore api = a.semaphore(name).permits(1).expireWhenIdle(Duration.ofSeconds(60))
                .partition("checkout", 0.5).partition("batch", 0.5).build();
        Permit p = api.partition("batch").acquire(1);
        CompletableFuture<Permit> waiting = api.partition("checkout").acquireAsync(1);
        awaitQueueLength(api, 1);
        List<String> keys = redis.keys("sem:{" + name + "}:*");
        assertThat(keys).hasSize(4);
        for (String k : keys) {
            assertThat(redis.pttl(k)).as(k).isPositive();
        }
        p.close();
        granted(waiting).close();
        check();
    }

    @Test
    void theStoredPartitionsRoundTripExactly() {
        PartitionSpec spec = PartitionSpec.of("s", List.of("check:out|1", "b r o w s e", "bätch", "x"),
                List.of(0.6, 1.0 / 3, 0.05, 1e-9));
        String text = StoredPartitions.encode(spec);
        PartitionSpec back = StoredPartitions.decode("s", text);
        assertThat(StoredPartitions.same(spec, back)).isTrue();
        assertThat(back.names()).containsExactlyElementsOf(spec.names());
        for (long limit : new long[] {0, 1, 10, 999, 1L << 45}) {
            for (int i = 0; i < spec.size(); i++) {
                assertThat(back.guarantee(i, limit)).isEqualTo(spec.guarantee(i, limit));
            }
        }
        assertThat(StoredPartitions.same(spec, null)).isFalse();
        assertThat(StoredPartitions.same(null, null)).isTrue();
        assertThatThrownBy(() -> StoredPartitions.decode("s", "nonsense")).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("semaphore 's'");
    }
}
