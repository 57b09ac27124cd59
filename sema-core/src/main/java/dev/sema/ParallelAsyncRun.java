package dev.sema;

import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * One {@link Parallel#mapAsync} run: no thread of its own. Whoever has something to do (the caller,
 * a thread completing a stage, a thread cancelling the result) runs the pump, which pulls items and
 * starts stages while fewer than {@code limit} are in flight, and completes the result at the end.
 *
 * @param <T> the item type
 * @param <R> the result type
 */
final class ParallelAsyncRun<T, R> {

    /*
     * Implementation overview
     *
     * `wip` serialises the pump (a drain loop): the thread that moves it from 0 runs pump rounds until
     * it brings it back to 0; every other thread only increments it, which makes the running one go
     * round once more. So the iterator, fn, `results` and `finished` are touched by one thread at a time,
     * each pump handing over to the next through `wip`. A stage completed inline (already done when fn
     * returns it) calls pump() from inside the pump, which only increments: no recursion.
     *
     * Invariants:
     *  A1: inFlight == stages started (fn called) whose completion has not been handled yet; the pump
     *      starts one only while inFlight < limit, so inFlight <= limit, and items taken and not yet
     *      finished <= limit (the pump takes an item only for a free slot).
     *  A2: every stage started after the run stopped is cancelled: the pump adds it to `running` and then
     *      reads `failFast`; a stopper writes `failFast` and then iterates `running`.
     *  A3: the result is completed once (`finished`), by the pump, when nothing is in flight and the
     *      input is exhausted or the run stopped; the pump runs again after every stage completion and
     *      after every stop, so that moment is never missed.
     *
     * Results: a stage's completion writes its own chunk slot, then decrements inFlight; the pump that
     * reads inFlight == 0 therefore sees every slot.
     *
     * field        read            write
     * wip          atomic          atomic
     * inFlight     atomic          atomic
     * running      CHM             CHM
     * completing   volatile        volatile, by the pump before completing the result
     * iterator, results, started, exhausted, finished: pump only
     */

    private static final long MAX_RESULTS = Integer.MAX_VALUE - 8;

    private final int limit;
    private final Function<? super T, ? extends CompletionStage<R>> fn;
    private final FailFast failFast = new FailFast();
    private final Set<Stage> running = ConcurrentHashMap.newKeySet();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final CompletableFuture<List<R>> result = new CompletableFuture<>();
    private volatile boolean completing;

    // Pump only.
    private Iterable<? extends T> items;
    private Iterator<? extends T> iterator;
    private final ResultChunks results = new ResultChunks();
    private long started;
    private boolean exhausted;
    private boolean finished;

    ParallelAsyncRun(Iterable<? extends T> items, int limit, Function<? super T, ? extends CompletionStage<R>> fn) {
        this.items = items;
        this.limit = limit;
        this.fn = fn;
    }

    CompletableFuture<List<R>> start() {
        // Completing the result from outside (cancel, orTimeout, complete...) stops the run.
        result.whenComplete((value, failure) -> {
            if (!completing && failFast.stop(FailFast.CANCELLED)) {
                cancelAll();
                pump();
            }
        });
        pump();
        return result;
    }

    // ---------------------------------------------------------------- the pump

    private void pump() {
        if (wip.getAndIncrement() != 0) {
            return; // the running pump goes round once more for us
        }
        boolean finishNow = false;
        do {
            if (!finished) {
                pull();
                if ((exhausted || failFast.stopped()) && inFlight.get() == 0) {
                    finished = true; // keeps A3
                    finishNow = true;
                }
            }
        } while (wip.decrementAndGet() != 0);
        if (finishNow) {
            finish(); // outside the loop: the result's dependents may run for long
        }
    }

    private void pull() {
        while (!failFast.stopped() && !exhausted && inFlight.get() < limit) {
            T item;
            try {
                if (iterator == null) {
                    iterator = Objects.requireNonNull(items.iterator(), "items.iterator() returned null");
                    items = null;
                }
                if (!iterator.hasNext()) {
                    exhausted = true;
                    iterator = null;
                    return;
                }
                item = iterator.next();
            } catch (Throwable t) {
                fail(t);
                return;
            }
            if (started >= MAX_RESULTS) {
                fail(new IllegalStateException("mapAsync: more than " + MAX_RESULTS + " results do not fit in a list"));
                return;
            }
            launch(item);
        }
        if (failFast.stopped()) {
            iterator = null; // pulled no more: let the input go
            items = null;
        }
    }

    private void launch(T item) {
        Object[] chunk = results.nextChunk();
        Stage stage = new Stage(chunk, results.reserve(), started++);
        inFlight.incrementAndGet(); // keeps A1: counted before fn runs
        CompletionStage<R> cs;
        try {
            cs = fn.apply(item);
            if (cs == null) {
                throw new NullPointerException("mapAsync: fn returned null for item #" + stage.index);
            }
        } catch (Throwable t) {
            inFlight.decrementAndGet();
            fail(t);
            return;
        }
        stage.stage = cs;
        running.add(stage);
        if (failFast.stopped()) {
            cancel(cs); // keeps A2
        }
        try {
            cs.whenComplete(stage);
        } catch (Throwable t) { // a broken CompletionStage: it will never report back
            if (running.remove(stage)) {
                inFlight.decrementAndGet();
                fail(t);
            }
        }
    }

    private void finish() {
        completing = true;
        switch (failFast.reason()) {
            case FailFast.RUNNING -> result.complete(results.<R>toList());
            case FailFast.FAILED -> result.completeExceptionally(failFast.failure());
            default -> {
                // CANCELLED: the result was completed from outside; later outcomes have nowhere to go.
            }
        }
    }

    // ---------------------------------------------------------------- stopping

    private void fail(Throwable failure) {
        if (failFast.fail(failure)) {
            cancelAll();
        }
    }

    private void cancelAll() {
        for (Stage s : running) {
            cancel(s.stage);
        }
    }

    /**
     * Cancels a stage that is a {@link Future} (a {@link CompletableFuture} among others). Other stages
     * cannot be cancelled through the {@code CompletionStage} interface ({@code toCompletableFuture()} may
     * return a copy), nor can a future whose {@code cancel} refuses (a {@code minimalCompletionStage()}
     * throws {@link UnsupportedOperationException}); they are waited for.
     */
    private void cancel(CompletionStage<?> cs) {
        if (cs instanceof Future<?> f) {
            try {
                f.cancel(true);
            } catch (UnsupportedOperationException refused) {
                // waited for instead
            } catch (RuntimeException | Error e) {
                fail(e); // a broken cancel is a genuine failure; the run is stopped already, so it is attached
            }
        }
    }

    /** One started stage: its slot, and its completion handler. */
    private final class Stage implements BiConsumer<Object, Throwable> {
        private final Object[] target;
        private final int at;
        final long index;
        CompletionStage<R> stage;

        Stage(Object[] target, int at, long index) {
            this.target = target;
            this.at = at;
            this.index = index;
        }

        @Override
        public void accept(Object value, Throwable failure) {
            if (!running.remove(this)) {
                return; // given up on in launch()
            }
            if (failure == null) {
                target[at] = value;
            } else {
                // A stage derived from a failed one reports the failure wrapped: report the cause.
                fail(failure instanceof CompletionException && failure.getCause() != null
                        ? failure.getCause() : failure);
            }
            inFlight.decrementAndGet(); // keeps A1; publishes the slot to the pump
            pump(); // keeps A3
        }
    }
}
