package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Random single-threaded sequences of every non-blocking operation, checked step by step against a
 * plain model of API.md: limit, held permits, and a FIFO queue of async and awaitIdle waiters. Async
 * futures are completed on the calling thread before the call returns, so the model can say exactly
 * which futures must be done after each step.
 */
class SequentialModelTest {
    private static final long CEILING = 10;
    private static final int STEPS = 1500;

    @TestFactory
    List<DynamicTest> randomOperationsMatchTheModel() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Fairness fairness : Fairness.values()) {
            for (long seed = 1; seed <= 20; seed++) {
                long sd = seed;
                tests.add(DynamicTest.dynamicTest(fairness + " seed " + seed, () -> new Run(fairness, sd).run()));
            }
        }
        return tests;
    }

    private static final class Held {
        final Permit permit;
        long n;

        Held(Permit permit, long n) {
            this.permit = permit;
            this.n = n;
        }
    }

    private record Queued(CompletableFuture<?> future, long n, boolean idle) {
    }

    private static final class Run {
        final Fairness fairness;
        final long seed;
        final Random rnd;
        final Semaphore s;
        final List<Held> held = new ArrayList<>();
        final Deque<Queued> queue = new ArrayDeque<>();
        long limit;
        boolean closed;
        String step = "start";

        Run(Fairness fairness, long seed) {
            this.fairness = fairness;
            this.seed = seed;
            this.rnd = new Random(seed);
            this.limit = rnd.nextInt((int) CEILING + 1);
            this.s = Semaphore.builder().permits(limit).maxPermits(CEILING).fairness(fairness).build();
        }

        long heldTotal() {
            return held.stream().mapToLong(h -> h.n).sum();
        }

        boolean takesAtOnce(long n) {
            if (n == 0) {
                return true;
            }
            boolean inTheWay = fairness == Fairness.FIFO ? !queue.isEmpty() : queue.stream().anyMatch(Queued::idle);
            return !inTheWay && n <= limit - heldTotal();
        }

        String where() {
            return fairness + " seed " + seed + " after " + step + ": " + s;
        }

        /** Serves the model's queue head-first, checking that the real futures were completed alike. */
        void serve() {
            while (!queue.isEmpty()) {
                Queued q = queue.peekFirst();
                if (q.idle()) {
                    if (heldTotal() != 0) {
                        return;
                    }
                    assertThat(q.future()).as("idle waiter done: " + where()).isCompletedWithValue(null);
                } else {
                    if (q.n() > limit - heldTotal()) {
                        return;
                    }
                    assertThat(q.future()).as("waiter granted: " + where()).isCompleted();
                    Permit p = (Permit) q.future().join();
                    assertThat(p.permits()).isEqualTo(q.n());
                    held.add(new Held(p, q.n()));
                }
                queue.removeFirst();
            }
        }

        void verify() {
            serve();
            assertThat(s.permits()).as("permits: " + where()).isEqualTo(limit);
            assertThat(s.availablePermits()).as("available: " + where()).isEqualTo(limit - heldTotal());
            assertThat(s.queueLength()).as("queueLength: " + where()).isEqualTo(queue.size());
            assertThat(s.isClosed()).isEqualTo(closed);
            for (Queued q : queue) {
                assertThat(q.future()).as("still queued: " + where()).isNotDone();
            }
            for (Held h : held) {
                assertThat(h.permit.permits()).as("permit count: " + where()).isEqualTo(h.n);
            }
            checkInvariants(s);
        }

        Held anyHeld() {
            return held.isEmpty() ? null : held.get(rnd.nextInt(held.size()));
        }

        void run() throws Exception {
            for (int i = 0; i < STEPS; i++) {
                int op = rnd.nextInt(100);
                long n = rnd.nextInt((int) CEILING + 1);
                if (op < 12) {
                    step = i + ": tryAcquire(" + n + ")";
                    if (closed) {
                        assertThatThrownBy(() -> s.tryAcquire(n)).isInstanceOf(SemaphoreClosedException.class);
                    } else {
                        boolean expected = takesAtOnce(n);
                        Optional<Permit> p = s.tryAcquire(n);
                        assertThat(p.isPresent()).as(where()).isEqualTo(expected);
                        p.ifPresent(permit -> held.add(new Held(permit, n)));
                    }
                } else if (op < 30) {
                    step = i + ": acquireAsync(" + n + ")";
                    boolean expected = takesAtOnce(n);
                    CompletableFuture<Permit> f = s.acquireAsync(n);
                    if (closed) {
                        assertThat(Attempt.async("f", f).failure()).isInstanceOf(SemaphoreClosedException.class);
                    } else if (expected) {
                        assertThat(f).as(where()).isCompleted();
                        held.add(new Held(f.join(), n));
                    } else {
                        assertThat(f).as(where()).isNotDone();
                        queue.addLast(new Queued(f, n, false));
                    }
                } else if (op < 35) {
                    step = i + ": acquireAsync(" + n + ", 0)";
                    boolean expected = takesAtOnce(n);
                    CompletableFuture<Permit> f = s.acquireAsync(n, Duration.ZERO);
                    assertThat(f).as(where()).isDone();
                    if (closed) {
                        assertThat(Attempt.async("f", f).failure()).isInstanceOf(SemaphoreClosedException.class);
                    } else if (expected) {
                        held.add(new Held(f.join(), n));
                    } else {
                        assertThat(Attempt.async("f", f).failure()).isInstanceOf(TimeoutException.class);
                    }
                } else if (op < 39) {
                    step = i + ": awaitIdleAsync()";
                    boolean idleNow = queue.isEmpty() && heldTotal() == 0;
                    CompletableFuture<Void> f = s.awaitIdleAsync();
                    if (idleNow) {
                        assertThat(f).as(where()).isCompletedWithValue(null);
                    } else {
                        assertThat(f).as(where()).isNotDone();
                        queue.addLast(new Queued(f, 0, true));
                    }
                } else if (op < 52) {
                    Held h = anyHeld();
                    if (h == null || h.n == 0) {
                        continue;
                    }
                    long k = 1 + rnd.nextInt((int) h.n);
                    step = i + ": release(" + k + ") of " + h.n;
                    h.permit.release(k);
                    h.n -= k;
                } else if (op < 64) {
                    Held h = anyHeld();
                    if (h == null) {
                        continue;
                    }
                    step = i + ": close() of " + h.n;
                    h.permit.close();
                    held.remove(h);
                } else if (op < 68) {
                    Held h = anyHeld();
                    if (h == null) {
                        continue;
                    }
                    long k = rnd.nextInt((int) h.n + 1);
                    step = i + ": split(" + k + ") of " + h.n;
                    Permit part = h.permit.split(k);
                    h.n -= k;
                    held.add(new Held(part, k));
                } else if (op < 71) {
                    Held a = anyHeld();
                    Held b = anyHeld();
                    if (a == null || a == b) {
                        continue;
                    }
                    step = i + ": merge of " + b.n + " into " + a.n;
                    a.permit.merge(b.permit);
                    a.n += b.n;
                    b.n = 0;
                    held.remove(b);
                } else if (op < 74) {
                    Held h = anyHeld();
                    if (h == null) {
                        continue;
                    }
                    step = i + ": forget() of " + h.n;
                    h.permit.forget();
                    limit = Math.max(0, limit - h.n);
                    held.remove(h);
                } else if (op < 80) {
                    step = i + ": setPermits(" + n + ")";
                    s.setPermits(n);
                    limit = n;
                } else if (op < 86) {
                    long add = rnd.nextInt(5) == 0 ? Long.MAX_VALUE : rnd.nextInt(6);
                    step = i + ": addPermits(" + add + ")";
                    long expected = Math.min(add, CEILING - limit);
                    assertThat(s.addPermits(add)).as(where()).isEqualTo(expected);
                    limit += expected;
                } else if (op < 91) {
                    long cut = rnd.nextInt(5) == 0 ? Long.MAX_VALUE : rnd.nextInt(6);
                    step = i + ": reducePermits(" + cut + ")";
                    long expected = Math.min(cut, limit);
                    assertThat(s.reducePermits(cut)).as(where()).isEqualTo(expected);
                    limit -= expected;
                } else if (op < 99) {
                    if (queue.isEmpty()) {
                        continue;
                    }
                    List<Queued> all = new ArrayList<>(queue);
                    Queued q = all.get(rnd.nextInt(all.size()));
                    step = i + ": cancel " + (q.idle() ? "awaitIdle" : "acquire(" + q.n() + ")") + " at "
                            + all.indexOf(q) + " of " + all.size();
                    assertThat(q.future().cancel(false)).as(where()).isTrue();
                    queue.remove(q);
                } else if (rnd.nextInt(4) == 0) {
                    step = i + ": close()";
                    s.close();
                    closed = true;
                    List<Queued> failed = queue.stream().filter(q -> !q.idle()).toList();
                    for (Queued q : failed) {
                        assertThat(Attempt.async("waiter", q.future()).failure()).as(where())
                                .isInstanceOf(SemaphoreClosedException.class);
                        queue.remove(q);
                    }
                }
                verify();
            }
            // tail first: withdrawing a waiter behind the head grants nobody
            while (!queue.isEmpty()) {
                assertThat(queue.removeLast().future().cancel(false)).isTrue();
            }
            for (Held h : held) {
                h.permit.close();
            }
            held.clear();
            step = "cleanup";
            verify();
            assertThat(s.availablePermits()).isEqualTo(limit);
        }
    }
}
