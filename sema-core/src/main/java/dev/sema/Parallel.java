package dev.sema;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * Bounded parallel map: runs a function over the items of an {@link Iterable} with a bound on how
 * many calls run at once, and returns the results in input order (the {@code mapLimit} of other
 * ecosystems).
 *
 * {@snippet :
 * List<Page> pages = Parallel.map(urls, 8, url -> fetch(url)); // at most 8 fetches at once
 * }
 *
 * <h2>Calls</h2>
 * The blocking forms ({@code map}, {@code mapWeighted}, {@code forEach}) run each call on a new
 * virtual thread; the calling thread pulls the items, starts the calls and waits, and returns when
 * every call has ended. {@link #mapAsync mapAsync} starts no thread: it calls {@code fn} on the
 * thread that calls it, on threads that complete the stages {@code fn} returned, or on the thread
 * that cancels the result, so {@code fn} should only start work and return its stage.
 *
 * <p>The input is pulled lazily, one item at a time, and only by one thread at a time, so the
 * iterator need not be thread-safe. Items taken from the iterator whose calls have not yet finished
 * never exceed {@code limit + 1}: the calls in flight and the one item that waits for its permits
 * ({@code mapAsync} takes an item only for a free slot: at most {@code limit}). So an iterable of
 * millions of items, or an endless one with {@code forEach} stopped by a failure, needs memory for
 * about {@code limit} items. Results are kept until the list is returned. {@code null} items and
 * {@code null} results are allowed. The list returned is unmodifiable, permits {@code null}s and holds
 * the results in input order.
 *
 * <h2>Limits and weights</h2>
 * {@link #map(Iterable, int, ThrowingFunction) map}, {@link #forEach forEach} and
 * {@link #mapAsync mapAsync} run at most {@code limit} calls at once (for {@code mapAsync}, a call
 * lasts from {@code fn} being called until its stage completes).
 * {@link #map(Iterable, Semaphore, ThrowingFunction) map(items, shared, fn)} holds 1 permit of
 * {@code shared} per call, so several runs (and any other users of the semaphore) together stay within
 * its permits; each run waits for its own calls only. {@link #mapWeighted mapWeighted} holds
 * {@code weight.applyAsLong(item)} permits of {@code budget} per call, so the weights of the calls
 * running at once never exceed its permits. A weight outside {@code 0..budget.maxPermits()} is found
 * when its item is reached and fails the run like a failing call, with
 * {@link IllegalArgumentException}, without calling {@code fn} for that item. A weight of 0 takes no
 * permits, so calls of weight 0 are not bounded by the budget.
 *
 * <h2>Fairness</h2>
 * Calls start in input order: an item waits for its permits before the next item is pulled. Against
 * other users of a shared semaphore, the semaphore's {@link Fairness} decides: under
 * {@link Fairness#FIFO} a heavy item waits at the head of the queue until enough permits are free,
 * and is never starved by lighter requests.
 *
 * <h2>Failures</h2>
 * The run fails fast. On the first failure (a call throws, {@code fn} returns a {@code null} stage or
 * a stage that fails, the iterator or {@code weight} throws, a weight is out of range, or the shared
 * semaphore is closed) no new call starts and the calls in flight are cancelled. Once every started
 * call has ended, the first failure is thrown: unchecked exceptions and errors as they are, checked
 * ones wrapped in a {@link CompletionException}. Later genuine failures are attached to the exception
 * thrown as {@linkplain Throwable#getSuppressed() suppressed}. A failure after the run stopped that
 * merely reports our own cancellation is not attached: one that is, or is caused (within a few causes)
 * by, an {@link InterruptedException}, {@link java.io.InterruptedIOException},
 * {@link java.nio.channels.ClosedByInterruptException} or
 * {@link java.util.concurrent.CancellationException}. Nothing started by the run keeps running after
 * a blocking form returns or throws; a {@code mapAsync} result completes only after every stage it
 * started has completed (unless it is completed from outside, see <em>Cancellation</em>).
 *
 * <h2>Memory consistency effects</h2>
 * Actions in a thread before it calls one of these methods happen-before every call of {@code fn}
 * (and of the iterator and {@code weight}). Actions in the iterator's {@code next()} happen-before the
 * call of {@code fn} for the item it returned. Actions in each call (for {@code mapAsync}: before its
 * stage completes) happen-before the blocking form returns or throws, or the {@code mapAsync} result
 * completes.
 *
 * <h2>Cancellation</h2>
 * The blocking forms cancel a call by interrupting its virtual thread; a call that ignores interrupts
 * is waited for. {@code mapAsync} cancels a stage with {@code cancel(true)} if it is a {@link Future}
 * (every {@link CompletableFuture} is); other stages cannot be cancelled through
 * {@code CompletionStage} and are waited for. Completing the future returned by {@code mapAsync} from
 * outside ({@code cancel}, {@code orTimeout}, {@code complete}, ...) stops the run the same way: no
 * item is pulled any more and the stages in flight are cancelled. As with any
 * {@code CompletableFuture}, cancelling a stage does not stop the work that would have completed it.
 *
 * <h2>Interruption</h2>
 * A blocking form throws {@link InterruptedException} at once, before pulling any item, if the calling
 * thread is interrupted on entry. If it is interrupted while the run goes on, no new call starts, the
 * calls in flight are cancelled, and once every started call has ended {@code InterruptedException}
 * is thrown, with the interrupt status cleared and genuine failures of the calls attached as
 * suppressed. While it waits for cancelled calls to end it does not respond to further interrupts (it
 * must not return while they run), but keeps them. If a failure stopped the run before the interrupt,
 * the failure is thrown and the interrupt status is set again.
 *
 * <h2>Examples</h2>
 * Bound by a count, collect in order:
 * {@snippet :
 * List<Integer> lengths = Parallel.map(List.of("a", "bb", "ccc"), 2, String::length);
 * // [1, 2, 3]
 * }
 * Share one limit between several runs, for instance every request's fan-out to one database:
 * {@snippet :
 * Semaphore db = Semaphore.create(16);
 * List<Row> rows = Parallel.map(keys, db, key -> load(key)); // with every other user of db: <= 16
 * }
 * Bound by size rather than count:
 * {@snippet :
 * Semaphore memory = Semaphore.create(512 * 1024 * 1024);
 * List<Image> images = Parallel.mapWeighted(files, memory, File::length, file -> decode(file));
 * }
 * Without blocking a thread:
 * {@snippet :
 * CompletableFuture<List<Response>> all = Parallel.mapAsync(requests, 32, client::sendAsync);
 * }
 * An endless input, stopped by the first failure:
 * {@snippet :
 * Iterable<Job> jobs = Stream.generate(source::next)::iterator; // never ends
 * Parallel.forEach(jobs, 4, Job::run);                           // throws the first failure
 * }
 */
public final class Parallel {

    private Parallel() {
    }

    /**
     * Calls {@code fn} for every item, at most {@code limit} calls at once, each on its own virtual
     * thread, and returns the results in input order.
     *
     * @param items the input, pulled lazily
     * @param limit the most calls at once, {@code >= 1}
     * @param fn the work per item
     * @param <T> the item type
     * @param <R> the result type
     * @return the results in input order, unmodifiable, {@code null}s allowed
     * @throws InterruptedException if the calling thread is interrupted on entry or while the run goes
     *         on (after every started call has ended)
     * @throws IllegalArgumentException if {@code limit < 1}
     * @throws NullPointerException if an argument is {@code null}
     * @throws CompletionException wrapping the first failure if it is a checked exception (unchecked
     *         ones and errors are thrown as they are)
     */
    public static <T, R> List<R> map(Iterable<? extends T> items, int limit,
            ThrowingFunction<? super T, ? extends R> fn) throws InterruptedException {
        Objects.requireNonNull(items, "items");
        Objects.requireNonNull(fn, "fn");
        checkLimit("map", limit);
        return new ParallelRun<T, R>("Parallel.map", ownSemaphore("Parallel.map", limit), null, fn, true)
                .run(items);
    }

    /**
     * Calls {@code fn} for every item, at most {@code limit} at once, without blocking: {@code fn}
     * starts the work and returns its stage. The returned future completes with the results in input
     * order once every stage has completed, or fails as the blocking forms would throw (the first
     * failure, a checked one wrapped in a {@link CompletionException}, later genuine failures attached
     * as suppressed) once every stage started has completed. A failed stage's
     * {@code CompletionException} is unwrapped to its cause first. Completing the returned future from
     * outside (for instance {@code cancel}) stops pulling and cancels the stages in flight.
     *
     * <p>{@code items.iterator()} and the first calls of {@code fn} run on the calling thread before
     * this method returns; later ones run on the threads that complete the stages.
     *
     * @param items the input, pulled lazily
     * @param limit the most stages in flight at once, {@code >= 1}
     * @param fn starts the work for one item; must not return {@code null}
     * @param <T> the item type
     * @param <R> the result type
     * @return a future of the results in input order, unmodifiable, {@code null}s allowed
     * @throws IllegalArgumentException if {@code limit < 1}
     * @throws NullPointerException if an argument is {@code null}
     */
    public static <T, R> CompletableFuture<List<R>> mapAsync(Iterable<? extends T> items, int limit,
            Function<? super T, ? extends CompletionStage<R>> fn) {
        Objects.requireNonNull(items, "items");
        Objects.requireNonNull(fn, "fn");
        checkLimit("mapAsync", limit);
        return new ParallelAsyncRun<T, R>(items, limit, fn).start();
    }

    /**
     * Calls {@code fn} for every item, each call holding 1 permit of {@code shared} while it runs, each
     * on its own virtual thread, and returns the results in input order. Several runs may share one
     * semaphore; each waits for its own calls only. The semaphore is neither closed nor resized.
     *
     * @param items the input, pulled lazily
     * @param shared bounds the calls at once, together with its other users
     * @param fn the work per item
     * @param <T> the item type
     * @param <R> the result type
     * @return the results in input order, unmodifiable, {@code null}s allowed
     * @throws InterruptedException if the calling thread is interrupted on entry or while the run goes
     *         on (after every started call has ended)
     * @throws SemaphoreClosedException if {@code shared} is or becomes closed before every item has
     *         its permit (after every started call has ended)
     * @throws IllegalArgumentException if {@code shared.maxPermits()} is 0 and there is an item
     * @throws NullPointerException if an argument is {@code null}
     * @throws CompletionException wrapping the first failure if it is a checked exception (unchecked
     *         ones and errors are thrown as they are)
     */
    public static <T, R> List<R> map(Iterable<? extends T> items, Semaphore shared,
            ThrowingFunction<? super T, ? extends R> fn) throws InterruptedException {
        Objects.requireNonNull(items, "items");
        Objects.requireNonNull(shared, "shared");
        Objects.requireNonNull(fn, "fn");
        return new ParallelRun<T, R>("Parallel.map", shared, null, fn, true).run(items);
    }

    /**
     * Calls {@code fn} for every item, each call holding {@code weight.applyAsLong(item)} permits of
     * {@code budget} while it runs, each on its own virtual thread, and returns the results in input
     * order. The weight of an item is asked for once, on the calling thread, when the item is reached;
     * one outside {@code 0..budget.maxPermits()} fails the run with
     * {@link IllegalArgumentException} without calling {@code fn} for that item. Calls of weight 0 take
     * no permits and are not bounded.
     *
     * @param items the input, pulled lazily
     * @param budget bounds the sum of the weights of the calls at once, together with its other users
     * @param weight the permits an item's call needs
     * @param fn the work per item
     * @param <T> the item type
     * @param <R> the result type
     * @return the results in input order, unmodifiable, {@code null}s allowed
     * @throws InterruptedException if the calling thread is interrupted on entry or while the run goes
     *         on (after every started call has ended)
     * @throws IllegalArgumentException if an item's weight is out of range (after every started call
     *         has ended)
     * @throws SemaphoreClosedException if {@code budget} is or becomes closed before every item has its
     *         permits (after every started call has ended)
     * @throws NullPointerException if an argument is {@code null}
     * @throws CompletionException wrapping the first failure if it is a checked exception (unchecked
     *         ones and errors are thrown as they are)
     */
    public static <T, R> List<R> mapWeighted(Iterable<? extends T> items, Semaphore budget,
            ToLongFunction<? super T> weight, ThrowingFunction<? super T, ? extends R> fn)
            throws InterruptedException {
        Objects.requireNonNull(items, "items");
        Objects.requireNonNull(budget, "budget");
        Objects.requireNonNull(weight, "weight");
        Objects.requireNonNull(fn, "fn");
        return new ParallelRun<T, R>("Parallel.mapWeighted", budget, weight, fn, true).run(items);
    }

    /**
     * Calls {@code fn} for every item, at most {@code limit} calls at once, each on its own virtual
     * thread, and returns when every call has ended. Keeps nothing per item, so the input may be as
     * long as it likes, even endless (a failure then ends the run).
     *
     * @param items the input, pulled lazily
     * @param limit the most calls at once, {@code >= 1}
     * @param fn the work per item
     * @param <T> the item type
     * @throws InterruptedException if the calling thread is interrupted on entry or while the run goes
     *         on (after every started call has ended)
     * @throws IllegalArgumentException if {@code limit < 1}
     * @throws NullPointerException if an argument is {@code null}
     * @throws CompletionException wrapping the first failure if it is a checked exception (unchecked
     *         ones and errors are thrown as they are)
     */
    public static <T> void forEach(Iterable<? extends T> items, int limit, ThrowingConsumer<? super T> fn)
            throws InterruptedException {
        Objects.requireNonNull(items, "items");
        Objects.requireNonNull(fn, "fn");
        checkLimit("forEach", limit);
        ThrowingFunction<T, Object> call = item -> {
            fn.accept(item);
            return null;
        };
        new ParallelRun<T, Object>("Parallel.forEach", ownSemaphore("Parallel.forEach", limit), null, call, false)
                .run(items);
    }

    private static void checkLimit(String operation, int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException(operation + ": limit (" + limit + ") must be at least 1");
        }
    }

    private static Semaphore ownSemaphore(String name, int limit) {
        return new LocalSemaphore(name, limit, limit, Fairness.FIFO, LeakDetection.OFF);
    }
}
