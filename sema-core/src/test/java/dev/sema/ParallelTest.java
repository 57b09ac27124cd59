package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@Timeout(30)
class ParallelTest {

    /** Runs the stages of the MAP_ASYNC form: a thread per task, nothing kept between tests. */
    static final ExecutorService STAGES = Executors.newVirtualThreadPerTaskExecutor();

    /** Every public form, run as a blocking call; the semaphores they use are checked afterwards. */
    enum Form {
        MAP, FOR_EACH, MAP_SHARED, MAP_WEIGHTED, MAP_ASYNC;

        boolean collects() {
            return this != FOR_EACH;
        }

        /** Returns the results (null for FOR_EACH); throws what the form throws, a mapAsync failure as stored. */
        <T> List<?> run(Iterable<T> items, int limit, ThrowingFunction<? super T, ?> fn) throws Exception {
            switch (this) {
                case MAP:
                    return Parallel.map(items, limit, fn);
                case FOR_EACH:
                    Parallel.forEach(items, limit, fn::apply);
                    return null;
                case MAP_SHARED: {
                    Semaphore s = Semaphore.create(limit);
                    try {
                        return Parallel.map(items, s, fn);
                    } finally {
                        assertAllPermitsBack(s);
                    }
                }
                case MAP_WEIGHTED: {
                    Semaphore s = Semaphore.create(limit);
                    try {
                        return Parallel.mapWeighted(items, s, item -> 1, fn);
                    } finally {
                        assertAllPermitsBack(s);
                    }
                }
                default: {
                    CompletableFuture<List<Object>> f = Parallel.mapAsync(items, limit,
                            item -> CompletableFuture.supplyAsync(() -> applyUnchecked(fn, item), STAGES));
                    Throwable failure = f.handle((value, e) -> e).get(20, TimeUnit.SECONDS);
                    if (failure instanceof Exception e) {
                        throw e;
                    }
                    if (failure instanceof Error e) {
                        throw e;
                    }
                    return f.join();
                }
            }
        }
    }

