package dev.sema.reactor;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Sema's semaphores in Project Reactor: permits acquired on subscription, without blocking a thread while a
 * request waits, and given back exactly once however the subscription ends.
 *
 * <p>Every method checks its arguments when it is called, at assembly, and throws there
 * ({@link NullPointerException}, or {@link IllegalArgumentException} for a request outside
 * {@code 0..maxPermits()}, naming both numbers); nothing is asked of the semaphore until a subscription.
 * Outcomes of waiting reach the subscriber as error signals: {@link dev.sema.SemaphoreClosedException} if
 * the semaphore is or becomes closed before the grant, {@link TimeoutException} when a timed request is not
 * granted in time.
 *
 * <h2>Fairness</h2>
 * Requests queue on the semaphore like any other {@link Semaphore#acquireAsync(long)}, in the order the
 * subscriptions were made, under the semaphore's own {@link dev.sema.Fairness}.
 *
 * <h2>Memory consistency effects</h2>
 * Those of the semaphore: actions before permits are given back (a {@code Permit} closed, a held subscription
 * ended) happen-before the signals of a subscription that is granted those permits.
 *
 * <h2>Cancellation</h2>
 * Cancelling a subscription that still waits withdraws its request from the queue; a grant that races with
 * the cancel is given back. Cancelling one that holds permits gives them back. No permit outlives its
 * subscription, except the one {@link #acquire(Semaphore, long)} emits, which belongs to its subscriber.
 *
 * <h2>Threads</h2>
 * A request granted at once is delivered on the subscribing thread; a queued one on the thread whose release
 * (or resize) made the grant, as for {@code acquireAsync}. Nothing here blocks or parks a thread while
 * waiting; sema-core's own short critical sections are declared to BlockHound by
 * {@link SemaBlockHoundIntegration}.
 *
 * <h2>Examples</h2>
 * At most 4 calls at once, however many subscribers ({@code webClient} stands for any reactive client):
 * {@snippet :
 * Semaphore calls = Semaphore.create(4);
 * Mono<String> body = webClient.get().retrieve().bodyToMono(String.class)
 *         .transformDeferred(SemaReactor.withPermits(calls, 1));
 * }
 * At most 64 MiB of files in memory at once, results in order:
 * {@snippet :
 * Semaphore memory = Semaphore.create(64L << 20);
 * Flux<Checksum> sums = SemaReactor.mapWeighted(files, memory, File::size, file -> checksum(file));
 * }
 */
public final class SemaReactor {
    /** How many inner publishers {@link #mapWeighted} has subscribed (waiting or running) at most. */
    private static final int MAX_INNER = 256;
    /** How many values {@link #mapWeighted} requests from each inner publisher ahead of downstream. */
    private static final int INNER_PREFETCH = 32;

    private SemaReactor() {
    }

    /**
     * A {@code Mono} that acquires {@code permits} permits when subscribed and emits the {@link Permit} once
     * they are granted, waiting as long as it takes without blocking a thread.
     *
     * <p>The emitted {@code Permit} belongs to the subscriber, which must close it: a subscriber that drops it
     * (an operator that discards values, {@code then()}, a {@code filter}) keeps the permits held for good.
     * To hold permits for the duration of some work, prefer {@link #withPermits(Semaphore, long)}, or
     * {@code Mono.usingWhen(acquire(s, n), p -> work, p -> Mono.fromRunnable(p::close))}. A subscription
     * cancelled before the permit is emitted leaves nothing held: the request is withdrawn, or the permit it was
     * granted is closed here.
     *
     * <p>A cancel that races with the emission may come too late: the permit is then already on its way to the
     * subscriber, and is the subscriber's. Reactive Streams lets a subscriber receive a value after it cancelled,
     * and some drop it: the lambda subscribers of {@code subscribe(...)} hand a value that arrives after their
     * {@code dispose()} to {@code Hooks.onNextDropped}, where such a permit would stay held. Where a cancel may
     * race with the grant, close what {@code onNext} receives whatever the state of the subscription, or use
     * {@link #withPermits(Semaphore, long)}, which never hands permits out.
     *
     * @param semaphore the semaphore
     * @param permits the request, {@code 0 <= permits <= semaphore.maxPermits()}
     * @return a {@code Mono} of the permit, failing with {@link dev.sema.SemaphoreClosedException} if the
     *         semaphore is or becomes closed first
     * @throws NullPointerException if {@code semaphore} is {@code null}
     * @throws IllegalArgumentException if {@code permits} is out of range
     */
    public static Mono<Permit> acquire(Semaphore semaphore, long permits) {
        Objects.requireNonNull(semaphore, "semaphore");
        return new AcquireMono(semaphore, Requests.check(semaphore, permits), null);
    }

    /**
     * Like {@link #acquire(Semaphore, long)}, but fails with {@link TimeoutException} if the permits are not
     * granted within {@code timeout} of the subscription (zero or less: only if they can be had at once). The
     * timeout is sema-core's, measured on its own timer, not on a Reactor scheduler.
     *
     * @param semaphore the semaphore
     * @param permits the request, {@code 0 <= permits <= semaphore.maxPermits()}
     * @param timeout how long each subscription waits at most
     * @return a {@code Mono} of the permit
     * @throws NullPointerException if {@code semaphore} or {@code timeout} is {@code null}
     * @throws IllegalArgumentException if {@code permits} is out of range
     */
    public static Mono<Permit> acquire(Semaphore semaphore, long permits, Duration timeout) {
        Objects.requireNonNull(semaphore, "semaphore");
        Objects.requireNonNull(timeout, "timeout");
        return new AcquireMono(semaphore, Requests.check(semaphore, permits), timeout);
    }

    /**
     * An operator that holds {@code permits} permits for the whole of each subscription of the {@code Mono}
     * or {@code Flux} it is applied to: {@code mono.transformDeferred(SemaReactor.withPermits(s, 1))}. See
     * {@link PermitOperator}.
     *
     * @param semaphore the semaphore
     * @param permits the request, {@code 0 <= permits <= semaphore.maxPermits()}
     * @param <T> the element type
     * @return the operator
     * @throws NullPointerException if {@code semaphore} is {@code null}
     * @throws IllegalArgumentException if {@code permits} is out of range
     */
    public static <T> PermitOperator<T> withPermits(Semaphore semaphore, long permits) {
        Objects.requireNonNull(semaphore, "semaphore");
        return new PermitOperator<>(semaphore, Requests.check(semaphore, permits));
    }

    /**
     * Maps each element to a publisher run while holding the element's weight in permits, several at once, and
     * emits their results in the order of the source: {@code flatMapSequential} bounded by a weighted
     * semaphore rather than a count.
     *
     * <p>For each element, {@code permits} gives its weight; the element's request queues on the semaphore in
     * source order, and only once it is granted is {@code mapper} called and its publisher subscribed. The
     * permits are given back when that publisher completes or fails, or is cancelled. So however many flows
     * share the semaphore, the weights of the publishers running at once never exceed its limit.
     *
     * <p>An element whose weight is negative or above {@code semaphore.maxPermits()} fails the flux with an
     * {@link IllegalArgumentException} naming the weight; so does a {@code null} from {@code mapper} (with a
     * {@link NullPointerException}) and any exception of {@code permits} or {@code mapper}. The first error
     * of any inner publisher fails the flux at once; it then cancels the others, and every permit goes back,
     * as on cancel.
     *
     * <p>Order: each element asks for its permits once the element before it has been granted (or has failed
     * or been cancelled), so one flow's requests are granted in source order whatever the semaphore's
     * {@link dev.sema.Fairness}, and at most one of them waits in the semaphore's queue at a time. A heavy
     * element therefore holds back the lighter ones after it, as a queue of one flow's requests would.
     *
     * <p>Backpressure: at most 256 elements are taken from the source ahead of the results emitted (waiting
     * for their turn or permits, or running), and each inner publisher is asked for at most 32 values ahead of
     * downstream. An inner publisher that has filled that buffer while an earlier one has not finished keeps
     * its permits until downstream catches up; since earlier elements were granted first, that never keeps
     * an earlier element from its permits.
     *
     * @param source the elements
     * @param semaphore the semaphore
     * @param permits each element's weight, {@code 0 <= weight <= semaphore.maxPermits()}
     * @param mapper each element's work, called once its permits are granted
     * @param <T> the element type
     * @param <R> the result type
     * @return the results, in source order
     * @throws NullPointerException if an argument is {@code null}
     */
    public static <T, R> Flux<R> mapWeighted(Flux<T> source, Semaphore semaphore, ToLongFunction<? super T> permits,
            Function<? super T, ? extends Publisher<? extends R>> mapper) {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(semaphore, "semaphore");
        Objects.requireNonNull(permits, "permits");
        Objects.requireNonNull(mapper, "mapper");
        return Flux.defer(() -> {
            Sequence sequence = new Sequence(); // this subscription's
            return source.flatMapSequential(t -> weighted(t, semaphore, permits, mapper, sequence), MAX_INNER,
                    INNER_PREFETCH);
        });
    }

    /**
     * The order in which one subscription of {@link #mapWeighted} asks for permits: each element's request once
     * the one before it is decided. Touched only by the mapper of {@code flatMapSequential}, which runs in
     * the source's {@code onNext}, one at a time.
     */
    private static final class Sequence {
        private CompletableFuture<?> last = CompletableFuture.completedFuture(null);

        PermitSubscriber.Turn next() {
            CompletableFuture<Void> decided = new CompletableFuture<>();
            PermitSubscriber.Turn turn = new PermitSubscriber.Turn(last, decided);
            last = decided;
            return turn;
        }
    }

    private static <T, R> Flux<R> weighted(T element, Semaphore semaphore, ToLongFunction<? super T> permits,
            Function<? super T, ? extends Publisher<? extends R>> mapper, Sequence sequence) {
        long weight = permits.applyAsLong(element);
        long ceiling = semaphore.maxPermits();
        if (weight < 0 || weight > ceiling) {
            return Flux.error(new IllegalArgumentException("an element weighs " + weight + " permits, but a weight"
                    + " must be between 0 and maxPermits (" + ceiling + ") of semaphore '" + semaphore.name()
                    + "'"));
        }
        Flux<R> work = Flux.defer(() -> Flux.<R>from(
                Objects.requireNonNull(mapper.apply(element), "mapper returned null")));
        return new PermitOperator<R>(semaphore, weight).applyInTurn(work, sequence.next());
    }
}
