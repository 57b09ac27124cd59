package dev.sema.reactor;

import dev.sema.Permit;
import dev.sema.Semaphore;
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
 * {@code hold} moves WAITING -> HOLDING (the grant) and from either to RELEASED, by CAS or getAndSet:
 * <ul>
 * <li>P1: a granted permit is closed exactly once: by {@link #release()} if it finds HOLDING, or by the grant
 *     itself if it finds RELEASED (the subscription ended before the grant arrived).
 * <li>P2: after a cancel the future is cancelled, so a request still queued is withdrawn (and a grant that
 *     raced with it is given back by sema-core, or delivered here and closed by P1).
 * <li>P3: the source is subscribed only while HOLDING, so its work never runs without the permits.
 * <li>P4: the permits go back before the terminal signal (for a Mono, before its value) reaches downstream,
 *     so whoever sees the end also finds the permits free.
 * </ul>
 * {@code permit} is written before the CAS to HOLDING and read after the getAndSet that leaves it.
 *
 * @param <T> the element type
 */
final class PermitSubscriber<T> extends Operators.DeferredSubscription implements CoreSubscriber<T> {
    private static final int WAITING = 0;
    private static final int HOLDING = 1;
    private static final int RELEASED = 2;

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
    private volatile int hold;
    private Permit permit; // published by hold (HOLDING)
    private volatile CompletableFuture<Permit> future;
    private volatile boolean done;

    PermitSubscriber(CoreSubscriber<? super T> actual, Publisher<? extends T> source, boolean mono) {
        this.actual = actual;
        this.source = source;
        this.mono = mono;
    }

    /** Called after {@code actual.onSubscribe(this)}: asks for the permits. */
    void start(Semaphore semaphore, long permits) {
        if (isCancelled()) {
            return;
        }
        CompletableFuture<Permit> f;
        try {
            f = semaphore.acquireAsync(permits);
        } catch (Throwable t) { // a semaphore in another process that cannot be reached, for one
            terminate(t);
            return;
        }
        future = f;
        if (isCancelled()) {
            f.cancel(false); // keeps P2: the cancel may have run before `future` was set
        }
        f.whenComplete(this::granted);
    }

    private void granted(Permit granted, Throwable failure) {
        if (failure != null) {
            if (!isCancelled()) {
                terminate(Requests.unwrap(failure));
            }
            return;
        }
        permit = granted;
        if (!HOLD.compareAndSet(this, WAITING, HOLDING)) {
            permit = null;
            granted.close(); // keeps P1: the subscription ended before the grant
            return;
        }
        try {
            source.subscribe(this); // keeps P3
        } catch (Throwable t) {
            onError(Operators.onOperatorError(t, currentContext()));
        }
    }

    /** Gives the permits back if held, once (P1); a later grant finds RELEASED and closes its own. */
    private void release() {
        if ((int) HOLD.getAndSet(this, RELEASED) == HOLDING) {
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
        release();
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