    private static <T, R> R applyUnchecked(ThrowingFunction<? super T, ? extends R> fn, T item) {
        try {
            return fn.apply(item);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    }

    static void assertAllPermitsBack(Semaphore s) {
        assertThat(s.availablePermits()).as("permits back in %s", s).isEqualTo(s.permits());
        ((LocalSemaphore) s).checkInvariants();
    }

    /** What a run returned or threw. */
    record Outcome(List<Object> results, Throwable thrown) {
    }

    static <T> Outcome outcome(Form form, Iterable<T> items, int limit, ThrowingFunction<? super T, ?> fn) {
        try {
            List<?> results = form.run(items, limit, fn);
            return new Outcome(results == null ? null : new ArrayList<>(results), null);
        } catch (Throwable t) {
            return new Outcome(null, t);
        }
    }

    /** Counts calls in flight (and the most at once), calls made and calls ended. */
    static final class Probe {
        final AtomicInteger inFlight = new AtomicInteger();
        final AtomicInteger max = new AtomicInteger();
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger ended = new AtomicInteger();
        final AtomicInteger interrupted = new AtomicInteger();

        void enter() {
            calls.incrementAndGet();
            max.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        }

        void leave() {
            inFlight.decrementAndGet();
            ended.incrementAndGet();
        }

        /** Blocks (bounded) until interrupted; counts it and throws InterruptedException. */
        void blockUntilInterrupted() throws InterruptedException {
            try {
                if (!new CountDownLatch(1).await(20, TimeUnit.SECONDS)) {
                    throw new AssertionError("the call was never cancelled");
                }
            } catch (InterruptedException e) {
                interrupted.incrementAndGet();
                throw e;
            }
        }
    }

    /**
     * A generated input of {@code n} ints (endless for n < 0) that counts items taken and not yet
     * finished (live), and detects two threads inside the iterator at once.
     */
    static final class LiveItems implements Iterable<Integer> {
        final long n;
        final AtomicLong live = new AtomicLong();
        final AtomicLong maxLive = new AtomicLong();
        final AtomicLong taken = new AtomicLong();
        final AtomicInteger iterators = new AtomicInteger();
        final AtomicBoolean inside = new AtomicBoolean();
        final AtomicBoolean overlapped = new AtomicBoolean();

        LiveItems(long n) {
            this.n = n;
        }

        @Override
        public Iterator<Integer> iterator() {
            iterators.incrementAndGet();
            return new Iterator<>() {
                private long next;

                @Override
                public boolean hasNext() {
                    enterIterator();
                    try {
                        return n < 0 || next < n;
                    } finally {
                        inside.set(false);
                    }
                }

                @Override
                public Integer next() {
                    enterIterator();
                    try {
                        if (n >= 0 && next >= n) {
                            throw new NoSuchElementException();
                        }
                        maxLive.accumulateAndGet(live.incrementAndGet(), Math::max);
                        taken.incrementAndGet();
                        return (int) next++;
                    } finally {
                        inside.set(false);
                    }
                }
            };
        }

        private void enterIterator() {
            if (!inside.compareAndSet(false, true)) {
                overlapped.set(true);
            }
        }

        /** Called by a call when it is done with its item. */
        void finished() {
            live.decrementAndGet();
        }
    }

    /** An input that fails the test if it is ever asked for an iterator. */
    private static final Iterable<Integer> UNTOUCHABLE = () -> {
        throw new AssertionError("the input must not be touched");
    };

    static void awaitUntil(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting until " + what);
            }
            LockSupport.parkNanos(50_000);
        }
    }

    static List<Integer> range(int n) {
        return IntStream.range(0, n).boxed().toList();
    }

    // ==================================================================== order, nulls, empty input

    @ParameterizedTest
    @EnumSource(Form.class)
    void resultsAreInInputOrderWhenCallsFinishInReverse(Form form) {
        int n = 6;
        List<CountDownLatch> done = IntStream.range(0, n).mapToObj(i -> new CountDownLatch(1)).toList();
        Outcome out = outcome(form, range(n), n, i -> {
            if (i < n - 1 && !done.get(i + 1).await(20, TimeUnit.SECONDS)) { // the next item finishes first
                throw new AssertionError("item " + (i + 1) + " never finished");
            }
            done.get(i).countDown();
            return "r" + i;
        });
        assertThat(out.thrown()).isNull();
        if (form.collects()) {
            assertThat(out.results()).containsExactly("r0", "r1", "r2", "r3", "r4", "r5");
        }
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void manyResultsAreInInputOrder(Form form) {
        int n = 2_000;
        Random random = new Random(n);
        List<Integer> spins = IntStream.range(0, n).map(i -> random.nextInt(3)).boxed().toList();
        Outcome out = outcome(form, range(n), 7, i -> {
            for (int k = spins.get(i); k > 0; k--) {
                Thread.yield();
            }
            return i * 3L;
        });
        assertThat(out.thrown()).isNull();
        if (form.collects()) {
            assertThat(out.results()).hasSize(n);
            for (int i = 0; i < n; i++) {
                assertThat(out.results().get(i)).isEqualTo(i * 3L);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void nullItemsAndNullResultsAreKept(Form form) {
        List<String> items = new ArrayList<>();
        items.add(null);
        items.add("a");
        items.add(null);
        List<String> seen = new CopyOnWriteArrayList<>();
        Outcome out = outcome(form, items, 2, item -> {
            seen.add(String.valueOf(item));
            return item == null ? "was null" : null;
        });
        assertThat(out.thrown()).isNull();
        assertThat(seen).containsExactlyInAnyOrder("null", "a", "null");
        if (form.collects()) {
            assertThat(out.results()).containsExactly("was null", null, "was null");
        }
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void emptyInputCallsNothing(Form form) {
        Outcome out = outcome(form, List.of(), 3, item -> {
            throw new AssertionError("called");
        });
        assertThat(out.thrown()).isNull();
        if (form.collects()) {
            assertThat(out.results()).isEmpty();
        }
    }

    @Test
    void returnedListIsUnmodifiable() throws Exception {
        List<Integer> results = Parallel.map(range(3), 2, i -> i);
        assertThatThrownBy(() -> results.add(4)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> results.set(0, 4)).isInstanceOf(UnsupportedOperationException.class);
        List<Integer> asyncResults = Parallel.mapAsync(range(3), 2, CompletableFuture::completedFuture).join();
        assertThatThrownBy(() -> asyncResults.add(4)).isInstanceOf(UnsupportedOperationException.class);
        assertThat(asyncResults).containsExactly(0, 1, 2);
    }

    // ==================================================================== limit

    @ParameterizedTest
    @EnumSource(Form.class)
    void callsAtOnceReachButNeverExceedTheLimit(Form form) {
        int limit = 3;
        Probe probe = new Probe();
        CountDownLatch reached = new CountDownLatch(1);
        Outcome out = outcome(form, range(40), limit, i -> {
            probe.enter();
            try {
                if (probe.inFlight.get() >= limit) {
                    reached.countDown();
                }
                if (!reached.await(20, TimeUnit.SECONDS)) {
                    throw new AssertionError("the limit was never reached");
                }
                Thread.yield();
                return i;
            } finally {
                probe.leave();
            }
        });
        assertThat(out.thrown()).isNull();
        assertThat(probe.max.get()).isEqualTo(limit);
        assertThat(probe.calls.get()).isEqualTo(40);
        assertThat(probe.inFlight.get()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void limitOfOneRunsOneCallAtATime(Form form) {
        Probe probe = new Probe();
        Outcome out = outcome(form, range(50), 1, i -> {
            probe.enter();
            try {
                Thread.yield();
                return i;
            } finally {
                probe.leave();
            }
        });
        assertThat(out.thrown()).isNull();
        assertThat(probe.max.get()).isEqualTo(1);
    }

    @Test
    void blockingFormsRunEachCallOnAVirtualThread() throws Exception {
        Thread caller = Thread.currentThread();
        List<Thread> threads = Parallel.map(range(5), 2, i -> Thread.currentThread());
        assertThat(threads).allMatch(Thread::isVirtual).doesNotContain(caller).doesNotHaveDuplicates();
    }

    // ==================================================================== laziness

    @ParameterizedTest
    @EnumSource(Form.class)
    void inputIsPulledLazily(Form form) {
        int limit = 4;
        LiveItems items = new LiveItems(20_000);
        Outcome out = outcome(form, items, limit, i -> {
            items.finished();
            return null;
        });
        assertThat(out.thrown()).isNull();
        assertThat(items.taken.get()).isEqualTo(20_000);
        assertThat(items.maxLive.get()).isBetween(1L, limit + 1L);
        assertThat(items.overlapped).as("iterator used by two threads at once").isFalse();
        assertThat(items.iterators.get()).isEqualTo(1);
    }

    @Test
    void mapAsyncTakesAnItemOnlyForAFreeSlot() {
        int limit = 4;
        LiveItems items = new LiveItems(20_000);
        List<Integer> results = Parallel.mapAsync(items, limit, i -> CompletableFuture.supplyAsync(() -> {
            items.finished();
            return i;
        }, STAGES)).join();
        assertThat(results).hasSize(20_000);
        assertThat(items.maxLive.get()).isBetween(1L, (long) limit);
        assertThat(items.overlapped).isFalse();
    }

    @Test
    void forEachOverManyItemsHoldsOnlyAboutLimitOfThem() throws Exception {
        // ParallelStressTest runs ten million in a 16 MB heap
        int limit = 8;
        long n = 500_000;
        LiveItems items = new LiveItems(n);
        AtomicLong sum = new AtomicLong();
        Parallel.forEach(items, limit, i -> {
            sum.addAndGet(i);
            items.finished();
        });
        assertThat(items.taken.get()).isEqualTo(n);
        assertThat(sum.get()).isEqualTo(n * (n - 1) / 2);
        assertThat(items.maxLive.get()).isLessThanOrEqualTo(limit + 1);
        assertThat(items.live.get()).isZero();
    }

    @Test
    void mapAsyncRunsMillionsOfInlineStagesWithoutRecursing() {
        long n = 2_000_000;
        LiveItems items = new LiveItems(n);
        AtomicLong sum = new AtomicLong();
        List<Object> results = Parallel.mapAsync(items, 16, i -> {
            sum.addAndGet(i);
            items.finished();
            return CompletableFuture.completedFuture(null); // completes inline: the pump must not recurse
        }).join();
        assertThat(results).hasSize((int) n);
        assertThat(sum.get()).isEqualTo(n * (n - 1) / 2);
        assertThat(items.maxLive.get()).isLessThanOrEqualTo(16);
    }

    @Test
    void forEachOverAnEndlessInputEndsWithTheFirstFailure() {
        LiveItems items = new LiveItems(-1);
        IllegalStateException boom = new IllegalStateException("boom");
        assertThatThrownBy(() -> Parallel.forEach(items, 4, i -> {
            items.finished();
            if (i == 10_000) {
                throw boom;
            }
        })).isSameAs(boom);
        assertThat(items.maxLive.get()).isLessThanOrEqualTo(5);
        assertThat(items.taken.get()).isGreaterThan(10_000);
    }

    // ==================================================================== fail fast

    @ParameterizedTest
    @EnumSource(value = Form.class, names = {"MAP", "FOR_EACH", "MAP_SHARED", "MAP_WEIGHTED"})
    void firstFailureCancelsCallsInFlightAndIsThrownAfterTheyEnded(Form form) {
        int limit = 4;
        Probe probe = new Probe();
        LiveItems items = new LiveItems(-1);
        IllegalStateException boom = new IllegalStateException("boom");
        Outcome out = outcome(form, items, limit, i -> {
            probe.enter();
            try {
                if (i == limit - 1) {
                    awaitUntil("every slot is taken", () -> probe.inFlight.get() == limit);
                    throw boom;
                }
                probe.blockUntilInterrupted();
                return i;
            } finally {
                probe.leave();
            }
        });
        assertThat(out.thrown()).isSameAs(boom);
        assertThat(boom.getSuppressed()).as("our own cancellations are not attached").isEmpty();
        assertThat(probe.inFlight.get()).as("calls running after the throw").isZero();
        assertThat(probe.calls.get()).as("no call starts after the failure").isEqualTo(limit);
        assertThat(probe.interrupted.get()).isEqualTo(limit - 1);
        assertThat(items.taken.get()).isLessThanOrEqualTo(limit + 1);
    }

    @ParameterizedTest
    @EnumSource(value = Form.class, names = {"MAP", "FOR_EACH", "MAP_SHARED", "MAP_WEIGHTED"})
    void laterGenuineFailuresAreSuppressedButCancellationReportsAreNot(Form form) {
        Probe probe = new Probe();
        IllegalStateException boom = new IllegalStateException("boom");
        IllegalStateException cleanupFailed = new IllegalStateException("cleanup failed");
        Outcome out = outcome(form, range(4), 4, i -> {
            probe.enter();
            try {
                if (i == 3) {
                    awaitUntil("every call runs", () -> probe.inFlight.get() == 4);
                    throw boom;
                }
                try {
                    probe.blockUntilInterrupted();
                } catch (InterruptedException e) {
                    switch (i) {
                        case 0 -> throw cleanupFailed;         // genuine: attached
                        case 1 -> throw new RuntimeException(e); // reports our cancellation: not attached
                        default -> throw e;                      // reports our cancellation: not attached
                    }
                }
                return i;
            } finally {
                probe.leave();
            }
        });
        assertThat(out.thrown()).isSameAs(boom);
        assertThat(boom.getSuppressed()).containsExactly(cleanupFailed);
        assertThat(probe.inFlight.get()).isZero();
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void checkedFailureIsWrappedInCompletionException(Form form) {
        IOException io = new IOException("disk");
        Outcome out = outcome(form, range(5), 2, i -> {
            if (i == 2) {
                throw io;
            }
            return i;
        });
        assertThat(out.thrown()).isExactlyInstanceOf(CompletionException.class).hasCause(io);
        assertThat(out.thrown().getCause()).isSameAs(io);
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void uncheckedFailuresAndErrorsAreThrownAsTheyAre(Form form) {
        StackOverflowError error = new StackOverflowError("deep");
        assertThat(outcome(form, range(5), 2, i -> {
            if (i == 1) {
                throw error;
            }
            return i;
        }).thrown()).isSameAs(error);
        CompletionException unchecked = new CompletionException("already wrapped", new IOException());
        if (form != Form.MAP_ASYNC) { // a stage's CompletionException is its failure's wrapper, unwrapped
            assertThat(outcome(form, range(5), 2, i -> {
                throw unchecked;
            }).thrown()).isSameAs(unchecked);
        }
    }

    @ParameterizedTest
    @EnumSource(Form.class)
    void iteratorFailureFailsTheRunAfterCallsEnded(Form form) {
        Probe probe = new Probe();
        IllegalStateException broken = new IllegalStateException("broken input");
        Iterable<Integer> items = () -> new Iterator<>() {
            int next;

            @Override
            public boolean hasNext() {
                return true;
            }

            @Override
            public Integer next() {
                if (next == 5) {
                    throw broken;
                }
                return next++;
            }
        };
        Outcome out = outcome(form, items, 2, i -> {
            probe.enter();
            try {
                return i;
            } finally {
                probe.leave();
            }
        });
        assertThat(out.thrown()).isSameAs(broken);
        assertThat(probe.calls.get()).isLessThanOrEqualTo(5);
        if (form != Form.MAP_ASYNC) {
            assertThat(probe.inFlight.get()).isZero();
        }
    }

    @Test
    void callsThatIgnoreInterruptsAreWaitedFor() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean stubbornRunning = new AtomicBoolean();
        AtomicBoolean stubbornInterrupted = new AtomicBoolean();
        AtomicBoolean stubbornEnded = new AtomicBoolean();
        IllegalStateException boom = new IllegalStateException("boom");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                Parallel.map(range(2), 2, i -> {
                    if (i == 0) {
                        stubbornRunning.set(true);
                        while (true) { // ignores interrupts until released
                            try {
                                if (release.await(20, TimeUnit.SECONDS)) {
                                    break;
                                }
                                throw new AssertionError("never released");
                            } catch (InterruptedException e) {
                                stubbornInterrupted.set(true);
                            }
                        }
                        stubbornEnded.set(true);
                        return i;
                    }
                    awaitUntil("the stubborn call runs", stubbornRunning::get);
                    throw boom;
                });
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        awaitUntil("the stubborn call was cancelled and the caller waits for it",
                () -> stubbornInterrupted.get() && caller.getState() == Thread.State.WAITING);
        assertThat(caller.isAlive()).isTrue();
        assertThat(thrown.get()).isNull();
        assertThat(stubbornEnded).isFalse();
        release.countDown();
        caller.join();
        assertThat(stubbornEnded).isTrue();
        assertThat(thrown.get()).isSameAs(boom);
    }

    // ==================================================================== interruption

    @ParameterizedTest
    @EnumSource(value = Form.class, names = {"MAP", "FOR_EACH", "MAP_SHARED", "MAP_WEIGHTED"})
    void interruptingTheCallerWaitingForPermitsCancelsEverything(Form form) throws Exception {
        int limit = 3;
        Probe probe = new Probe();
        LiveItems items = new LiveItems(-1);
        AtomicReference<Outcome> out = new AtomicReference<>();
        AtomicBoolean flagAfter = new AtomicBoolean(true);
        AtomicInteger runningAtThrow = new AtomicInteger(-1);
        Thread caller = Thread.ofPlatform().start(() -> {
            Outcome o = outcome(form, items, limit, i -> {
                probe.enter();
                try {
                    probe.blockUntilInterrupted();
                    return i;
                } finally {
                    probe.leave();
                }
            });
            runningAtThrow.set(probe.inFlight.get());
            flagAfter.set(Thread.currentThread().isInterrupted());
            out.set(o);
        });
        awaitUntil("every slot is taken and the caller waits for the next",
                () -> probe.inFlight.get() == limit && caller.getState() == Thread.State.WAITING);
        caller.interrupt();
        caller.join();
        assertThat(out.get().thrown()).isInstanceOf(InterruptedException.class);
        assertThat(out.get().thrown().getSuppressed()).isEmpty();
        assertThat(runningAtThrow.get()).as("calls running when it threw").isZero();
        assertThat(probe.interrupted.get()).isEqualTo(limit);
        assertThat(probe.calls.get()).isEqualTo(limit);
        assertThat(flagAfter).as("interrupt status after InterruptedException").isFalse();
    }

    @ParameterizedTest
    @EnumSource(value = Form.class, names = {"MAP", "FOR_EACH", "MAP_SHARED", "MAP_WEIGHTED"})
    void interruptingTheCallerWaitingForTheLastCallsCancelsThem(Form form) throws Exception {
        Probe probe = new Probe();
        IllegalStateException cleanupFailed = new IllegalStateException("cleanup failed");
        AtomicReference<Outcome> out = new AtomicReference<>();
        AtomicInteger runningAtThrow = new AtomicInteger(-1);
        Thread caller = Thread.ofVirtual().start(() -> {
            Outcome o = outcome(form, range(3), 5, i -> {
                probe.enter();
                try {
                    probe.blockUntilInterrupted();
                    return i;
                } catch (InterruptedException e) {
                    if (i == 1) {
                        throw cleanupFailed;
                    }
                    throw e;
                } finally {
                    probe.leave();
                }
            });
            runningAtThrow.set(probe.inFlight.get());
            out.set(o);
        });
        awaitUntil("every call runs and the caller waits for them",
                () -> probe.inFlight.get() == 3 && caller.getState() == Thread.State.WAITING);
        caller.interrupt();
        caller.join();
        assertThat(out.get().thrown()).isInstanceOf(InterruptedException.class);
        assertThat(out.get().thrown().getSuppressed()).containsExactly(cleanupFailed);
        assertThat(runningAtThrow.get()).isZero();
        assertThat(probe.interrupted.get()).isEqualTo(3);
    }

    @ParameterizedTest
    @EnumSource(value = Form.class, names = {"MAP", "FOR_EACH", "MAP_SHARED", "MAP_WEIGHTED"})
    void interruptedOnEntryThrowsBeforeTouchingTheInput(Form form) {
        Thread.currentThread().interrupt();
        Outcome out = outcome(form, UNTOUCHABLE, 2, i -> i);
        assertThat(out.thrown()).isInstanceOf(InterruptedException.class);
        assertThat(Thread.currentThread().isInterrupted()).isFalse();
    }

    @Test
    void interruptAfterAFailureKeepsTheFailureAndTheInterruptStatus() throws Exception {
        IllegalStateException boom = new IllegalStateException("boom");
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean failed = new AtomicBoolean();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean flagAfter = new AtomicBoolean();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                Parallel.map(range(2), 2, i -> {
                    if (i == 1) {
                        failed.set(true);
                        throw boom;
                    }
                    while (true) { // ignores interrupts until released
                        try {
                            if (release.await(20, TimeUnit.SECONDS)) {
                                return i;
                            }
                            throw new AssertionError("never released");
                        } catch (InterruptedException ignored) {
                            // keep waiting
                        }
                    }
                });
            } catch (Throwable t) {
                thrown.set(t);
                flagAfter.set(Thread.currentThread().isInterrupted());
            }
        });
        awaitUntil("the failure happened and the caller waits",
                () -> failed.get() && caller.getState() == Thread.State.WAITING);
        caller.interrupt();
        awaitUntil("the caller waits again", () -> caller.getState() == Thread.State.WAITING);
        assertThat(caller.isAlive()).isTrue();
        release.countDown();
        caller.join();
        assertThat(thrown.get()).isSameAs(boom);
        assertThat(flagAfter).as("the interrupt is kept").isTrue();
    }

    // ==================================================================== arguments

    @Test
    void badArgumentsThrowBeforeAnyCall() {
        ThrowingFunction<Integer, Integer> fn = i -> {
            throw new AssertionError("called");
        };
        Semaphore s = Semaphore.create(2);
        for (int limit : new int[] {0, -1, Integer.MIN_VALUE}) {
            assertThatThrownBy(() -> Parallel.map(UNTOUCHABLE, limit, fn))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(String.valueOf(limit));
            assertThatThrownBy(() -> Parallel.forEach(UNTOUCHABLE, limit, i -> fn.apply(i)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> Parallel.mapAsync(UNTOUCHABLE, limit, i -> null))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> Parallel.map(null, 1, fn)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.map(UNTOUCHABLE, 1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.forEach(null, 1, i -> { }))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.forEach(UNTOUCHABLE, 1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.mapAsync(null, 1, i -> null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.mapAsync(UNTOUCHABLE, 1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.map(null, s, fn)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.map(UNTOUCHABLE, (Semaphore) null, fn))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.map(UNTOUCHABLE, s, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.mapWeighted(null, s, i -> 1, fn)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.mapWeighted(UNTOUCHABLE, null, i -> 1, fn))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.mapWeighted(UNTOUCHABLE, s, null, fn))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Parallel.mapWeighted(UNTOUCHABLE, s, i -> 1, null))
                .isInstanceOf(NullPointerException.class);
        assertAllPermitsBack(s);
    }

    // ==================================================================== weights

    @Test
    void weightsOfCallsAtOnceNeverExceedTheBudget() throws Exception {
        Semaphore budget = Semaphore.create(10);
        Random random = new Random(42);
        List<Integer> weights = IntStream.range(0, 300).map(i -> random.nextInt(11)).boxed().toList();
        AtomicLong inUse = new AtomicLong();
        AtomicLong maxInUse = new AtomicLong();
        List<Integer> results = Parallel.mapWeighted(range(300), budget, weights::get, i -> {
            long w = weights.get(i);
            maxInUse.accumulateAndGet(inUse.addAndGet(w), Math::max);
            try {
                assertThat(budget.availablePermits()).as("this call holds its weight").isLessThanOrEqualTo(10 - w);
                Thread.yield();
                return i;
            } finally {
                inUse.addAndGet(-w);
            }
        });
        assertThat(results).isEqualTo(range(300));
        assertThat(maxInUse.get()).isBetween(1L, 10L);
        assertAllPermitsBack(budget);
    }

    @Test
    void weightAboveTheCeilingFailsWhenReachedWithoutCallingFn() {
        weightOutOfRangeFailsWhenReached(11);
    }

    @Test
    void negativeWeightFailsWhenReachedWithoutCallingFn() {
        weightOutOfRangeFailsWhenReached(-1);
    }

    private void weightOutOfRangeFailsWhenReached(int badWeight) {
        Semaphore budget = Semaphore.builder().permits(10).maxPermits(10).name("memory").build();
        List<Integer> called = new CopyOnWriteArrayList<>();
        List<Integer> items = List.of(1, 2, badWeight, 3);
        Probe probe = new Probe();
        assertThatThrownBy(() -> Parallel.mapWeighted(items, budget, item -> {
            if (item == badWeight) { // reached: let the earlier calls get going first
                awaitUntil("the earlier calls run", () -> called.size() == 2);
            }
            return item;
        }, item -> {
            called.add(item);
            probe.enter();
            try {
                probe.blockUntilInterrupted();
                return item;
            } finally {
                probe.leave();
            }
        })).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(badWeight))
                .hasMessageContaining("maxPermits (10)")
                .hasMessageContaining("memory");
        assertThat(called).containsExactlyInAnyOrder(1, 2);
        assertThat(probe.interrupted.get()).isEqualTo(2);
        assertThat(probe.inFlight.get()).isZero();
        assertAllPermitsBack(budget);
    }

    @Test
    void zeroWeightCallsTakeNoPermits() throws Exception {
        Semaphore empty = Semaphore.builder().permits(0).maxPermits(5).build();
        List<Integer> results = Parallel.mapWeighted(range(10), empty, i -> 0, i -> i * 2);
        assertThat(results).isEqualTo(range(10).stream().map(i -> i * 2).toList());
        assertAllPermitsBack(empty);
    }

    @Test
    void heavyItemWaitsForTheBudgetInOrder() throws Exception {
        Semaphore budget = Semaphore.create(4);
        Permit held = budget.acquire(3);
        List<Integer> started = new CopyOnWriteArrayList<>();
        AtomicReference<List<Integer>> results = new AtomicReference<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                results.set(Parallel.mapWeighted(List.of(1, 4, 1), budget, i -> i, i -> {
                    started.add(i);
                    return i;
                }));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        awaitUntil("the heavy item waits", () -> budget.queueLength() == 1 && started.size() == 1);
        assertThat(started).containsExactly(1); // the light item behind the heavy one is not pulled yet
        held.close();
        caller.join();
        assertThat(results.get()).containsExactly(1, 4, 1);
        assertThat(started).containsExactly(1, 4, 1);
        assertAllPermitsBack(budget);
    }

    @Test
    void weightFunctionFailureFailsTheRun() {
        Semaphore budget = Semaphore.create(3);
        IllegalStateException noWeight = new IllegalStateException("no weight");
        assertThatThrownBy(() -> Parallel.mapWeighted(range(5), budget, i -> {
            if (i == 2) {
                throw noWeight;
            }
            return 1;
        }, i -> i)).isSameAs(noWeight);
        assertAllPermitsBack(budget);
    }

    // ==================================================================== shared semaphore

    @Test
    void runsSharingASemaphoreStayWithinItsPermits() throws Exception {
        Semaphore shared = Semaphore.create(3);
        Probe probe = new Probe();
        CountDownLatch reached = new CountDownLatch(1);
        ThrowingFunction<Integer, Integer> fn = i -> {
            probe.enter();
            try {
                if (probe.inFlight.get() >= 3) {
                    reached.countDown();
                }
                if (!reached.await(20, TimeUnit.SECONDS)) {
                    throw new AssertionError("the permits were never all used");
                }
                Thread.yield();
                return -i;
            } finally {
                probe.leave();
            }
        };
        AtomicReference<List<Integer>> other = new AtomicReference<>();
        Thread second = Thread.ofVirtual().start(() -> {
            try {
                other.set(Parallel.map(range(30), shared, fn));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        List<Integer> mine = Parallel.map(range(30), shared, fn);
        second.join();
        List<Integer> expected = range(30).stream().map(i -> -i).toList();
        assertThat(mine).isEqualTo(expected);
        assertThat(other.get()).isEqualTo(expected);
        assertThat(probe.max.get()).isEqualTo(3);
        assertAllPermitsBack(shared);
    }

    @Test
    void aRunWaitsOnlyForItsOwnCalls() throws Exception {
        Semaphore shared = Semaphore.create(4);
        CountDownLatch releaseOther = new CountDownLatch(1);
        AtomicInteger otherRunning = new AtomicInteger();
        Thread otherRun = Thread.ofVirtual().start(() -> {
            try {
                Parallel.map(range(2), shared, i -> {
                    otherRunning.incrementAndGet();
                    return releaseOther.await(20, TimeUnit.SECONDS);
                });
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        awaitUntil("the other run's calls hold permits", () -> otherRunning.get() == 2);
        assertThat(Parallel.map(range(5), shared, i -> i + 1)).containsExactly(1, 2, 3, 4, 5);
        assertThat(otherRun.isAlive()).as("the other run still goes on").isTrue();
        assertThat(shared.availablePermits()).isEqualTo(2);
        releaseOther.countDown();
        otherRun.join();
        assertAllPermitsBack(shared);
    }

    @Test
    void closingTheSharedSemaphoreFailsTheRun() throws Exception {
        Semaphore shared = Semaphore.builder().permits(1).name("pool").build();
        Permit held = shared.acquire();
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                Parallel.map(range(3), shared, i -> calls.incrementAndGet());
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        awaitUntil("the run waits for a permit", () -> shared.queueLength() == 1);
        shared.close();
        caller.join();
        assertThat(thrown.get()).isInstanceOf(SemaphoreClosedException.class).hasMessageContaining("pool");
        assertThat(calls.get()).isZero();
        held.close();
        assertAllPermitsBack(shared);
    }

    @Test
    void sharedSemaphoreWithACeilingOfZeroFailsAtTheFirstItem() throws Exception {
        Semaphore none = Semaphore.create(0);
        assertThatThrownBy(() -> Parallel.map(range(3), none, i -> i)).isInstanceOf(IllegalArgumentException.class);
        assertThat(Parallel.map(List.of(), none, i -> i)).isEmpty();
    }

    // ==================================================================== mapAsync

    @Test
    void mapAsyncKeepsOrderWhenStagesCompleteInReverse() {
        List<CompletableFuture<String>> stages = new CopyOnWriteArrayList<>();
        CompletableFuture<List<String>> result = Parallel.mapAsync(range(5), 5, i -> {
            CompletableFuture<String> f = new CompletableFuture<>();
            stages.add(f);
            return f;
        });
        assertThat(stages).hasSize(5);
        for (int i = 4; i >= 0; i--) {
            assertThat(result).isNotDone();
            stages.get(i).complete("s" + i);
        }
        assertThat(result.join()).containsExactly("s0", "s1", "s2", "s3", "s4");
    }

    @Test
    void mapAsyncFailureCancelsStagesInFlightAndStopsPulling() {
        LiveItems items = new LiveItems(-1);
        List<CompletableFuture<Integer>> stages = new CopyOnWriteArrayList<>();
        CompletableFuture<List<Integer>> result = Parallel.mapAsync(items, 3, i -> {
            CompletableFuture<Integer> f = new CompletableFuture<>();
            stages.add(f);
            return f;
        });
        assertThat(stages).hasSize(3);
        IllegalStateException boom = new IllegalStateException("boom");
        stages.get(1).completeExceptionally(boom);
        assertThat(stages.get(0)).isCancelled();
        assertThat(stages.get(2)).isCancelled();
        assertThat(stages).hasSize(3);
        assertThat(items.taken.get()).isEqualTo(3);
        assertThat(result.handle((v, e) -> e).join()).isSameAs(boom);
        assertThat(boom.getSuppressed()).isEmpty();
    }

    @Test
    void mapAsyncAttachesLaterGenuineFailures() {
        CompletableFuture<Integer> uncancellable = new CompletableFuture<>();
        CompletableFuture<Integer> reportsCancellation = new CompletableFuture<>();
        List<CompletableFuture<Integer>> stages = new CopyOnWriteArrayList<>();
        CompletableFuture<List<Integer>> result = Parallel.mapAsync(range(4), 4, i -> switch (i) {
            case 0 -> uncancellable.minimalCompletionStage();
            case 1 -> reportsCancellation.minimalCompletionStage();
            default -> {
                CompletableFuture<Integer> f = new CompletableFuture<>();
                stages.add(f);
                yield f;
            }
        });
        IllegalStateException boom = new IllegalStateException("boom");
        IllegalStateException later = new IllegalStateException("later");
        stages.get(0).completeExceptionally(boom);
        assertThat(stages.get(1)).isCancelled();
        assertThat(result).isNotDone();
        uncancellable.completeExceptionally(later); // genuine: attached
        reportsCancellation.completeExceptionally(new java.util.concurrent.CancellationException()); // not
        assertThat(result.handle((v, e) -> e).join()).isSameAs(boom);
        assertThat(boom.getSuppressed()).containsExactly(later);
    }

    @Test
    void cancellingTheResultCancelsStagesInFlightAndStopsPulling() {
        LiveItems items = new LiveItems(-1);
        List<CompletableFuture<Integer>> stages = new CopyOnWriteArrayList<>();
        CompletableFuture<List<Integer>> result = Parallel.mapAsync(items, 2, i -> {
            CompletableFuture<Integer> f = new CompletableFuture<>();
            stages.add(f);
            return f;
        });
        assertThat(result.cancel(true)).isTrue();
        assertThat(stages).hasSize(2).allMatch(CompletableFuture::isCancelled);
        assertThat(items.taken.get()).isEqualTo(2);
        assertThat(result).isCancelled();
    }

    @Test
    void timingOutTheResultStopsTheRun() {
        List<CompletableFuture<Integer>> stages = new CopyOnWriteArrayList<>();
        CompletableFuture<List<Integer>> result = Parallel.mapAsync(range(10), 2, i -> {
            CompletableFuture<Integer> f = new CompletableFuture<>();
            stages.add(f);
            return f;
        });
        result.orTimeout(1, TimeUnit.MILLISECONDS);
        awaitUntil("the result timed out", result::isDone);
        // The run stops in a dependent of the result, which may still be running once isDone() is true.
        awaitUntil("the stages were cancelled", () -> stages.stream().allMatch(CompletableFuture::isCancelled));
        assertThat(stages).hasSize(2).allMatch(CompletableFuture::isCancelled);
    }

    @Test
    void mapAsyncWaitsForStagesItCannotCancel() {
        CompletableFuture<Integer> underlying = new CompletableFuture<>();
        List<CompletableFuture<Integer>> stages = new CopyOnWriteArrayList<>();
        CompletableFuture<List<Integer>> result = Parallel.mapAsync(range(2), 2, i -> {
            if (i == 0) {
                return underlying.minimalCompletionStage(); // not a Future: cannot be cancelled
            }
            CompletableFuture<Integer> f = new CompletableFuture<>();
            stages.add(f);
            return f;
        });
        IllegalStateException boom = new IllegalStateException("boom");
        stages.get(0).completeExceptionally(boom);
        assertThat(result).as("still waits for the stage it could not cancel").isNotDone();
        underlying.complete(7);
        assertThat(result.handle((v, e) -> e).join()).isSameAs(boom);
    }

    @Test
    void fnThrowingOrReturningNullFailsTheFuture() {
        IllegalStateException thrown = new IllegalStateException("fn");
        CompletableFuture<List<Object>> throwing = Parallel.mapAsync(range(3), 2, i -> {
            if (i == 1) {
                throw thrown;
            }
            return CompletableFuture.completedFuture(i);
        });
        assertThat(throwing.handle((v, e) -> e).join()).isSameAs(thrown);
        CompletableFuture<List<Object>> nulls = Parallel.mapAsync(range(3), 2, i -> null);
        assertThat(nulls.handle((v, e) -> e).join()).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("#0");
    }

    @Test
    void derivedStageFailureIsReportedUnwrapped() {
        IllegalStateException boom = new IllegalStateException("boom");
        CompletableFuture<List<Integer>> result = Parallel.mapAsync(range(1), 1,
                i -> CompletableFuture.<Integer>failedFuture(boom).thenApply(x -> x + 1));
        assertThat(result.handle((v, e) -> e).join()).isSameAs(boom);
    }

    @Test
    void mapAsyncUsesTheIteratorFromOneThreadAtATime() {
        LiveItems items = new LiveItems(20_000);
        Random random = new Random(7);
        List<Integer> delays = IntStream.range(0, 20_000).map(i -> random.nextInt(3)).boxed().toList();
        Function<Integer, CompletionStage<Integer>> fn = i -> CompletableFuture.supplyAsync(() -> {
            for (int k = delays.get(i); k > 0; k--) {
                Thread.yield();
            }
            items.finished();
            return i;
        }, STAGES);
        List<Integer> results = Parallel.mapAsync(items, 8, fn).join();
        assertThat(results).isEqualTo(range(20_000));
        assertThat(items.overlapped).isFalse();
    }

    // ==================================================================== examples

    @Test
    void classJavadocExamplesWork() throws Exception {
        List<Integer> lengths = Parallel.map(List.of("a", "bb", "ccc"), 2, String::length);
        assertThat(lengths).containsExactly(1, 2, 3);

        Semaphore db = Semaphore.create(16);
        List<String> rows = Parallel.map(List.of("k1", "k2"), db, key -> "row of " + key);
        assertThat(rows).containsExactly("row of k1", "row of k2");

        Semaphore memory = Semaphore.create(512 * 1024 * 1024);
        List<Integer> images = Parallel.mapWeighted(List.of(1024, 2048), memory, size -> size, size -> size / 1024);
        assertThat(images).containsExactly(1, 2);

        CompletableFuture<List<String>> all = Parallel.mapAsync(List.of("x", "y"), 32,
                request -> CompletableFuture.supplyAsync(request::toUpperCase, STAGES));
        assertThat(all.get(10, TimeUnit.SECONDS)).containsExactly("X", "Y");

        AtomicInteger next = new AtomicInteger();
        Iterable<Runnable> jobs = java.util.stream.Stream.<Runnable>generate(() -> {
            int n = next.getAndIncrement();
            return () -> {
                if (n == 100) {
                    throw new IllegalStateException("job " + n + " failed");
                }
                if (n > 100) {
                    // Later jobs hold their permits until fail-fast cancels them, so how many items the loop
                    // can take after the failure does not depend on scheduling.
                    try {
                        new CountDownLatch(1).await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            };
        })::iterator;
        assertThatThrownBy(() -> Parallel.forEach(jobs, 4, Runnable::run))
                .isInstanceOf(IllegalStateException.class).hasMessage("job 100 failed");
        // jobs 0..100, at most 4 holding permits after it, and one more taken while its permit came back
        assertThat(next.get()).as("jobs taken").isLessThanOrEqualTo(100 + 1 + 4 + 1);
    }
}
