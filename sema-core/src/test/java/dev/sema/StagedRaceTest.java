package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.LocalSemaphore.HookPoint;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Races that neither Lincheck nor the stress races reach in a bounded run, staged step by step through
 * {@link LocalSemaphore#testHook} (see "Test hooks" in its implementation overview).
 */
class StagedRaceTest {

    @AfterEach
    void removeTheHook() {
        LocalSemaphore.testHook = null;
    }

    /** The waiter queued behind the head: what it asks for, and how it is told. */
    enum Behind {
        /** A blocked acquire(2): woken to take its permits itself (BARGING). */
        BLOCKING,
        /** acquireAsync(2): granted by whoever serves the queue. */
        ASYNC,
        /** awaitIdleAsync(): ends once nothing is held. */
        IDLE
    }

    /**
     * BARGING, limit 2, both permits held; a blocked head waits for 1 and a waiter behind it for 2 (or for
     * idle). The head is interrupted, and just before it cancels itself the first permit is released, which
     * wakes it (HEAD_WOKEN). It leaves anyway; its withdrawal serves the waiter behind it, finds 1 permit
     * free, too few, and just then the second permit is released without the lock, as HEAD_WOKEN allows.
     * The flags may not be cleared over that permit (I2): the waiter behind must be served with both,
     * not left queued until some later release (I3).
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Behind.class)
    @Timeout(30)
    void releaseWithoutTheLockWhileAWokenHeadGivesUpServesTheWaiterBehindIt(Behind behind) throws Exception {
        LocalSemaphore s = (LocalSemaphore) Semaphore.builder().permits(2).fairness(Fairness.BARGING).build();
        Permit first = s.acquire(1);
        Permit second = s.acquire(1);
        Attempt<Permit> head = Attempt.blocking("head", false, () -> s.acquire(1));
        Waiting.untilQueued(s, 1);
        Waiting.untilParked(head.thread);
        Attempt<?> next = switch (behind) {
            case BLOCKING -> Attempt.blocking("behind", false, () -> s.acquire(2));
            case ASYNC -> Attempt.async("behind", s.acquireAsync(2));
            case IDLE -> Attempt.async("behind", s.awaitIdleAsync());
        };
        Waiting.untilQueued(s, 2);
        if (next.thread != null) {
            Waiting.untilParked(next.thread);
        }

        Stage stage = new Stage(s, head.thread, first, second);
        LocalSemaphore.testHook = stage;
        try {
            head.thread.interrupt();
            head.thread.join(Waiting.PATIENCE.toMillis());
        } finally {
            LocalSemaphore.testHook = null;
        }
        assertThat(head.thread.isAlive()).as("head still running: %s", s).isFalse();
        assertThat(stage.failure.get()).as("staging").isNull();
        assertThat(stage.step).as("steps staged").isEqualTo(Stage.DONE);
        assertThat(head.outcome).isCompletedExceptionally();
        assertThat(head.outcome.exceptionNow()).isInstanceOf(InterruptedException.class);

        try {
            // The head's withdrawal has returned: the waiter behind it is granted, or woken to take its 2.
            Waiting.checkInvariants(s);
            Object got = Waiting.result(next.outcome);
            if (got instanceof Permit p) {
                assertThat(p.permits()).isEqualTo(2);
                p.close();
            }
        } finally {
            if (next.thread != null) {
                next.thread.interrupt(); // ends a waiter left parked, so that no thread outlives a failure
                next.thread.join(Waiting.PATIENCE.toMillis());
            }
        }
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(s.queueLength()).isZero();
        Waiting.checkInvariants(s);
    }

    /**
     * The hook's script. GIVING_UP, on the head's thread, before it cancels itself: another thread releases
     * {@code first} (under the lock, since the queue is not empty and no head is woken), which wakes the
     * head. SERVED, on the head's thread in its withdrawal: another thread releases {@code second}; it must
     * end while the head's thread holds the lock, which proves it went without the lock.
     */
    private static final class Stage implements LocalSemaphore.TestHook {
        static final int WAITING = 0;
        static final int WOKEN = 1;
        static final int DONE = 2;

        private final LocalSemaphore semaphore;
        private final Thread head;
        private final Permit first;
        private final Permit second;
        final AtomicReference<String> failure = new AtomicReference<>();
        /** Read and written only by the head's thread, and read after joining it. */
        int step = WAITING;

        Stage(LocalSemaphore semaphore, Thread head, Permit first, Permit second) {
            this.semaphore = semaphore;
            this.head = head;
            this.first = first;
            this.second = second;
        }

        @Override
        public void at(HookPoint point, LocalSemaphore s) {
            if (s != semaphore || Thread.currentThread() != head) {
                return;
            }
            if (point == HookPoint.GIVING_UP && step == WAITING) {
                step = WOKEN;
                releaseOnAnotherThread(first, "first");
            } else if (point == HookPoint.SERVED && step == WOKEN) {
                step = DONE;
                expect(s.lockForTests().isHeldByCurrentThread(), "SERVED without the lock");
                expect(s.queueLength() == 1 && s.availablePermits() == 1,
                        "the head not withdrawn, or not 1 permit free, when serving the waiter behind: " + s);
                releaseOnAnotherThread(second, "second");
            }
        }

        private void releaseOnAnotherThread(Permit p, String which) {
            Thread t = Thread.ofPlatform().name("release-" + which).start(p::close);
            try {
                t.join(Waiting.PATIENCE.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure.compareAndSet(null, "interrupted while releasing " + which);
                return;
            }
            expect(!t.isAlive(), "the release of " + which + " did not end (waiting for the lock?): " + semaphore);
        }

        private void expect(boolean ok, String message) {
            if (!ok) {
                failure.compareAndSet(null, message);
            }
        }
    }
}
