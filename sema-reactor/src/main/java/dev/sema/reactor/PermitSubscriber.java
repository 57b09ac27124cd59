package dev.sema.reactor;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.internal.FastPath;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * One subscription of a {@link PermitOperator}: asks for the permits, subscribes the source once they are
 * granted, and gives them back once, however the subscription ends.
 *
 * <p>Implementation overview. Downstream talks to this object from the start; the source's subscription is set
 * into it later ({@link Operators.DeferredSubscription} keeps the demand and the cancel until then).
 * {@code hold} moves WAITING -> SUBSCRIBING (the grant; the source is being subscribed) -> HOLDING (its
 * {@code subscribe} returned), and from any of them to RELEASED:
 * <ul>
 * <li>P1: a granted permit is closed exactly once, by whoever moves {@code hold} from SUBSCRIBING or HOLDING
 *     to RELEASED ({@link #release()}, a getAndSet), or by the grant itself if it finds RELEASED (the
 *     subscription ended before the grant arrived).
 * <li>P2: after a cancel the future is cancelled, so a request still queued is withdrawn (and a grant that
 *     raced with it is given back by sema-core, or delivered here and closed by P1).
 * <li>P3: the source is subscribed only after the grant, and a cancel does not give the permits back while
 *     the source is being subscribed (SUBSCRIBING): the granting thread does, once {@code subscribe} returned,
 *     so that the source has been told to cancel before its permits are free. A cancel sets the cancelled flag
 *     and then reads {@code hold}; the granting thread sets {@code hold} and then reads the flag: one of them
 *     releases (both may; P1 makes that once).
 * <li>P4: the permits go back before the terminal signal (for a Mono, before its value) reaches downstream,
 *     so whoever sees the end also finds the permits free.
 * </ul>
 * {@code permit} is written before the CAS out of WAITING and read after the getAndSet that leaves it.
 *
 * @param <T> the element type
 */
final class PermitSubscriber<T> extends Operators.DeferredSubscription implements CoreSubscriber<T> {
    private static final int WAITING = 0;
    private static final int SUBSCRIBING = 1;
    private static final int HOLDING = 2;
    private static final int RELEASED = 3;

    private static final VarHandle HOLD;

    static {
        try {
            HOLD = MethodHandles.lookup().findVarHandle(PermitSubscriber.class, "hold", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final CoreSubscriber<? super T> actual;
    private final Publisher<? extends T> source;
    private final boolean mono;
    private final Turn turn;
    private volatile int hold;
    private Permit permit; // published by hold (HOLDING)
    private volatile CompletableFuture<Permit> future;
    private volatile boolean done;

    PermitSubscriber(CoreSubscriber<? super T> actual, Publisher<? extends T> source, boolean mono) {
        this(actual, source, mono, null);
    }

    /**
     * @param turn where this request stands in a sequence of requests (mapWeighted's, in source order), or
     *        null to ask at once
     */
    PermitSubscriber(CoreSubscriber<? super T> actual, Publisher<? extends T> source, boolean mono, Turn turn) {
        this.actual = actual;
        this.source = source;
        this.mono = mono;
        this.turn = turn;
    }

    /**
     * A request's place in a sequence: it asks for its permits once the request before it is decided (granted,
     * failed or withdrawn), and {@code decided} tells the request after it. So one sequence's requests are
     * granted in order, whatever the semaphore's fairness, and at most one of them is queued at a time.
     */
    record Turn(CompletableFuture<?> previous, CompletableFuture<Void> decided) {
    }

    /** Called after {@code actual.onSubscribe(this)}: asks for the permits, once it is this request's turn. */
    void start(Semaphore semaphore, long permits) {
        if (turn == null) {
            ask(semaphore, permits);
        } else {
            turn.previous().whenComplete((ignored, failure) -> ask(semaphore, permits));
        }
    }

    private void ask(Semaphore semaphore, long permits) {
        if (isCancelled()) {
            passTurn();
            return;
        }
        Permit now;
        CompletableFuture<Permit> f = null;
        try {
            // The uncontended path first: permits free and nobody queued, granted with no future and no callback
            // (sema-core's FastPath; when it does not apply it did nothing and reported nothing).
            now = semaphore instanceof FastPath fast ? fast.tryFastPath(permits) : null;
            if (now == null) {
                f = semaphore.acquireAsync(permits);
            }
        } catch (Throwable t) { // a semaphore in another process that cannot be reached, for one
            passTurn();
            terminate(t);
            return;
        }
        if (now != null) {
            granted(now, null); // keeps P1-P3 as a grant through the future does
            return;
        }
        future = f;
        if (isCancelled()) {
            f.cancel(false); // keeps P2: the cancel may have run before `future` was set
        }
        f.whenComplete(this::granted);
    }

    /** This request is decided: the next one of its sequence may ask. */
    private void passTurn() {
        if (turn != null) {
            turn.decided().complete(null);
        }
    }

    private void granted(Permit granted, Throwable failure) {
        passTurn();
        if (failure != null) {
            if (!isCancelled()) {
                terminate(Requests.unwrap(failure));
            }
            return;
        }
        permit = granted;
        if (!HOLD.compareAndSet(this, WAITING, SUBSCRIBING)) {
            permit = null;
            granted.close(); // keeps P1: the subscription ended before the grant
            return;
        }
        if (isCancelled()) {
            release(); // keeps P3: cancelled meanwhile, the source is not subscribed at all
            return;
        }
        try {
            source.subscribe(this); // keeps P3
        } catch (Throwable t) {
            onError(Operators.onOperatorError(t, currentContext()));
        }
        if (!HOLD.compareAndSet(this, SUBSCRIBING, HOLDING) || isCancelled()) {
            release(); // keeps P3: a cancel during subscribe left the permits to this thread (or already ended)
        }
    }

    /** Gives the permits back if held, once (P1); a later grant finds RELEASED and closes its own. */
    private void release() {
        int was = (int) HOLD.getAndSet(this, RELEASED);
        if (was == SUBSCRIBING || was == HOLDING) {
            Permit held = permit;
            permit = null;
            held.close();
        }
    }

    private void terminate(Throwable failure) {
        if (done) {
            Operators.onErrorDropped(failure, currentContext());
            return;
        }
        done = true;
        release();
        actual.onError(failure);
    }

    @Override
    public void onSubscribe(Subscription s) {
        set(s); // cancels s if downstream cancelled meanwhile, else passes on the demand kept so far
    }

    @Override
    public void onNext(T t) {
        if (done || isCancelled()) {
            Operators.onDiscard(t, currentContext());
            return;
        }
        if (mono) {
            // A Mono's value is its end: keeps P4. Its onComplete follows and finds the permits gone.
            release();
        }
        actual.onNext(t);
    }

    @Override
    public void onError(Throwable t) {
        if (isCancelled()) {
            return;
        }
        terminate(t);
    }

    @Override
    public void onComplete() {
        if (done || isCancelled()) {
            return;
        }
        done = true;
        release(); // keeps P4
        actual.onComplete();
    }

    @Override
    public void cancel() {
        super.cancel(); // the source first, so that it stops before the permits are free
        CompletableFuture<Permit> f = future;
        if (f != null) {
            f.cancel(false); // keeps P2; nothing once granted
        }
        for (;;) {
            int h = hold;
            if (h == SUBSCRIBING || h == RELEASED) {
                return; // keeps P3: the granting thread releases once subscribe returns
            }
            if (h == HOLDING) {
                release();
                return;
            }
            if (HOLD.compareAndSet(this, WAITING, RELEASED)) {
                return; // keeps P1: the grant, if it comes, finds RELEASED and closes its permit
            }
        }
    }

    @Override
    public Context currentContext() {
        return actual.currentContext();
    }

    @SuppressWarnings("rawtypes") // Scannable declares it so

    @Override
    public Object scanUnsafe(Attr key) {
        if (key == Attr.ACTUAL) {
            return actual;
        }
        if (key == Attr.TERMINATED) {
            return done;
        }
        if (key == Attr.RUN_STYLE) {
            return Attr.RunStyle.ASYNC;
        }
        return super.scanUnsafe(key);
    }
}
