package dev.sema.contract;

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
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The rules of API.md §1 and §2 that every {@link Semaphore} keeps, run against each implementation by a
 * subclass that says how to make one: the local semaphore in both fairness modes (sema-core), and the
 * Redis one on Redis 7 and 6.2 (sema-redis), where {@link #other} is a second process's handle on the same
 * semaphore. Scenarios end with the implementation's own invariant check.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class SemaphoreContract {

    /** How long a scenario waits for a state it expects. */
    protected static final Duration PATIENCE = Duration.ofSeconds(20);

    /**
     * A new semaphore of its own.
     *
     * @param permits the limit
     * @param maxPermits the ceiling
     * @return the semaphore
     */
    protected abstract Semaphore create(long permits, long maxPermits);

    /**
     * Another handle on the same semaphore, as another process would hold it; the same object locally.
     *
     * @param s a semaphore made by {@link #create}
     * @return a handle sharing its state
     */
    protected Semaphore other(Semaphore s) {
        return s;
    }

    /**
     * Checks the implementation's invariants at quiescence.
     *
     * @param s the semaphore
     */
    protected abstract void checkInvariants(Semaphore s);

    /**
     * The fairness of the semaphores {@link #create} makes.
     *
     * @return FIFO or BARGING
     */
    protected Fairness fairness() {
        return Fairness.FIFO;
    }

    /**
     * Whether the semaphores {@link #create} makes can be resized, and have a ceiling above their limit. A key of a
     * keyed semaphore cannot: its limit is the family's and its ceiling is that limit (API.md §11b); the scenarios
     * that resize are then skipped.
     *
     * @return true unless the implementation refuses resizing by design
     */
    protected boolean resizable() {
        return true;
    }

    /**
     * Whether the semaphores {@link #create} makes can be closed with a cause. A keyed semaphore is closed as a
     * whole, without one.
     *
     * @return true unless the implementation has no {@code close(cause)} by design
     */
    protected boolean closableWithCause() {
        return true;
    }

    private Semaphore create(long permits) {
        return create(permits, permits);
    }

    /** How a scenario waits for permits. */
    public enum Style {
        BLOCKING, BLOCKING_VIRTUAL, TIMED, ASYNC, ASYNC_TIMED;

        CompletableFuture<Permit> acquire(Semaphore s, long permits) {
            return switch (this) {
                case BLOCKING -> onThread(false, () -> s.acquire(permits));
                case BLOCKING_VIRTUAL -> onThread(true, () -> s.acquire(permits));
                case TIMED -> onThread(false, () -> s.acquire(permits, Duration.ofMinutes(5)));
                case ASYNC -> s.acquireAsync(permits);
                case ASYNC_TIMED -> s.acquireAsync(permits, Duration.ofMinutes(5));
            };
        }

        interface Call {
            Permit get() throws Exception;
        }

        private static CompletableFuture<Permit> onThread(boolean virtual, Call call) {
            CompletableFuture<Permit> f = new CompletableFuture<>();
            Runnable body = () -> {
                try {
                    f.complete(call.get());
                } catch (Throwable t) {
                    f.completeExceptionally(t);
                }
            };
            if (virtual) {
                Thread.ofVirtual().start(body);
            } else {
                Thread.ofPlatform().daemon().start(body);
            }
            return f;
        }
    }

    // ---------------------------------------------------------------- waiting helpers

    protected static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("gave up waiting until " + what);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    protected static void awaitQueued(Semaphore s, int n) {
        await("queueLength() == " + n + " on " + s, () -> s.queueLength() == n);
    }

    private static <T> T result(CompletableFuture<T> f) throws Exception {
        return f.get(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
    }

    // ---------------------------------------------------------------- acquire and release

    @Test
    void uncontendedAcquireAndReleaseAreSeenByEveryHandle() throws Exception {
        Semaphore s = create(3);
        Semaphore t = other(s);
        assertThat(t.permits()).isEqualTo(3);
        assertThat(t.maxPermits()).isEqualTo(3);
        assertThat(s.fairness()).isEqualTo(fairness());
        Permit two = s.acquire(2);
        assertThat(two.permits()).isEqualTo(2);
        assertThat(t.availablePermits()).isEqualTo(1);
        assertThat(t.tryAcquire(2)).isEmpty();
        Permit one = t.tryAcquire(1).orElseThrow();
        assertThat(s.availablePermits()).isZero();
        two.close();
        two.close(); // idempotent
        assertThat(two.permits()).isZero();
        one.close();
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(s.toString()).contains(s.name()).contains("available=3");
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Style.class)
    void releaseWakesAWaiterOfAnyHandle(Style style) throws Exception {
        Semaphore s = create(2);
        Semaphore t = other(s);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> waiter = style.acquire(t, 2);
        awaitQueued(s, 1);
        assertThat(waiter).isNotDone();
        held.release(1);
        assertThat(s.queueLength()).isEqualTo(1); // 1 free, the head needs 2
        assertThat(waiter).isNotDone();
        held.close();
        Permit got = result(waiter);
        assertThat(got.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isZero();
        got.close();
        assertThat(t.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @Test
    void waitersAreServedInArrivalOrderAndALargeHeadIsNotStarved() throws Exception {
        Semaphore s = create(3);
        Semaphore t = other(s);
        Permit all = s.acquire(3);
        List<String> order = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Permit>> futures = new ArrayList<>();
        long[] sizes = {2, 1, 3, 1};
        for (int i = 0; i < sizes.length; i++) {
            Semaphore h = i % 2 == 0 ? t : s;
            int index = i;
            futures.add(h.acquireAsync(sizes[i]).whenComplete((p, e) -> order.add("w" + index)));
            awaitQueued(s, i + 1);
        }
        all.release(1);
        if (fairness() == Fairness.FIFO) {
            // A newcomer may not take free permits past the queue, even one that fits.
            assertThat(t.tryAcquire(1)).isEmpty();
        }
        assertThat(order).isEmpty();
        all.release(1); // 2 free: w0 (2) is served; w1 (1) must wait for a permit
        result(futures.get(0)).close(); // back to 2 free: w1 (1) served, w2 (3) blocks
        result(futures.get(1));
        assertThat(order).containsExactly("w0", "w1");
        assertThat(s.queueLength()).isEqualTo(2);
        // w3 (1) fits in the 1 free permit but must not overtake w2 (3): the queue is served in order.
        assertThat(futures.get(3)).isNotDone();
        futures.get(1).join().close();
        all.close();
        result(futures.get(2)).close();
        result(futures.get(3)).close();
        assertThat(order).containsExactly("w0", "w1", "w2", "w3");
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void bargingNewcomersTakeFreePermitsPastTheQueueAndFifoOnesDoNot() throws Exception {
        Semaphore s = create(2);
        Permit held = s.acquire(2);
        CompletableFuture<Permit> big = s.acquireAsync(2);
        awaitQueued(s, 1);
        held.release(1); // 1 free; the head needs 2
        if (fairness() == Fairness.BARGING) {
            Permit barged = s.tryAcquire(1).orElseThrow();
            barged.close();
        } else {
            assertThat(s.tryAcquire(1)).isEmpty();
        }
        held.close();
        result(big).close();
        checkInvariants(s);
    }

    // ---------------------------------------------------------------- timeouts, interrupts, cancellation

    @Test
    void timedAcquireTimesOutAndLeavesTheQueue() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        Permit held = s.acquire();
        assertThatThrownBy(() -> t.acquire(1, Duration.ofMillis(100)))
                .isInstanceOf(TimeoutException.class).hasMessageContaining(s.name());
        assertThatThrownBy(() -> t.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> t.acquire(1, Duration.ofMillis(-1))).isInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> f = t.acquireAsync(1, Duration.ofMillis(100));
        assertThatThrownBy(() -> result(f)).hasCauseInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> result(t.acquireAsync(1, Duration.ofMillis(-1))))
                .hasCauseInstanceOf(TimeoutException.class);
        awaitQueued(s, 0);
        held.close();
        assertThat(t.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void hugeTimeoutsDoNotOverflow() throws Exception {
        Semaphore s = create(1);
        s.acquire(1, Duration.ofSeconds(Long.MAX_VALUE)).close();
        s.acquireAsync(1, Duration.ofSeconds(Long.MAX_VALUE)).get(20, TimeUnit.SECONDS).close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void interruptedWaiterLeavesTheQueueAndClearsTheFlag() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        Permit held = s.acquire();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread waiter = Thread.ofPlatform().name("waiter").start(() -> {
            try {
                t.acquire();
            } catch (Throwable e) {
                outcome.set(Thread.currentThread().isInterrupted() ? new AssertionError("flag not cleared") : e);
            }
        });
        awaitQueued(s, 1);
        await("waiter parked", () -> waiter.getState() == Thread.State.WAITING
                || waiter.getState() == Thread.State.TIMED_WAITING);
        waiter.interrupt();
        waiter.join(PATIENCE.toMillis());
        assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
        awaitQueued(s, 0);
        held.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        Thread.currentThread().interrupt();
        assertThatThrownBy(t::acquire).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        checkInvariants(s);
    }

    @Test
    void cancelledHeadWakesTheWaitersBehindIt() throws Exception {
        Semaphore s = create(3);
        Semaphore t = other(s);
        Permit held = s.acquire(3);
        CompletableFuture<Permit> big = t.acquireAsync(3);
        awaitQueued(s, 1);
        CompletableFuture<Permit> small = s.acquireAsync(1);
        awaitQueued(s, 2);
        held.release(1); // 1 free: the head (3) does not fit, and the queue is served in order
        assertThat(small).isNotDone();
        assertThat(big.cancel(false)).isTrue();
        result(small).close();
        held.close();
        assertThat(t.availablePermits()).isEqualTo(3);
        assertThat(t.queueLength()).isZero();
        checkInvariants(s);
    }

    @Test
    void cancellationRacingGrantsLosesNoPermit() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        for (int i = 0; i < 30; i++) {
            Permit held = s.acquire();
            CompletableFuture<Permit> f = (i % 2 == 0 ? t : s).acquireAsync(1);
            awaitQueued(s, 1);
            Thread releaser = Thread.ofVirtual().start(held::close);
            f.cancel(false);
            releaser.join(PATIENCE.toMillis());
            if (!f.isCancelled()) {
                f.join().close(); // the grant won the race
            }
            int round = i;
            await("all permits back after round " + round, () -> s.availablePermits() == 1 && s.queueLength() == 0);
        }
        checkInvariants(s);
    }

    @Test
    void interruptRacingAGrantEitherKeepsThePermitWithTheFlagOrGivesItBack() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        for (int i = 0; i < 20; i++) {
            Permit held = s.acquire();
            AtomicReference<Object> outcome = new AtomicReference<>();
            AtomicBoolean interruptSent = new AtomicBoolean();
            Thread waiter = Thread.ofPlatform().name("waiter-" + i).start(() -> {
                try {
                    Permit p = t.acquire();
                    while (!interruptSent.get()) {
                        Thread.onSpinWait(); // the grant may win before the interrupt is even sent
                    }
                    outcome.set(Thread.currentThread().isInterrupted() ? p : new AssertionError("granted, flag lost"));
                    p.close();
                } catch (InterruptedException e) {
                    outcome.set(Thread.currentThread().isInterrupted() ? new AssertionError("flag kept") : e);
                } catch (Throwable e) {
                    outcome.set(e);
                }
            });
            awaitQueued(s, 1);
            Thread releaser = Thread.ofVirtual().start(held::close);
            waiter.interrupt();
            interruptSent.set(true);
            releaser.join(PATIENCE.toMillis());
            waiter.join(PATIENCE.toMillis());
            assertThat(outcome.get()).isInstanceOfAny(Permit.class, InterruptedException.class);
            int round = i;
            await("all permits back after round " + round, () -> s.availablePermits() == 1 && s.queueLength() == 0);
        }
        checkInvariants(s);
    }

    @Test
    void aFutureCompletedByItsCallerLeavesTheQueue() throws Exception {
        Semaphore s = create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> f = s.acquireAsync(1);
        awaitQueued(s, 1);
        f.completeExceptionally(new IllegalStateException("gave up"));
        assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class);
        awaitQueued(s, 0);
        CompletableFuture<Permit> g = s.acquireAsync(1).orTimeout(50, TimeUnit.MILLISECONDS);
        assertThatThrownBy(() -> result(g)).hasCauseInstanceOf(TimeoutException.class);
        awaitQueued(s, 0);
        CompletableFuture<Permit> h = s.acquireAsync(1);
        h.cancel(true);
        assertThatThrownBy(h::join).isInstanceOf(CancellationException.class);
        held.close();
        await("permit back", () -> s.availablePermits() == 1 && s.queueLength() == 0);
        Permit last = s.tryAcquire().orElseThrow();
        assertThat(last.permits()).isEqualTo(1);
        last.close();
        checkInvariants(s);
    }

    // ---------------------------------------------------------------- resizing

    @Test
    void resizingIsSharedServesWaitersAndNeverRevokes() throws Exception {
        Assumptions.assumeTrue(resizable(), "not resizable by design");
        Semaphore s = create(2, 10);
        Semaphore t = other(s);
        Permit two = s.acquire(2);
        CompletableFuture<Permit> waiter = t.acquireAsync(3); // above the limit, within the ceiling: waits
        awaitQueued(s, 1);
        assertThat(t.reducePermits(5)).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(-2);
        assertThat(two.permits()).isEqualTo(2);
        t.setPermits(4);
        assertThat(waiter).isNotDone(); // 4 - 2 = 2 free, needs 3
        assertThat(s.addPermits(Long.MAX_VALUE)).isEqualTo(6);
        assertThat(t.permits()).isEqualTo(10);
        Permit three = result(waiter);
        assertThat(s.availablePermits()).isEqualTo(5);
        assertThat(s.addPermits(1)).isZero();
        three.close();
        two.close();
        assertThat(t.availablePermits()).isEqualTo(10);
        checkInvariants(s);
    }

    @Test
    void badArgumentsAreRefusedWithBothNumbersAndChangeNothing() throws Exception {
        Semaphore s = create(2, 10);
        Permit one = s.acquire();
        long ceiling = s.maxPermits(); // 10, or 2 where the ceiling is the limit (see resizable)
        if (resizable()) {
            assertThatThrownBy(() -> s.setPermits(11)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("11").hasMessageContaining("10");
            assertThatThrownBy(() -> s.setPermits(-1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> s.addPermits(-1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> s.reducePermits(-1)).isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> s.acquire(ceiling + 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(ceiling + 1)).hasMessageContaining(String.valueOf(ceiling));
        assertThatThrownBy(() -> s.acquireAsync(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.tryAcquire(ceiling + 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.acquire(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> one.release(2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2").hasMessageContaining("1");
        assertThatThrownBy(() -> one.split(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> one.merge(one)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> one.merge(null)).isInstanceOf(NullPointerException.class);
        Semaphore unrelated = create(1);
        Permit foreign = unrelated.acquire();
        assertThatThrownBy(() -> one.merge(foreign)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("another semaphore");
        assertThat(foreign.permits()).isEqualTo(1);
        foreign.close();
        assertThat(one.permits()).isEqualTo(1);
        assertThat(s.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(1);
        one.close();
        checkInvariants(s);
    }

    @Test
    void countsNearMaxPermitsStayExact() throws Exception {
        Assumptions.assumeTrue(resizable(), "not resizable by design");
        long max = Semaphore.MAX_PERMITS;
        Semaphore s = create(max);
        Semaphore t = other(s);
        Permit big = s.acquire(max - 1);
        assertThat(t.availablePermits()).isEqualTo(1);
        Permit one = t.tryAcquire(1).orElseThrow();
        assertThat(t.tryAcquire(1)).isEmpty();
        big.release(max - 3);
        assertThat(s.availablePermits()).isEqualTo(max - 3);
        assertThat(t.reducePermits(Long.MAX_VALUE)).isEqualTo(max);
        assertThat(t.availablePermits()).isEqualTo(-3);
        assertThat(s.addPermits(Long.MAX_VALUE)).isEqualTo(max);
        big.close();
        one.close();
        assertThat(s.availablePermits()).isEqualTo(max);
        checkInvariants(s);
    }

    // ---------------------------------------------------------------- close and awaitIdle

    @Test
    void closeFailsTheWaitersOfEveryHandleButNotAwaitIdle() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        Permit held = s.acquire();
        CompletableFuture<Permit> blocked = Style.BLOCKING.acquire(t, 1);
        CompletableFuture<Permit> async = t.acquireAsync(1);
        CompletableFuture<Permit> local = s.acquireAsync(1);
        awaitQueued(s, 3);
        CompletableFuture<Void> idle = t.awaitIdleAsync();
        awaitQueued(s, 4);
        s.close();
        s.close(); // idempotent
        for (CompletableFuture<Permit> f : List.of(blocked, async, local)) {
            assertThatThrownBy(() -> result(f)).hasCauseInstanceOf(SemaphoreClosedException.class);
        }
        assertThat(t.isClosed()).isTrue();
        assertThatThrownBy(t::tryAcquire).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> t.acquire(0)).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> result(t.acquireAsync(1))).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThat(idle).isNotDone(); // close does not fail awaitIdle
        held.close(); // still releasable
        result(idle);
        assertThat(t.availablePermits()).isEqualTo(1);
        t.awaitIdle(); // idle now: returns at once
        checkInvariants(s);
    }

    @Test
    void closeWithACauseFailsWaitersAndLaterAcquiresWithThatCauseAndKeepsTheFirst() throws Exception {
        Assumptions.assumeTrue(closableWithCause(), "closed without a cause by design");
        Semaphore s = create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> blocked = Style.BLOCKING.acquire(s, 1);
        CompletableFuture<Permit> async = s.acquireAsync(1);
        awaitQueued(s, 2);
        IllegalStateException why = new IllegalStateException("shutting down");
        s.close(why);
        s.close(new IllegalStateException("a second cause")); // changes nothing
        s.close();
        for (CompletableFuture<Permit> f : List.of(blocked, async)) {
            assertThatThrownBy(() -> result(f)).cause().isInstanceOf(SemaphoreClosedException.class)
                    .hasCause(why).hasMessageContaining("shutting down");
        }
        assertThatThrownBy(s::tryAcquire).isInstanceOf(SemaphoreClosedException.class).hasCause(why);
        assertThatThrownBy(() -> s.acquire(1)).isInstanceOf(SemaphoreClosedException.class).hasCause(why);
        assertThatThrownBy(() -> s.acquireUninterruptibly(1)).isInstanceOf(SemaphoreClosedException.class)
                .hasCause(why);
        assertThatThrownBy(s::drainPermits).isInstanceOf(SemaphoreClosedException.class).hasCause(why);
        assertThatThrownBy(() -> result(s.acquireAsync(1))).cause().hasCause(why);
        held.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThatThrownBy(() -> s.close(null)).isInstanceOf(NullPointerException.class);
        checkInvariants(s);
    }

    @Test
    void closeWithoutACauseStaysWithoutOneAfterACausedClose() throws Exception {
        Assumptions.assumeTrue(closableWithCause(), "closed without a cause by design");
        Semaphore s = create(1);
        s.close();
        s.close(new IllegalStateException("too late"));
        assertThatThrownBy(s::tryAcquire).isInstanceOf(SemaphoreClosedException.class).hasNoCause();
        checkInvariants(s);
    }

    @Test
    void acquireUninterruptiblyKeepsItsPlaceThroughInterruptsAndSetsTheFlagAgain() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        Permit held = s.acquire();
        AtomicReference<Object> outcome = new AtomicReference<>();
        AtomicBoolean flagAtTheEnd = new AtomicBoolean();
        Thread waiter = Thread.ofPlatform().name("uninterruptible").start(() -> {
            try {
                outcome.set(t.acquireUninterruptibly(1));
            } catch (Throwable e) {
                outcome.set(e);
            }
            flagAtTheEnd.set(Thread.interrupted());
        });
        awaitQueued(s, 1);
        CompletableFuture<Permit> behind = s.acquireAsync(1);
        awaitQueued(s, 2);
        for (int i = 0; i < 3; i++) {
            waiter.interrupt();
            Thread.sleep(20);
        }
        assertThat(s.queueLength()).as("still queued, in its place").isEqualTo(2);
        held.close();
        waiter.join(PATIENCE.toMillis());
        assertThat(outcome.get()).isInstanceOf(Permit.class);
        assertThat(flagAtTheEnd).as("the interrupt status is set again").isTrue();
        assertThat(behind).as("the waiter behind stays behind").isNotDone();
        ((Permit) outcome.get()).close();
        result(behind).close();
        // Not interrupted: returns with the flag clear; interrupted on entry: waits all the same.
        t.acquireUninterruptibly(1).close();
        assertThat(Thread.interrupted()).isFalse();
        Thread.currentThread().interrupt();
        Permit p = t.acquireUninterruptibly(1);
        assertThat(Thread.interrupted()).isTrue();
        p.close();
        assertThatThrownBy(() -> s.acquireUninterruptibly(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void acquireUninterruptiblyFailsWhenTheSemaphoreCloses() throws Exception {
        Semaphore s = create(1);
        Permit held = s.acquire();
        CompletableFuture<Permit> waiting = Style.BLOCKING.acquire(s, 1);
        awaitQueued(s, 1);
        CompletableFuture<Permit> uninterruptible = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                uninterruptible.complete(s.acquireUninterruptibly(1));
            } catch (Throwable e) {
                uninterruptible.completeExceptionally(e);
            }
        });
        awaitQueued(s, 2);
        s.close();
        assertThatThrownBy(() -> result(uninterruptible)).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> result(waiting)).hasCauseInstanceOf(SemaphoreClosedException.class);
        held.close();
        checkInvariants(s);
    }

    @Test
    void drainPermitsTakesWhatIsAvailableNowWhateverTheQueueAndNeverWaits() throws Exception {
        Semaphore s = create(5, 10);
        Semaphore t = other(s);
        Permit one = s.acquire(1);
        Permit drained = t.drainPermits();
        assertThat(drained.permits()).isEqualTo(4);
        assertThat(s.availablePermits()).isZero();
        Permit none = s.drainPermits();
        assertThat(none.permits()).as("nothing left: an empty permit").isZero();
        none.close();
        CompletableFuture<Permit> waiter = s.acquireAsync(3);
        awaitQueued(s, 1);
        one.close(); // 1 free, the head needs 3
        Permit more = t.drainPermits(); // takes it, whatever the queue
        assertThat(more.permits()).isEqualTo(1);
        assertThat(waiter).isNotDone();
        drained.close();
        more.close();
        result(waiter).close(); // the waiter kept its place and is served as permits come back
        if (!resizable()) {
            assertThat(s.availablePermits()).isEqualTo(5);
            checkInvariants(s);
            return;
        }
        s.setPermits(2);
        Permit two = s.acquire(2);
        s.setPermits(1); // lowered below what is held: available is negative
        assertThat(t.drainPermits().permits()).isZero();
        two.close();
        Permit last = s.drainPermits();
        assertThat(last.permits()).isEqualTo(1);
        last.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @Test
    void awaitIdleWaitsForEveryHolderAndNewcomersQueueBehindIt() throws Exception {
        Semaphore s = create(3);
        Semaphore t = other(s);
        Permit ps = s.acquire(1);
        Permit pt = t.acquire(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        awaitQueued(t, 1);
        assertThat(t.tryAcquire(1)).isEmpty(); // in both fairness modes
        CompletableFuture<Permit> later = t.acquireAsync(1);
        awaitQueued(t, 2);
        ps.close();
        assertThat(idle).isNotDone();
        pt.close();
        result(idle);
        result(later).close();
        checkInvariants(s);
    }

    @Test
    void zeroPermitRequestsSucceedEvenWithWaitersQueued() throws Exception {
        Semaphore s = create(1);
        Semaphore t = other(s);
        Permit held = s.acquire();
        CompletableFuture<Permit> waiter = t.acquireAsync(1);
        awaitQueued(s, 1);
        Permit empty = t.acquire(0);
        assertThat(empty.permits()).isZero();
        assertThat(t.tryAcquire(0)).isPresent();
        assertThat(result(s.acquireAsync(0)).permits()).isZero();
        empty.close();
        held.close();
        result(waiter).close();
        checkInvariants(s);
    }

    // ---------------------------------------------------------------- Permit

    @Test
    void splitMergeReleaseAndForgetMovePermitsExactly() throws Exception {
        Semaphore s = create(10);
        Semaphore t = other(s);
        Permit p = s.acquire(6);
        Permit part = p.split(2);
        assertThat(part.permits()).isEqualTo(2);
        assertThat(p.permits()).isEqualTo(4);
        assertThat(t.availablePermits()).isEqualTo(4);
        part.close();
        assertThat(t.availablePermits()).isEqualTo(6);
        p.release(1);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(t.availablePermits()).isEqualTo(7);
        Permit q = s.acquire(2);
        p.merge(q);
        assertThat(q.permits()).isZero();
        assertThat(p.permits()).isEqualTo(5);
        q.close(); // empty: nothing happens
        assertThat(t.availablePermits()).isEqualTo(5);
        Permit empty = s.acquire(0);
        empty.merge(p);
        assertThat(empty.permits()).isEqualTo(5);
        assertThat(p.permits()).isZero();
        Permit all = empty.split(5);
        Permit keep = s.acquire(1); // keeps it live while its limit is read: a key idle starts afresh (§11b)
        all.forget();
        assertThat(all.permits()).isZero();
        all.close(); // forgotten: nothing to give back
        assertThat(t.permits()).isEqualTo(5);
        assertThat(t.availablePermits()).isEqualTo(4);
        keep.close();
        assertThat(t.availablePermits()).isEqualTo(t.permits());
        checkInvariants(s);
    }

    @Test
    void permitsCanBeReleasedFromAnyThreadAndRacingClosesReleaseOnce() throws Exception {
        Semaphore s = create(4);
        for (int i = 0; i < 10; i++) {
            Permit p = s.acquire(4);
            Thread t1 = Thread.ofVirtual().start(p::close);
            Thread t2 = Thread.ofVirtual().start(p::close);
            t1.join(PATIENCE.toMillis());
            t2.join(PATIENCE.toMillis());
            assertThat(s.availablePermits()).isEqualTo(4);
        }
        checkInvariants(s);
    }

    @Test
    void withPermitsRunsUnderThePermitsAndReleasesThem() throws Exception {
        Semaphore s = create(2);
        Semaphore t = other(s);
        assertThat(s.withPermits(2, t::availablePermits)).isZero();
        assertThat(result(t.withPermitsAsync(1, () -> CompletableFuture.completedFuture(s.availablePermits()))))
                .isEqualTo(1);
        await("released", () -> s.availablePermits() == 2);
        assertThatThrownBy(() -> s.withPermits(1, () -> {
            throw new IllegalStateException("inside");
        })).hasMessage("inside");
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }
}
