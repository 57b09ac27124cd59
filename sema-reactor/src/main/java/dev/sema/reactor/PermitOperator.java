package dev.sema.reactor;

import dev.sema.Semaphore;
import java.util.Objects;
import java.util.function.UnaryOperator;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoOperator;

/**
 * Holds permits of a semaphore for the whole of each subscription of a {@code Mono} or {@code Flux}: made by
 * {@link SemaReactor#withPermits(Semaphore, long)}, applied with {@code transformDeferred} (or
 * {@code transform}, or directly).
 *
 * <p>Applied to a {@link Mono} it returns a {@code Mono}, to anything else a {@link Flux}. Each subscription
 * asks for the permits with {@link Semaphore#acquireAsync(long)}, without blocking a thread, subscribes the
 * source once they are granted, and gives them back exactly once when the source completes or fails, or when
 * the subscription is cancelled, whichever comes first: before the terminal signal reaches downstream (for a
 * {@code Mono}, before its value). Cancelled while still waiting, the request is withdrawn from the queue.
 * A resubscription ({@code retry}, {@code repeat}) asks for the permits again. If the semaphore is closed
 * before the grant, the subscription fails with {@link dev.sema.SemaphoreClosedException}.
 *
 * <h2>Threads</h2>
 * The source is subscribed on the thread that made the grant: the subscribing thread when permits are free,
 * else the thread whose release served the request. Add {@code subscribeOn} or {@code publishOn} to choose
 * another.
 *
 * <h2>Cancellation</h2>
 * A cancel gives the permits back at once, after passing the cancel to the source; work the source started
 * and cannot stop (a blocking task, for one) may still be running when the permits are free.
 *
 * @param <T> the element type
 */
public final class PermitOperator<T> implements UnaryOperator<Publisher<T>> {
    private final Semaphore semaphore;
    private final long permits;

    PermitOperator(Semaphore semaphore, long permits) {
        this.semaphore = semaphore;
        this.permits = permits;
    }

    /**
     * Wraps {@code source} so that each of its subscriptions holds the permits.
     *
     * @param source a {@code Mono}, a {@code Flux} or any other publisher
     * @return a {@code Mono} if {@code source} is one, else a {@code Flux}
     * @throws NullPointerException if {@code source} is {@code null}
     */
    @Override
    public Publisher<T> apply(Publisher<T> source) {
        Objects.requireNonNull(source, "source");
        if (source instanceof Mono<T> mono) {
            return new PermitMono<>(mono, semaphore, permits);
        }
        return new PermitFlux<>(Flux.from(source), semaphore, permits, null);
    }

    /**
     * {@link #apply} for a {@code Flux} whose element type is only known as a bound, whose request asks for its
     * permits in its {@code turn} of a sequence.
     */
    Flux<T> applyInTurn(Flux<? extends T> source, PermitSubscriber.Turn turn) {
        return new PermitFlux<>(source, semaphore, permits, turn);
    }

    @Override
    public String toString() {
        return "PermitOperator[" + permits + " of " + semaphore.name() + "]";
    }

    private static final class PermitMono<T> extends MonoOperator<T, T> {
        private final Semaphore semaphore;
        private final long permits;

        PermitMono(Mono<? extends T> source, Semaphore semaphore, long permits) {
            super(source);
            this.semaphore = semaphore;
            this.permits = permits;
        }

        @Override
        public void subscribe(CoreSubscriber<? super T> actual) {
            PermitSubscriber<T> subscriber = new PermitSubscriber<>(actual, source, true);
            actual.onSubscribe(subscriber);
            subscriber.start(semaphore, permits);
        }

        @SuppressWarnings("rawtypes") // Scannable declares it so

        @Override
        public Object scanUnsafe(Attr key) {
            return key == Attr.RUN_STYLE ? Attr.RunStyle.ASYNC : super.scanUnsafe(key);
        }
    }

    private static final class PermitFlux<T> extends FluxOperator<T, T> {
        private final Semaphore semaphore;
        private final long permits;
        private final PermitSubscriber.Turn turn; // null: ask at once

        PermitFlux(Flux<? extends T> source, Semaphore semaphore, long permits, PermitSubscriber.Turn turn) {
            super(source);
            this.semaphore = semaphore;
            this.permits = permits;
            this.turn = turn;
        }

        @Override
        public void subscribe(CoreSubscriber<? super T> actual) {
            PermitSubscriber<T> subscriber = new PermitSubscriber<>(actual, source, false, turn);
            actual.onSubscribe(subscriber);
            subscriber.start(semaphore, permits);
        }

        @SuppressWarnings("rawtypes") // Scannable declares it so

        @Override
        public Object scanUnsafe(Attr key) {
            return key == Attr.RUN_STYLE ? Attr.RunStyle.ASYNC : super.scanUnsafe(key);
        }
    }
}
