package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The {@link Semaphore} contract, with two processes (two connections) sharing each semaphore. */
class RedisSemaphoreContractTest extends RedisTestSupport {

    /** How a test waits for permits. */
    enum Style {
        BLOCKING, TIMED, ASYNC, ASYNC_TIMED;

        CompletableFuture<Permit> acquire(Semaphore s, long permits) {
            return switch (this) {
                case BLOCKING -> onThread(() -> s.acquire(permits));
                case TIMED -> onThread(() -> s.acquire(permits, Duration.ofSeconds(30)));
                case ASYNC -> s.acquireAsync(permits);
                case ASYNC_TIMED -> s.acquireAsync(permits, Duration.ofSeconds(30));
            };
        }

        interface Call {
            Permit get() throws Exception;
        }

        static CompletableFuture<Permit> onThread(Call call) {
            CompletableFuture<Permit> f = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try {
                    f.complete(call.get());
                } catch (Throwable t) {
                    f.completeExceptionally(t);
                }
            });
            return f;
        }
    }

    @Test
    void uncontendedAcquireAndReleaseAreSharedAcrossProcesses() throws Exception {
        RedisSemaphore sa = build(a, 3);
        RedisSemaphore sb = build(b, 99); // exists already: the stored values win
        assertThat(sb.permits()).isEqualTo(3);
        assertThat(sb.maxPermits()).isEqualTo(3);
        assertThat(sb.fairness()).isEqualTo(Fairness.FIFO);

        Permit two = sa.acquire(2);
        assertThat(two).isInstanceOf(RedisPermit.class);
        assertThat(sb.availablePermits()).isEqualTo(1);
        assertThat(sb.tryAcquire(2)).isEmpty();
        Permit one = sb.tryAcquire(1).orElseThrow();
        assertThat(sa.availablePermits()).isZero();
        checkInvariants();
        two.close();
        two.close(); // idempotent
        one.close();
        assertThat(sa.availablePermits()).isEqualTo(3);
        assertThat(sa.toString()).contains(name).contains("available=3");
        checkInvariants();
    }

    @ParameterizedTest
    @EnumSource(Style.class)
    void releaseInOneProcessWakesWaiterInAnother(Style style) throws Exception {
        RedisSemaphore sa = build(a, 2);
        RedisSemaphore sb = build(b, 2);
        Permit held = sa.acquire(2);
        CompletableFuture<Permit> waiter = style.acquire(sb, 2);
        awaitQueueLength(sa, 1);
        assertThat(waiter).isNotDone();
        held.release(1);
        assertThat(sa.queueLength()).isEqualTo(1); // 1 free, the head needs 2
        held.close();
        Permit got = waiter.get(20, TimeUnit.SECONDS);
        assertThat(got.permits()).isEqualTo(2);
        assertThat(sa.availablePermits()).isZero();
        got.close();
        assertThat(sb.availablePermits()).isEqualTo(2);
        checkInvariants();
    }

    @Test
    void waitersOfTwoProcessesAreServedInArrivalOrder() throws Exception {
        RedisSemaphore sa = build(a, 3);
        RedisSemaphore sb = build(b, 3);
        Permit all = sa.acquire(3);
        List<String> order = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Permit>> futures = new ArrayList<>();
        long[] sizes = {2, 1, 3, 1};
        for (int i = 0; i < sizes.length; i++) {
            RedisSemaphore s = i % 2 == 0 ? sb : sa;
            int index = i;
            futures.add(s.acquireAsync(sizes[i]).whenComplete((p, e) -> order.add("w" + index)));
            awaitQueueLength(sa, i + 1);
        }
        // A newcomer may not take free permits past the queue (FIFO), even one that fits.
        all.release(1);
        assertThat(sb.tryAcquire(1)).isEmpty();
        assertThat(order).isEmpty();
        all.release(1); // 2 free: w0 (2) is served; w1 (1) must wait for a permit
        futures.get(0).get(20, TimeUnit.SECONDS).close(); // back to 2 free: w1 (1) served, w2 (3) blocks
        futures.get(1).get(20, TimeUnit.SECONDS);
        assertThat(order).containsExactly("w0", "w1");
        assertThat(sa.queueLength()).isEqualTo(2);
        // w3 (1) fits in the 1 free permit but must not overtake w2 (3): a large head is not starved.
        assertThat(futures.get(3)).isNotDone();
        futures.get(1).join().close();
        all.close();
        futures.get(2).get(20, TimeUnit.SECONDS).close();
        futures.get(3).get(20, TimeUnit.SECONDS).close();
        assertThat(order).containsExactly("w0", "w1", "w2", "w3");
        assertThat(sa.availablePermits()).isEqualTo(3);
        checkInvariants();
    }

    @Test
    void timedAcquireTimesOutAndLeavesTheQueue() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        assertThatThrownBy(() -> sb.acquire(1, Duration.ofMillis(200)))
                .isInstanceOf(TimeoutException.class).hasMessageContaining(name);
        assertThatThrownBy(() -> sb.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> f = sb.acquireAsync(1, Duration.ofMillis(200));
        assertThatThrownBy(() -> f.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> sb.acquireAsync(1, Duration.ofMillis(-1)).get(20, TimeUnit.SECONDS))
                .hasCauseInstanceOf(TimeoutException.class);
        awaitQueueLength(sa, 0);
        held.close();
        assertThat(sb.availablePermits()).isEqualTo(1);
        checkInvariants();
    }

    @Test
    void interruptedWaiterLeavesTheQueueAndClearsTheFlag() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name("waiter").start(() -> {
            try {
                sb.acquire();
            } catch (Throwable e) {
                outcome.set(e);
                if (Thread.currentThread().isInterrupted()) {
                    outcome.set(new AssertionError("interrupt status not cleared"));
                }
            }
        });
        awaitQueueLength(sa, 1);
        awaitState(t, Thread.State.WAITING);
        t.interrupt();
        t.join(20_000);
        assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
        awaitQueueLength(sa, 0);
        held.close();
        assertThat(sa.availablePermits()).isEqualTo(1);
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> sb.acquire()).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        checkInvariants();
    }

    @Test
    void cancelledHeadWakesTheWaitersBehindIt() throws Exception {
        RedisSemaphore sa = build(a, 3);
        RedisSemaphore sb = build(b, 3);
        Permit held = sa.acquire(2);
        CompletableFuture<Permit> big = sb.acquireAsync(3);
        awaitQueueLength(sa, 1);
        CompletableFuture<Permit> small = sa.acquireAsync(1);
        awaitQueueLength(sa, 2);
        assertThat(small).isNotDone();
        assertThat(big.cancel(false)).isTrue();
        small.get(20, TimeUnit.SECONDS).close();
        held.close();
        assertThat(sb.availablePermits()).isEqualTo(3);
        assertThat(sb.queueLength()).isZero();
        checkInvariants();
    }

    @Test
    void cancellationRacingGrantsLosesNoPermit() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        for (int i = 0; i < 30; i++) {
            Permit held = sa.acquire();
            CompletableFuture<Permit> f = (i % 2 == 0 ? sb : sa).acquireAsync(1);
            awaitQueueLength(sa, 1);
            Thread releaser = Thread.ofVirtual().start(held::close);
            f.cancel(false);
            releaser.join(20_000);
            if (!f.isCancelled()) {
                f.join().close(); // the grant won the race
            }
            await("all permits back after round " + i, () -> sa.availablePermits() == 1 && sa.queueLength() == 0);
        }
        checkInvariants();
    }

    @Test
    void interruptRacingAGrantEitherKeepsThePermitWithTheFlagOrGivesItBack() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        int granted = 0;
        for (int i = 0; i < 20; i++) {
            Permit held = sa.acquire();
            AtomicReference<Object> outcome = new AtomicReference<>();
            AtomicBoolean interruptSent = new AtomicBoolean();
            Thread t = Thread.ofPlatform().name("waiter-" + i).start(() -> {
                try {
                    Permit p = sb.acquire();
                    // The grant may win before the interrupt is even sent: look at the flag once it was.
                    while (!interruptSent.get()) {
                        Thread.onSpinWait();
                    }
                    outcome.set(Thread.currentThread().isInterrupted() ? p : new AssertionError("granted, flag lost"));
                    p.close();
                } catch (InterruptedException e) {
                    outcome.set(Thread.currentThread().isInterrupted() ? new AssertionError("flag kept") : e);
                } catch (Throwable e) {
                    outcome.set(e);
                }
            });
            awaitQueueLength(sa, 1);
            awaitState(t, Thread.State.WAITING);
            Thread releaser = Thread.ofVirtual().start(held::close);
            t.interrupt();
            interruptSent.set(true);
            releaser.join(20_000);
            t.join(20_000);
            assertThat(outcome.get()).isInstanceOfAny(Permit.class, InterruptedException.class);
            if (outcome.get() instanceof Permit) {
                granted++;
            }
            await("all permits back after round " + i, () -> sa.availablePermits() == 1 && sa.queueLength() == 0);
        }
        System.out.println("interrupt race: granted " + granted + " of 20");
        checkInvariants();
    }

    @Test
    void borrowedClientIsNotShutDown() throws Exception {
        io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(server.uri());
        try {
            try (RedisSemaphores borrowed = RedisSemaphores.using(client)) {
                RedisSemaphore s = borrowed.semaphore(name).permits(1).build();
                s.acquire().close();
                assertThat(s.availablePermits()).isEqualTo(1);
            }
            try (var c = client.connect()) {
                assertThat(c.sync().ping()).isEqualTo("PONG");
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @Test
    void resizingIsSharedAndNeverRevokes() throws Exception {
        RedisSemaphore sa = a.semaphore(name).permits(2).maxPermits(10).build();
        RedisSemaphore sb = build(b, 0);
        Permit two = sa.acquire(2);
        CompletableFuture<Permit> waiter = sb.acquireAsync(3); // above the limit, within the ceiling: waits
        awaitQueueLength(sa, 1);
        assertThat(sb.reducePermits(5)).isEqualTo(2);
        assertThat(sa.availablePermits()).isEqualTo(-2);
        assertThat(two.permits()).isEqualTo(2);
        sb.setPermits(4);
        assertThat(waiter).isNotDone(); // 4 - 2 = 2 free, needs 3
        assertThat(sa.addPermits(Long.MAX_VALUE)).isEqualTo(6);
        assertThat(sb.permits()).isEqualTo(10);
        Permit three = waiter.get(20, TimeUnit.SECONDS);
        assertThat(sa.availablePermits()).isEqualTo(5);
        assertThat(sa.addPermits(1)).isZero();
        assertThatThrownBy(() -> sb.setPermits(11)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("10");
        assertThatThrownBy(() -> sb.addPermits(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sb.reducePermits(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sb.acquire(11)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("11").hasMessageContaining("10");
        assertThatThrownBy(() -> sb.acquireAsync(-1)).isInstanceOf(IllegalArgumentException.class);
        three.close();
        two.close();
        assertThat(sb.availablePermits()).isEqualTo(10);
        checkInvariants();
    }

    @Test
    void closeFailsTheWaitersOfEveryProcess() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        CompletableFuture<Permit> blocked = Style.BLOCKING.acquire(sb, 1);
        CompletableFuture<Permit> async = sb.acquireAsync(1);
        CompletableFuture<Permit> local = sa.acquireAsync(1);
        awaitQueueLength(sa, 3);
        CompletableFuture<Void> idle = sb.awaitIdleAsync();
        awaitQueueLength(sa, 4);
        sa.close();
        sa.close(); // idempotent
        for (CompletableFuture<Permit> f : List.of(blocked, async, local)) {
            assertThatThrownBy(() -> f.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(SemaphoreClosedException.class);
        }
        assertThat(sb.isClosed()).isTrue();
        assertThatThrownBy(() -> sb.tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> sb.acquire(0)).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> sb.acquireAsync(1).get(20, TimeUnit.SECONDS))
                .hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThat(idle).isNotDone(); // close does not fail awaitIdle
        held.close(); // still releasable
        idle.get(20, TimeUnit.SECONDS);
        assertThat(sb.availablePermits()).isEqualTo(1);
        sb.awaitIdle(); // idle now: returns at once
        checkInvariants();
    }

    @Test
    void awaitIdleWaitsForEveryHolderOfEveryProcess() throws Exception {
        RedisSemaphore sa = build(a, 3);
        RedisSemaphore sb = build(b, 3);
        Permit pa = sa.acquire(1);
        Permit pb = sb.acquire(1);
        CompletableFuture<Void> idle = sa.awaitIdleAsync();
        awaitQueueLength(sb, 1);
        // New arrivals queue behind the idle waiter.
        assertThat(sb.tryAcquire(1)).isEmpty();
        CompletableFuture<Permit> later = sb.acquireAsync(1);
        awaitQueueLength(sb, 2);
        pa.close();
        assertThat(idle).isNotDone();
        pb.close();
        idle.get(20, TimeUnit.SECONDS);
        later.get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }

    @Test
    void zeroPermitRequestSucceedsEvenWithWaitersQueued() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        CompletableFuture<Permit> waiter = sb.acquireAsync(1);
        awaitQueueLength(sa, 1);
        Permit empty = sb.acquire(0);
        assertThat(empty.permits()).isZero();
        assertThat(sb.tryAcquire(0)).isPresent();
        assertThat(sa.acquireAsync(0).get(20, TimeUnit.SECONDS).permits()).isZero();
        empty.close();
        held.close();
        waiter.get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }

    @Test
    void countsNearMaxPermitsStayExact() throws Exception {
        long max = Semaphore.MAX_PERMITS;
        RedisSemaphore sa = a.semaphore(name).permits(max).build();
        RedisSemaphore sb = build(b, 0);
        assertThat(sb.maxPermits()).isEqualTo(max);
        Permit big = sa.acquire(max - 1);
        assertThat(sb.availablePermits()).isEqualTo(1);
        Permit one = sb.tryAcquire(1).orElseThrow();
        assertThat(sb.tryAcquire(1)).isEmpty();
        assertThat(sa.availablePermits()).isZero();
        big.release(max - 3);
        assertThat(sa.availablePermits()).isEqualTo(max - 3);
        assertThat(sb.reducePermits(Long.MAX_VALUE)).isEqualTo(max);
        assertThat(sb.availablePermits()).isEqualTo(-3);
        assertThat(sa.addPermits(Long.MAX_VALUE)).isEqualTo(max);
        big.close();
        one.close();
        assertThat(sa.availablePermits()).isEqualTo(max);
        assertThatThrownBy(() -> a.semaphore(name + "x").permits(max + 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MAX_PERMITS");
        checkInvariants();
    }

    @Test
    void fencingTokensIncreaseStrictlyAcrossProcesses() throws Exception {
        RedisSemaphore sa = build(a, 2);
        RedisSemaphore sb = build(b, 2);
        long last = 0;
        for (int i = 0; i < 20; i++) {
            RedisPermit p = (RedisPermit) (i % 2 == 0 ? sa : sb).acquire(1 + i % 2);
            assertThat(p.fencingToken()).isGreaterThan(last);
            last = p.fencingToken();
            p.close();
        }
        // Queued grants and concurrent ones too.
        Permit hold = sa.acquire(2);
        List<CompletableFuture<Permit>> waiters = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            waiters.add((i % 2 == 0 ? sa : sb).acquireAsync(1));
            awaitQueueLength(sa, i + 1);
        }
        long holdToken = ((RedisPermit) hold).fencingToken();
        hold.close();
        RedisPermit w0 = (RedisPermit) waiters.get(0).get(20, TimeUnit.SECONDS);
        RedisPermit w1 = (RedisPermit) waiters.get(1).get(20, TimeUnit.SECONDS);
        assertThat(w0.fencingToken()).isGreaterThan(holdToken);
        assertThat(w1.fencingToken()).isGreaterThan(w0.fencingToken());
        w0.close();
        RedisPermit w2 = (RedisPermit) waiters.get(2).get(20, TimeUnit.SECONDS);
        assertThat(w2.fencingToken()).isGreaterThan(w1.fencingToken());
        w1.close();
        w2.close();
        waiters.get(3).get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }

    @Test
    void splitMergeReleaseAndForgetWorkOnTheGrantsInRedis() throws Exception {
        RedisSemaphore sa = build(a, 10);
        RedisSemaphore sb = build(b, 10);
        RedisPermit p = (RedisPermit) sa.acquire(6);
        long token = p.fencingToken();
        RedisPermit part = (RedisPermit) p.split(2);
        assertThat(part.permits()).isEqualTo(2);
        assertThat(p.permits()).isEqualTo(4);
        assertThat(part.fencingToken()).isEqualTo(token); // parts of one grant share its token
        assertThat(sb.availablePermits()).isEqualTo(4);
        checkInvariants();
        part.close();
        assertThat(sb.availablePermits()).isEqualTo(6);
        p.release(1);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(p.fencingToken()).isEqualTo(token);
        assertThat(sb.availablePermits()).isEqualTo(7);
        RedisPermit q = (RedisPermit) sa.acquire(2);
        p.merge(q);
        assertThat(q.permits()).isZero();
        assertThat(p.permits()).isEqualTo(5);
        assertThat(p.fencingToken()).isEqualTo(q.fencingToken()).isGreaterThan(token);
        q.close(); // empty: nothing happens
        assertThat(sb.availablePermits()).isEqualTo(5);
        checkInvariants();
        assertThatThrownBy(() -> p.merge(p)).isInstanceOf(IllegalArgumentException.class);
        Permit other = sb.acquire(1);
        assertThatThrownBy(() -> p.merge(other)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.release(6)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.split(-1)).isInstanceOf(IllegalArgumentException.class);
        other.close();
        // Merging into an empty permit, then forgetting: the limit drops by what was held.
        Permit empty = sa.acquire(0);
        empty.merge(p);
        assertThat(empty.permits()).isEqualTo(5);
        assertThat(p.permits()).isZero();
        Permit all = empty.split(5);
        assertThat(empty.permits()).isZero();
        all.forget();
        assertThat(all.permits()).isZero();
        assertThat(sb.permits()).isEqualTo(5);
        assertThat(sb.availablePermits()).isEqualTo(5);
        checkInvariants();
    }

    @Test
    void permitsCanBeReleasedFromAnyThreadAndCloseRacesReleaseOnce() throws Exception {
        RedisSemaphore sa = build(a, 4);
        for (int i = 0; i < 10; i++) {
            Permit p = sa.acquire(4);
            Thread t1 = Thread.ofVirtual().start(p::close);
            Thread t2 = Thread.ofVirtual().start(p::close);
            t1.join(20_000);
            t2.join(20_000);
            assertThat(sa.availablePermits()).isEqualTo(4);
        }
        checkInvariants();
    }

    @Test
    void withPermitsRunsAndReleases() throws Exception {
        RedisSemaphore sa = build(a, 2);
        RedisSemaphore sb = build(b, 2);
        assertThat(sa.withPermits(2, () -> sb.availablePermits())).isZero();
        assertThat(sb.withPermitsAsync(1, () -> CompletableFuture.completedFuture(sa.availablePermits()))
                .get(20, TimeUnit.SECONDS)).isEqualTo(1);
        await("released", () -> sa.availablePermits() == 2);
        checkInvariants();
    }

    @Test
    void leavingReleasesThisProcessesPermitsAndFailsItsWaitersOnly() throws Exception {
        RedisSemaphore sa = build(a, 2);
        RedisSemaphore sb = build(b, 2);
        Permit heldByB = sb.acquire(1);
        CompletableFuture<Permit> waiterB = sb.acquireAsync(2);
        awaitQueueLength(sa, 1);
        CompletableFuture<Permit> waiterA = sa.acquireAsync(1);
        awaitQueueLength(sa, 2);
        b.close();
        assertThatThrownBy(() -> waiterB.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThat(heldByB.permits()).isZero();
        heldByB.close();
        waiterA.get(20, TimeUnit.SECONDS).close();
        assertThat(sa.isClosed()).isFalse();
        assertThat(sb.isClosed()).isTrue();
        assertThatThrownBy(() -> sb.tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
        assertThat(sa.availablePermits()).isEqualTo(2);
        assertThat(sa.queueLength()).isZero();
        checkInvariants();
    }

    @Test
    void cancelledAsyncAcquireReportsCancellation() throws Exception {
        RedisSemaphore sa = build(a, 1);
        Permit held = sa.acquire();
        CompletableFuture<Permit> f = sa.acquireAsync(1);
        awaitQueueLength(sa, 1);
        f.completeExceptionally(new IllegalStateException("gave up"));
        assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class);
        awaitQueueLength(sa, 0);
        CompletableFuture<Permit> g = sa.acquireAsync(1).orTimeout(100, TimeUnit.MILLISECONDS);
        assertThatThrownBy(() -> g.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(TimeoutException.class);
        awaitQueueLength(sa, 0);
        CompletableFuture<Permit> h = sa.acquireAsync(1);
        h.cancel(true);
        assertThatThrownBy(h::join).isInstanceOf(CancellationException.class);
        held.close();
        await("permit back", () -> sa.availablePermits() == 1 && sa.queueLength() == 0);
        Permit last = sa.tryAcquire().orElseThrow();
        assertThat(last.permits()).isEqualTo(1);
        last.close();
        checkInvariants();
    }
}
