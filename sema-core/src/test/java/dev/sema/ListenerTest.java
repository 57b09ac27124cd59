package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** API.md §7: which events a listener sees, with what numbers, on which thread, and what a failing one changes. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ListenerTest {

    /** Records every event as a short line, and the numbers of the last ones. */
    static final class Recorder implements SemaphoreListener {
        final List<String> events = new CopyOnWriteArrayList<>();
        final List<Long> waits = new CopyOnWriteArrayList<>();
        final List<Long> holds = new CopyOnWriteArrayList<>();

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            events.add("acquired " + permits);
            waits.add(waitNanos);
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            events.add("rejected " + permits + " " + why);
            waits.add(waitNanos);
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            events.add("released " + permits);
            holds.add(heldNanos);
        }

        @Override
        public void leaked(Semaphore s, long permits) {
            events.add("leaked " + permits);
        }

        @Override
        public void limitChanged(Semaphore s, long oldLimit, long newLimit) {
            events.add("limit " + oldLimit + "->" + newLimit);
        }

        @Override
        public void closed(Semaphore s) {
            events.add("closed");
        }
    }

    private final Recorder recorder = new Recorder();

    private Semaphore observed(long permits, long max) {
        return Semaphore.builder().permits(permits).maxPermits(max).listener(recorder).build();
    }

    @Test
    void requestsServedOrRefusedAtOnceReportOneEventEachWithNoWait() throws Exception {
        Semaphore s = observed(1, 8);
        Permit p = s.acquire();
        assertThat(s.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> s.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> s.acquireAsync(1, Duration.ofMillis(-1)).join())
                .hasCauseInstanceOf(TimeoutException.class);
        s.acquire(0).close(); // an empty permit gives nothing back
        Thread.currentThread().interrupt();
        assertThatThrownBy(s::acquire).isInstanceOf(InterruptedException.class);
        p.close();
        p.close(); // a second close gives nothing back
        s.close();
        s.close(); // reported once
        assertThatThrownBy(s::tryAcquire).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> s.acquireAsync(1).join()).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThat(recorder.events).containsExactly("acquired 1", "rejected 1 UNAVAILABLE", "rejected 1 TIMEOUT",
                "rejected 1 TIMEOUT", "acquired 0", "rejected 1 INTERRUPTED", "released 1", "closed",
                "rejected 1 CLOSED", "rejected 1 CLOSED");
        assertThat(recorder.waits).containsOnly(0L);
        assertThat(recorder.holds).allSatisfy(h -> assertThat(h).isNotNegative());
    }

    @Test
    void queuedRequestsReportOneEventEachHoweverTheyEndWithTheirWait() throws Exception {
        Semaphore s = observed(0, 8);
        CompletableFuture<Permit> cancelled = s.acquireAsync(1);
        CompletableFuture<Permit> timedOut = s.acquireAsync(1).orTimeout(1, TimeUnit.MILLISECONDS);
        CompletableFuture<Permit> ownTimer = s.acquireAsync(1, Duration.ofMillis(1));
        CompletableFuture<Permit> gaveUp = s.acquireAsync(1);
        CompletableFuture<Permit> granted = s.acquireAsync(1);
        CompletableFuture<Permit> closed = s.acquireAsync(1);
        cancelled.cancel(false);
        cancelled.cancel(false); // a second give-up reports nothing
        gaveUp.completeExceptionally(new IllegalStateException("gave up"));
        assertThatThrownBy(timedOut::join).hasCauseInstanceOf(TimeoutException.class);
        assertThatThrownBy(ownTimer::join).hasCauseInstanceOf(TimeoutException.class);
        Waiting.untilQueued(s, 2);
        s.addPermits(1);
        Permit p = Waiting.result(granted);
        s.close();
        assertThatThrownBy(closed::join).hasCauseInstanceOf(SemaphoreClosedException.class);
        p.close();
        // A give-up completed by the caller's own timer is reported by the thread that completed it, after the
        // future is done: join may return before the event is recorded.
        Waiting.until("9 events", () -> recorder.events.size() >= 9);
        assertThat(recorder.events).containsExactlyInAnyOrder("rejected 1 CANCELLED", "rejected 1 CANCELLED",
                "rejected 1 TIMEOUT", "rejected 1 TIMEOUT", "limit 0->1", "acquired 1", "closed",
                "rejected 1 CLOSED", "released 1");
        assertThat(recorder.waits).hasSize(6).allSatisfy(w -> assertThat(w).isPositive());
    }

    @Test
    void aBlockedAcquireReportsItsWait() throws Exception {
        Semaphore s = observed(0, 1);
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                s.acquire().close();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        Waiting.untilQueued(s, 1);
        Thread.sleep(5); // a measurable wait; the assertion below does not depend on how long
        s.setPermits(1);
        t.join(Waiting.PATIENCE);
        assertThat(recorder.events).containsExactly("limit 0->1", "acquired 1", "released 1");
        assertThat(recorder.waits.get(0)).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(5));
    }

    @Test
    void splitAndMergeMoveWithoutEventsAndForgetOnlyChangesTheLimit() throws Exception {
        Semaphore s = observed(6, 6);
        Permit a = s.acquire(4);
        Permit b = a.split(1);
        Permit c = s.acquire(2);
        a.merge(c);
        a.release(2);
        b.forget();
        a.close();
        assertThat(recorder.events).containsExactly("acquired 4", "acquired 2", "released 2", "limit 6->5",
                "released 3");
    }

    @Test
    void resizingReportsEveryChangeAndNothingWhenTheLimitStays() {
        Semaphore s = observed(2, 4);
        s.setPermits(3);
        s.setPermits(3);
        assertThat(s.addPermits(5)).isEqualTo(1);
        assertThat(s.addPermits(5)).isZero();
        assertThat(s.reducePermits(10)).isEqualTo(4);
        assertThat(s.reducePermits(1)).isZero();
        assertThat(recorder.events).containsExactly("limit 2->3", "limit 3->4", "limit 4->0");
    }

    @Test
    void withPermitsReportsItsAcquireAndItsRelease() throws Exception {
        Semaphore s = observed(2, 2);
        assertThat(s.withPermits(2, () -> "done")).isEqualTo("done");
        assertThat(s.withPermitsAsync(1, () -> CompletableFuture.completedFuture(1)).get(20, TimeUnit.SECONDS))
                .isEqualTo(1);
        assertThat(recorder.events).containsExactly("acquired 2", "released 2", "acquired 1", "released 1");
    }

    @Test
    void leakedPermitsAreReportedAsLeakedNotReleased() throws Exception {
        Semaphore s = Semaphore.builder().permits(2).leakDetection(LeakDetection.PARANOID).listener(recorder).build();
        leak(s);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!recorder.events.contains("leaked 2")) {
            assertThat(System.nanoTime() - deadline).as("leak not found in time").isNegative();
            System.gc();
            Thread.sleep(10);
        }
        assertThat(recorder.events).containsExactly("acquired 2", "leaked 2");
    }

    private static void leak(Semaphore s) throws InterruptedException {
        s.acquire(2);
    }

    @Test
    void timesAreUnknownForWhatHappenedBeforeTheFirstListener() throws Exception {
        Semaphore s = Semaphore.builder().permits(1).build();
        Permit early = s.acquire();
        CompletableFuture<Permit> queuedEarly = s.acquireAsync(1);
        s.addListener(recorder);
        early.close();
        Waiting.result(queuedEarly).close();
        assertThat(recorder.events).containsExactly("released 1", "acquired 1", "released 1");
        assertThat(recorder.holds.get(0)).isEqualTo(-1);
        assertThat(recorder.waits.get(0)).isEqualTo(-1);
        assertThat(recorder.holds.get(1)).isNotNegative();
    }

    @Test
    void listenersRunInOrderAndCanBeRemoved() throws Exception {
        List<String> calls = new CopyOnWriteArrayList<>();
        SemaphoreListener first = new SemaphoreListener() {
            @Override
            public void acquired(Semaphore s, long permits, long waitNanos) {
                calls.add("first");
            }
        };
        SemaphoreListener second = new SemaphoreListener() {
            @Override
            public void acquired(Semaphore s, long permits, long waitNanos) {
                calls.add("second");
            }
        };
        Semaphore s = Semaphore.builder().permits(1).listener(first).listener(second).build();
        s.addListener(first);
        s.acquire().close();
        assertThat(calls).containsExactly("first", "second", "first");
        assertThat(s.removeListener(first)).isTrue();
        calls.clear();
        s.acquire().close();
        assertThat(calls).containsExactly("second", "first");
        assertThat(s.removeListener(first)).isTrue();
        assertThat(s.removeListener(first)).isFalse();
        assertThat(s.removeListener(second)).isTrue();
        calls.clear();
        s.acquire().close();
        assertThat(calls).isEmpty();
        assertThatThrownBy(() -> s.addListener(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> s.removeListener(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Semaphore.builder().listener(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void aThrowingListenerIsLoggedOnceAndChangesNothing() throws Exception {
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                logged.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger.getLogger("dev.sema").addHandler(capture);
        try {
            SemaphoreListener broken = new SemaphoreListener() {
                @Override
                public void acquired(Semaphore s, long permits, long waitNanos) {
                    throw new IllegalStateException("broken listener");
                }

                @Override
                public void released(Semaphore s, long permits, long heldNanos) {
                    throw new OutOfMemoryError("pretend");
                }
            };
            Semaphore s = Semaphore.builder().permits(2).name("observed").listener(broken).listener(recorder).build();
            Permit p = s.acquire();
            CompletableFuture<Permit> queued = s.acquireAsync(2);
            p.close();
            Permit q = Waiting.result(queued);
            assertThat(q.permits()).isEqualTo(2);
            q.close();
            assertThat(s.availablePermits()).isEqualTo(2);
            assertThat(recorder.events).containsExactly("acquired 1", "released 1", "acquired 2", "released 2");
            assertThat(logged).hasSize(1);
            assertThat(logged.get(0).getMessage()).contains("observed");
            assertThat(logged.get(0).getThrown()).hasMessage("broken listener");
            ((LocalSemaphore) s).checkInvariants();
        } finally {
            Logger.getLogger("dev.sema").removeHandler(capture);
        }
    }

    @Test
    void listenersRunOutsideTheLock() throws Exception {
        Semaphore s = Semaphore.builder().permits(1).maxPermits(2).build();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        s.addListener(new SemaphoreListener() {
            @Override
            public void acquired(Semaphore semaphore, long permits, long waitNanos) {
                // Another thread must be able to take the lock while this listener runs.
                Thread other = Thread.ofPlatform().start(() -> semaphore.setPermits(2));
                try {
                    if (!other.join(Waiting.PATIENCE)) {
                        failure.set(new AssertionError("the listener ran under the semaphore's lock"));
                    }
                } catch (InterruptedException e) {
                    failure.set(e);
                }
            }
        });
        Permit held = s.acquire();
        CompletableFuture<Permit> queued = s.acquireAsync(2);
        held.close(); // grants the queued request on this thread, which then reports it
        Waiting.result(queued).close();
        assertThat(failure.get()).isNull();
    }
}
