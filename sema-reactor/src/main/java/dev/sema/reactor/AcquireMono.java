package dev.sema.reactor;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;

/**
 * {@link SemaReactor#acquire(Semaphore, long)}: each subscription asks {@link Semaphore#acquireAsync} and emits
 * the permit once it is both granted and requested.
 */
final class AcquireMono extends Mono<Permit> implements Scannable {
    private final Semaphore semaphore;
    private final long permits;
    private final Duration timeout; // null: wait as long as it takes

    AcquireMono(Semaphore semaphore, long permits, Duration timeout) {
        this.semaphore = semaphore;
        this.permits = permits;
        this.timeout = timeout;
    }

    @Override
    public void subscribe(CoreSubscriber<? super Permit> actual) {
        AcquireSubscription subscription = new AcquireSubscription(actual);
        actual.onSubscribe(subscription);
        subscription.start(semaphore, permits, timeout);
    }

    @SuppressWarnings("rawtypes") // Scannable declares it so

    @Override
    public Object scanUnsafe(Attr key) {
        return key == Attr.RUN_STYLE ? Attr.RunStyle.ASYNC : null;
    }

    /**
     * One subscription's request.
     *
     * <p>Implementation overview. {@code state} moves one way through NONE -> REQUESTED -> DONE,
     * NONE -> GRANTED -> DONE, and from any state but DONE to CANCELLED, always by CAS, so that one side
     * decides what becomes of the grant:
     * <ul>
     * <li>A1: a granted permit is either emitted once (the CAS to DONE) or closed once (the grant finds
     *     CANCELLED, or the cancel finds GRANTED); never both, never neither.
     * <li>A2: after the CAS to CANCELLED from NONE or REQUESTED, the future is cancelled: sema-core then withdraws
     *     the request, or gives back a grant that raced with the cancel, or, if the future was already complete,
     *     its completion finds CANCELLED here and closes the permit (A1).
     * </ul>
     * {@code permit} is written before the CAS to GRANTED and read after a CAS out of it, so the volatile
     * state publishes it. {@code future} is written once, before the completion callback is attached.
     */
    static final class AcquireSubscription implements Subscription, Scannable {
        private static final int NONE = 0;
        private static final int REQUESTED = 1;
        private static final int GRANTED = 2;
        private static final int DONE = 3;
        private static final int CANCELLED = 4;

        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(AcquireSubscription.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final CoreSubscriber<? super Permit> actual;
        private volatile int state;
        private Permit permit; // published by state (GRANTED)
        private volatile CompletableFuture<Permit> future;

        AcquireSubscription(CoreSubscriber<? super Permit> actual) {
            this.actual = actual;
        }

        void start(Semaphore semaphore, long permits, Duration timeout) {
            if (state == CANCELLED) {
                return;
            }
            CompletableFuture<Permit> f;
            try {
                f = timeout == null ? semaphore.acquireAsync(permits) : semaphore.acquireAsync(permits, timeout);
            } catch (Throwable t) { // a semaphore in another process that cannot be reached, for one
                fail(t);
                return;
            }
            future = f;
            if (state == CANCELLED) {
                f.cancel(false); // keeps A2: the cancel may have run before `future` was set
            }
            f.whenComplete(this::completed);
        }

        private void completed(Permit granted, Throwable failure) {
            if (failure != null) {
                fail(Requests.unwrap(failure));
                return;
            }
            for (;;) {
                int s = state;
                if (s == REQUESTED) {
                    if (STATE.compareAndSet(this, REQUESTED, DONE)) {
                        emit(granted);
                        return;
                    }
                } else if (s == NONE) {
                    permit = granted;
                    if (STATE.compareAndSet(this, NONE, GRANTED)) {
                        return;
                    }
                    permit = null;
                } else {
                    granted.close(); // keeps A1: the grant raced with the cancel and lost
                    return;
                }
            }
        }

        private void fail(Throwable failure) {
            for (;;) {
                int s = state;
                if (s != NONE && s != REQUESTED) {
                    return; // cancelled: the failure (often the cancel itself) has nobody to go to
                }
                if (STATE.compareAndSet(this, s, DONE)) {
                    actual.onError(failure);
                    return;
                }
            }
        }

        private void emit(Permit granted) {
            actual.onNext(granted);
            actual.onComplete();
        }

        @Override
        public void request(long n) {
            if (!Operators.validate(n)) {
                return;
            }
            for (;;) {
                int s = state;
                if (s == NONE) {
                    if (STATE.compareAndSet(this, NONE, REQUESTED)) {
                        return;
                    }
                } else if (s == GRANTED) {
                    if (STATE.compareAndSet(this, GRANTED, DONE)) {
                        Permit granted = permit;
                        permit = null;
                        emit(granted);
                        return;
                    }
                } else {
                    return;
                }
            }
        }

        @Override
        public void cancel() {
            for (;;) {
                int s = state;
                if (s == DONE || s == CANCELLED) {
                    return;
                }
                if (STATE.compareAndSet(this, s, CANCELLED)) {
                    if (s == GRANTED) {
                        Permit granted = permit;
                        permit = null;
                        granted.close(); // keeps A1: granted, never emitted
                    } else {
                        CompletableFuture<Permit> f = future;
                        if (f != null) {
                            f.cancel(false); // keeps A2
                        }
                    }
                    return;
                }
            }
        }

        @SuppressWarnings("rawtypes") // Scannable declares it so

        @Override
        public Object scanUnsafe(Attr key) {
            if (key == Attr.ACTUAL) {
                return actual;
            }
            if (key == Attr.CANCELLED) {
                return state == CANCELLED;
            }
            if (key == Attr.TERMINATED) {
                return state == DONE;
            }
            if (key == Attr.RUN_STYLE) {
                return Attr.RunStyle.ASYNC;
            }
            return null;
        }
    }
}
