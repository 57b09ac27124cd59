package dev.sema.spring;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.reactor.SemaReactor;
import java.io.Serial;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Permits in a reactive chain, for {@code @WithPermits} on {@code Mono} and {@code Flux} methods
 * ({@link ReactiveWithPermits}) and the WebFlux {@code sema.web} filter ({@link SemaphoreWebFilter}): acquired through
 * sema-reactor when the chain is subscribed, without blocking a thread, and held until the guarded work completes,
 * fails or is cancelled, given back once (before the terminal signal goes on downstream). A refusal is told apart from
 * every other failure by its wrapper, {@link Refused}, which the caller of {@link #acquire} unwraps where it decides
 * what a refusal becomes (the fallback, a 503), so that the guarded work's own failures are never taken for one.
 *
 * <p>Loaded only when reactor-core and sema-reactor are on the class path.
 */
final class ReactorPermits {
    private ReactorPermits() {
    }

    /**
     * {@code permits} of {@code semaphore} for each subscription, waiting as {@code timeout} says (as
     * {@link Refusals#acquire}): {@code null}, as long as it takes; zero, a {@code tryAcquire} (a refusal is
     * {@code UNAVAILABLE}, never a timeout, and so never a drop for an adaptive limit; on a Redis semaphore, one round
     * trip made on a bounded-elastic thread, never on the subscribing one); else at most that long. A refusal fails the
     * {@code Mono} with {@link Refused} ({@link Refusals#of}: no permit in time, a closed semaphore, too many keys, Redis
     * unreachable); any other failure as it is.
     */
    static Mono<Permit> acquire(Semaphore semaphore, long permits, Duration timeout) {
        return Mono.defer(() -> {
            long start = System.nanoTime();
            Mono<Permit> acquire;
            if (timeout == null) {
                acquire = SemaReactor.acquire(semaphore, permits);
            } else if (!timeout.isZero()) {
                acquire = SemaReactor.acquire(semaphore, permits, timeout);
            } else {
                acquire = Mono.fromCallable(() -> semaphore.tryAcquire(permits).orElseThrow(() -> new Refused(
                        Refusals.refused(semaphore.name(), permits, start, null))));
                if (SemaphoreState.isRedis(semaphore)) {
                    acquire = acquire.subscribeOn(Schedulers.boundedElastic());
                }
                // A permit taken while the subscription was being cancelled goes back.
                acquire = acquire.doOnDiscard(Permit.class, Permit::close);
            }
            return acquire.onErrorMap(e -> !(e instanceof Refused), e -> {
                PermitUnavailableException refusal = Refusals.of(semaphore.name(), permits, start, e);
                return refusal == null ? e : new Refused(refusal);
            });
        });
    }

    /**
     * Subscribes {@code body}'s publisher once {@code acquire} has emitted its permit, and holds the permit until that
     * publisher completes, fails or is cancelled: {@code Mono.usingWhen}, which gives the permit back before passing
     * on the terminal signal (and a {@code Mono}'s value). A refusal of {@code acquire} fails the result as it came.
     *
     * @param failed told of the body's failures (not of a refusal)
     */
    static <T> Mono<T> holding(Mono<Permit> acquire, Function<Permit, Mono<T>> body, Consumer<Throwable> failed) {
        return Mono.usingWhen(acquire, body, ReactorPermits::close, (permit, error) -> {
            failed.accept(error);
            return close(permit);
        }, ReactorPermits::close);
    }

    /** As {@link #holding(Mono, Function, Consumer)}, for a {@code Flux}. */
    static <T> Flux<T> holdingMany(Mono<Permit> acquire, Function<Permit, Publisher<T>> body,
            Consumer<Throwable> failed) {
        return Flux.usingWhen(acquire, body, ReactorPermits::close, (permit, error) -> {
            failed.accept(error);
            return close(permit);
        }, ReactorPermits::close);
    }

    private static Mono<Void> close(Permit permit) {
        return Mono.fromRunnable(permit::close);
    }

    /**
     * A refusal on its way through a reactive chain ({@link #refusal()}), unwrapped where the chain decides what it
     * becomes; never seen outside the starter. Without a stack trace: the refusal it carries has one.
     */
    static final class Refused extends RuntimeException {
        @Serial
        private static final long serialVersionUID = 1L;

        private final PermitUnavailableException refusal;

        Refused(PermitUnavailableException refusal) {
            super(refusal.getMessage(), refusal, false, false);
            this.refusal = refusal;
        }

        PermitUnavailableException refusal() {
            return refusal;
        }
    }
}
