package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * What one handle keeps for its process: its requests withdrawn before their futures complete, the
 * events of its own requests, and what it knows without asking Redis (the ceiling, a close).
 */
class RedisHandleTest extends RedisTestSupport {

    @Test
    void aCancelledRequestIsWithdrawnBeforeItsDependentsRun() throws Exception {
        RedisSemaphore s = build(a, 1);
        LettuceSemaphore handle = (LettuceSemaphore) s;
        Permit held = s.acquire();
        CompletableFuture<Permit> f = s.acquireAsync(1);
        awaitQueueLength(s, 1);
        AtomicReference<Boolean> stillRegistered = new AtomicReference<>();
        f.whenComplete((p, e) -> stillRegistered.set(!handle.waiting.isEmpty()));
        assertThat(f.cancel(false)).isTrue();
        assertThat(stillRegistered.get()).as("the request was still registered when a dependent ran").isFalse();
        CompletableFuture<Permit> g = s.acquireAsync(1);
        g.whenComplete((p, e) -> stillRegistered.set(!handle.waiting.isEmpty()));
        g.completeExceptionally(new IllegalStateException("gave up"));
        assertThat(stillRegistered.get()).isFalse();
        held.close();
        await("permit back", () -> s.availablePermits() == 1 && s.queueLength() == 0);
        checkInvariants();
    }

    /** Records the events of one handle as short lines. */
    static final class Recorder implements SemaphoreListener {
        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            events.add("acquired " + permits + (waitNanos > 0 ? " after waiting" : ""));
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            events.add("rejected " + permits + " " + why);
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            events.add("released " + permits + (heldNanos >= 0 ? "" : " (unknown hold)"));
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

    @Test
    void listenersSeeThisProcesssRequestsOnceEach() throws Exception {
        RedisSemaphore sa = a.semaphore(name).permits(2).maxPermits(4).build();
        RedisSemaphore sb = build(b, 2);
        Recorder recorder = new Recorder();
        sa.addListener(recorder);
        Permit two = sa.acquire(2);
        assertThat(sa.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> sa.acquire(1, Duration.ZERO)).isInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> sa.acquire(1, Duration.ofMillis(100))).isInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> cancelled = sa.acquireAsync(1);
        awaitQueueLength(sa, 1);
        cancelled.cancel(false);
        awaitQueueLength(sa, 0);
        AtomicReference<Throwable> interrupted = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                sa.acquire(1);
            } catch (Throwable e) {
                interrupted.set(e);
            }
        });
        awaitQueueLength(sa, 1);
        t.interrupt();
        t.join(20_000);
        assertThat(interrupted.get()).isInstanceOf(InterruptedException.class);
        awaitQueueLength(sa, 0);
        CompletableFuture<Permit> queued = sa.acquireAsync(1);
        awaitQueueLength(sa, 1);
        two.release(1); // grants the queued request
        Permit one = queued.get(20, TimeUnit.SECONDS);
        sb.acquireAsync(1); // another process's request: not this handle's event
        sa.setPermits(3);
        one.forget();
        sa.close();
        assertThatThrownBy(() -> sa.acquire(1)).isInstanceOf(SemaphoreClosedException.class);
        two.close();
        // Events of different threads are not ordered: the grant may be reported (on the thread that read the
        // wake-up) before the release that made it (on this one).
        assertThat(recorder.events).containsExactlyInAnyOrder("acquired 2", "rejected 1 UNAVAILABLE", "rejected 1 TIMEOUT",
                "rejected 1 TIMEOUT", "rejected 1 CANCELLED", "rejected 1 INTERRUPTED", "released 1",
                "acquired 1 after waiting", "limit 2->3", "limit 3->2", "closed", "rejected 1 CLOSED",
                "released 1");
    }

    @Test
    void aHandleThatKnowsTheSemaphoreIsClosedRefusesWithoutARoundTrip() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        sa.close();
        long before = scriptCalls();
        CompletableFuture<Permit> f = sa.acquireAsync(1);
        assertThat(f).isCompletedExceptionally();
        assertThatThrownBy(f::join).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> sa.tryAcquire(1)).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> sa.acquire(0)).isInstanceOf(SemaphoreClosedException.class);
        assertThat(sa.acquireAsync(1, Duration.ofSeconds(1))).isCompletedExceptionally();
        assertThat(scriptCalls()).isEqualTo(before);
        // A handle that has not seen it yet learns it from its first reply, then knows it too.
        assertThatThrownBy(() -> sb.acquireAsync(1).get(20, TimeUnit.SECONDS))
                .hasCauseInstanceOf(SemaphoreClosedException.class);
        long after = scriptCalls();
        assertThat(sb.acquireAsync(1)).isCompletedExceptionally();
        assertThat(scriptCalls()).isEqualTo(after);
    }

    @Test
    void afterThisProcessLeftCloseIsANoOpAndQueriesNameWhatWasRefused() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        a.close(); // this process leaves
        assertThat(a.isClosed()).isTrue();
        sa.close(); // idempotent, in either order: does not close the semaphore for the others
        sa.close(new IllegalStateException("late"));
        assertThat(sa.isClosed()).isTrue();
        assertThat(sb.isClosed()).isFalse();
        assertThatThrownBy(sa::permits).isInstanceOf(SemaphoreClosedException.class).hasMessageContaining("permits()");
        assertThatThrownBy(sa::queueLength).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("queueLength()");
        sb.acquire().close();
    }

    @Test
    void allCountsAreReadWithOneRoundTrip() throws Exception {
        RedisSemaphore s = a.semaphore(name).permits(3).maxPermits(5).build();
        Permit two = s.acquire(2);
        long before = scriptCalls();
        dev.sema.internal.StateSource.State state = ((LettuceSemaphore) s).state();
        assertThat(scriptCalls()).isEqualTo(before + 1);
        assertThat(state).isEqualTo(new dev.sema.internal.StateSource.State(3, 5, 1, 0, false, true));
        two.close();
    }

    @Test
    void anUncontendedAcquireAndReleaseRunTwelveCommandsInRedis() throws Exception {
        RedisSemaphore s = build(a, 2);
        s.acquire().close(); // created, scripts loaded
        long before = commandsExecuted();
        for (int i = 0; i < 10; i++) {
            try (Permit p = s.acquire()) {
                assertThat(p.permits()).isEqualTo(1);
            }
        }
        // Each pair: 2 EVALSHA; ACQUIRE reads meta and the clock and writes the grant, its lease and meta;
        // RELEASE with nobody queued reads meta and the grant, deletes both and writes meta, no clock.
        assertThat(commandsExecuted() - before).isEqualTo(10 * 12);
        checkInvariants();
    }
}
