package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class WakeUpTest {
    private static final int CHAIN = 100_000;

    /**
     * Runs {@code body} on a thread with a small stack (256 KiB), so that unbounded recursion fails fast
     * with StackOverflowError whatever the default stack size; returns or rethrows what it did.
     */
    private static void onSmallStack(ThrowingRunnable body) throws Throwable {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(null, () -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "small-stack", 256 * 1024);
        t.setDaemon(true);
        t.start();
        assertThat(t.join(Waiting.PATIENCE)).as("chain finished in time").isTrue();
        if (failure.get() != null) {
            throw failure.get();
        }
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void longChainOfAsyncWaitersEachReleasingInItsContinuationDoesNotOverflowTheStack() throws Throwable {
        onSmallStack(() -> {
            Semaphore s = Semaphore.create(1);
            Permit first = s.acquire();
            CompletableFuture<?>[] all = new CompletableFuture<?>[CHAIN];
            for (int i = 0; i < CHAIN; i++) {
                all[i] = s.acquireAsync().thenAccept(Permit::close);
            }
            assertThat(s.queueLength()).isEqualTo(CHAIN);
            first.close();
            Waiting.result(CompletableFuture.allOf(all));
            assertThat(s.availablePermits()).isEqualTo(1);
            assertThat(s.queueLength()).isZero();
            checkInvariants(s);
        });
    }

    @Test
    void longChainStartedByRaisingTheLimitDoesNotOverflowTheStack() throws Throwable {
        onSmallStack(() -> {
            Semaphore s = Semaphore.builder().maxPermits(3).build();
            CompletableFuture<?>[] all = new CompletableFuture<?>[CHAIN];
            for (int i = 0; i < CHAIN; i++) {
                all[i] = s.acquireAsync(3).thenAccept(Permit::close);
            }
            s.setPermits(3);
            Waiting.result(CompletableFuture.allOf(all));
            assertThat(s.availablePermits()).isEqualTo(3);
            checkInvariants(s);
        });
    }

    @Test
    void longChainOfWithPermitsAsyncDoesNotOverflowTheStack() throws Throwable {
        onSmallStack(() -> {
            Semaphore s = Semaphore.create(2);
            Permit first = s.acquire(2);
            AtomicInteger ran = new AtomicInteger();
            List<CompletableFuture<Integer>> all = new ArrayList<>(CHAIN);
            for (int i = 0; i < CHAIN; i++) {
                int n = i;
                all.add(s.withPermitsAsync(2, () -> {
                    ran.incrementAndGet();
                    return CompletableFuture.completedFuture(n);
                }));
            }
            first.close();
            Waiting.result(CompletableFuture.allOf(all.toArray(CompletableFuture<?>[]::new)));
            assertThat(ran).hasValue(CHAIN);
            assertThat(all.get(CHAIN - 1).join()).isEqualTo(CHAIN - 1);
            assertThat(s.availablePermits()).isEqualTo(2);
            checkInvariants(s);
        });
    }

    @Test
    void waiterThatRequeuesFromItsContinuationDoesNotRecurse() throws Throwable {
        onSmallStack(() -> {
            Semaphore s = Semaphore.create(1);
            Permit first = s.acquire();
            AtomicInteger left = new AtomicInteger(CHAIN);
            CompletableFuture<Void> done = new CompletableFuture<>();
            Consumer<Permit> step = new Consumer<>() {
                @Override
                public void accept(Permit p) {
                    if (left.decrementAndGet() > 0) {
                        s.acquireAsync().thenAccept(this); // queues: this permit is still held
                    } else {
                        done.complete(null);
                    }
                    p.close();
                }
            };
            s.acquireAsync().thenAccept(step);
            first.close();
            Waiting.result(done);
            assertThat(left).hasValue(0);
            assertThat(s.availablePermits()).isEqualTo(1);
            checkInvariants(s);
        });
    }

    @Test
    void closingWithManyAsyncWaitersDoesNotOverflowTheStack() throws Throwable {
        onSmallStack(() -> {
            Semaphore s = Semaphore.create(1);
            Permit first = s.acquire();
            CompletableFuture<?>[] all = new CompletableFuture<?>[CHAIN];
            for (int i = 0; i < CHAIN; i++) {
                all[i] = s.acquireAsync().exceptionally(e -> null);
            }
            s.close();
            Waiting.result(CompletableFuture.allOf(all));
            first.close();
            assertThat(s.queueLength()).isZero();
            checkInvariants(s);
        });
    }

    /**
     * Calls a method that takes the semaphore's lock from another thread and waits for it: if the caller
     * runs while holding that lock, this cannot complete.
     */
    private static void touchFromAnotherThread(Semaphore s, List<String> problems, String where) {
        Thread t = Thread.ofPlatform().daemon(true).start(() -> {
            s.reducePermits(0);
            s.setPermits(s.permits());
        });
        try {
            if (!t.join(Duration.ofSeconds(10))) {
                problems.add(where + ": a continuation ran while the semaphore was locked");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            problems.add(where + ": interrupted");
        }
    }

    @Test
    void futuresAreCompletedOutsideTheLock() throws Exception {
        List<String> problems = new CopyOnWriteArrayList<>();
        Semaphore s = Semaphore.builder().permits(1).maxPermits(3).build();
        Permit held = s.acquire();

        CompletableFuture<Void> byRelease = s.acquireAsync(1)
                .thenAccept(p -> {
                    touchFromAnotherThread(s, problems, "grant by release");
                    p.close();
                });
        held.close();
        Waiting.result(byRelease);

        held = s.acquire();
        CompletableFuture<Void> byResize = s.acquireAsync(2)
                .thenAccept(p -> {
                    touchFromAnotherThread(s, problems, "grant by addPermits");
                    p.close();
                });
        s.addPermits(2);
        Waiting.result(byResize);

        CompletableFuture<Permit> head = s.acquireAsync(3);
        CompletableFuture<Void> byWithdrawal = s.acquireAsync(1)
                .thenAccept(p -> {
                    touchFromAnotherThread(s, problems, "grant by withdrawal of the head");
                    p.close();
                });
        head.cancel(false);
        Waiting.result(byWithdrawal);

        CompletableFuture<Void> idle = s.awaitIdleAsync()
                .thenRun(() -> touchFromAnotherThread(s, problems, "awaitIdle completion"));
        held.close();
        Waiting.result(idle);

        held = s.acquire(2);
        CompletableFuture<Void> byClose = s.acquireAsync(3)
                .handle((p, e) -> {
                    touchFromAnotherThread(s, problems, "failure by close");
                    return null;
                });
        s.close();
        Waiting.result(byClose);
        held.close();

        assertThat(problems).isEmpty();
        checkInvariants(s);
    }

    @Test
    void bargingHeadThatLosesItsPermitsToANewcomerIsWokenAgainByTheNextRelease() throws Exception {
        int barged = 0;
        for (int round = 0; round < 50; round++) {
            Semaphore s = Semaphore.builder().permits(1).fairness(Fairness.BARGING).build();
            Permit p = s.acquire();
            AtomicInteger got = new AtomicInteger();
            Thread head = Thread.ofPlatform().start(() -> {
                try (Permit q = s.acquire()) {
                    got.incrementAndGet();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Waiting.untilQueued(s, 1);
            Waiting.untilParked(head);
            p.close(); // wakes the head to take the permit itself...
            var newcomer = s.tryAcquire(); // ...which a newcomer may take first
            if (newcomer.isPresent()) {
                barged++;
                // Give the woken head time to find nothing and park again (the outcome must be the same if it
                // has not): it must then be woken by this release.
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
                newcomer.get().close();
            }
            head.join(Waiting.PATIENCE.toMillis());
            assertThat(head.isAlive()).as("head waiter left parked after the newcomer released (round %d)", round)
                    .isFalse();
            assertThat(got.get()).isEqualTo(1);
            assertThat(s.availablePermits()).isEqualTo(1);
            checkInvariants(s);
        }
        // The releasing thread nearly always wins the race to the permit: the case above really ran.
        assertThat(barged).as("rounds in which the newcomer barged").isPositive();
    }

    /**
     * The hang of the first BARGING wake-and-compete release: the woken head waits for the lock in
     * takeWoken while close() fails it, and the unpark that reports the close is used up by that lock wait.
     * The head must still read its status again and throw, not park until its (5-minute) timeout.
     */
    @Test
    void wokenHeadClosedWhileWaitingForTheLockThrowsInsteadOfParking() throws Exception {
        LocalSemaphore s = (LocalSemaphore) Semaphore.builder().permits(1).fairness(Fairness.BARGING).build();
        Permit p = s.acquire();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread head = Thread.ofPlatform().name("woken-head").start(() -> {
            try {
                s.acquire(1, Duration.ofMinutes(5)).close();
                outcome.set(new AssertionError("granted after close"));
            } catch (Throwable e) {
                outcome.set(e);
            }
        });
        Waiting.untilQueued(s, 1);
        Waiting.untilParked(head);
        java.util.concurrent.locks.ReentrantLock lock = s.lockForTests();
        lock.lock();
        try {
            p.close(); // wakes the head (the lock is reentrant), which then waits for the lock this thread holds
            Waiting.until("the woken head waits for the lock", () -> lock.hasQueuedThread(head));
            s.close(); // fails the head and unparks it: the lock wait takes that unpark and parks again
            Waiting.until("the head parked again in the lock wait",
                    () -> head.getState() == Thread.State.WAITING && lock.hasQueuedThread(head));
        } finally {
            lock.unlock();
        }
        head.join(Waiting.PATIENCE);
        assertThat(head.isAlive()).as("woken head left parked after close: " + s).isFalse();
        assertThat(outcome.get()).isInstanceOf(SemaphoreClosedException.class);
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }
}
