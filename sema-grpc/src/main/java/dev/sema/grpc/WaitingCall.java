package dev.sema.grpc;

import dev.sema.Permit;
import dev.sema.Semaphore;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;

/**
 * The listener of a server call that may wait for its permits: it acquires them without a thread, starts the
 * handler once they are granted, keeps the listener events that arrive before that and delivers them in order,
 * then forwards every event; it gives the permits back when the call ends.
 */
final class WaitingCall<ReqT, RespT> extends ServerCall.Listener<ReqT> {
    private enum State {
        /** Acquiring (the key's permit, then the semaphore's). */
        WAITING,
        /** Granted; the handler not started yet. */
        GRANTED,
        /** The handler's {@code startCall} runs, or the kept events are being delivered. */
        STARTING,
        /** Every event goes straight to {@link #delegate}. */
        STARTED,
        /** Refused, or ended before it started, or started and ended: nothing held. */
        ENDED
    }

    private final SemaServerInterceptor interceptor;
    private final ServerCall<ReqT, RespT> call;
    private final Metadata headers;
    private final ServerCallHandler<ReqT, RespT> next;
    private final Context context;
    private final Semaphore keySemaphore;
    private final Semaphore semaphore;
    private final long permits;
    private final long startNanos = System.nanoTime();

    /* Implementation overview
     *
     * Invariants:
     * I1: every permit granted to this call is either in keyPermit/permit (while GRANTED, STARTING, STARTED) or
     *     given back; a grant that arrives when the state is no longer WAITING is given back at once.
     * I2: the handler's listener sees the events in the order gRPC delivered them, one at a time: events before
     *     STARTED are kept in `pending` and delivered by the thread that started the handler, which sets STARTED
     *     (and publishes `delegate`) only when `pending` is empty; later events go straight to `delegate` on
     *     gRPC's serialized call executor.
     * I3: the permits are given back once: by whoever moves the state to ENDED, or by the last event
     *     (onComplete/onCancel) forwarded to a started handler.
     *
     * `this` guards every field below but `delegate`, which is written under it and read without it once set
     * (volatile). No callback runs while it is held.
     */
    private State state = State.WAITING;
    private CompletableFuture<Permit> acquiring;
    private Permit keyPermit;
    private Permit permit;
    private List<Consumer<ServerCall.Listener<ReqT>>> pending = new ArrayList<>();
    private volatile ServerCall.Listener<ReqT> delegate;

    WaitingCall(SemaServerInterceptor interceptor, ServerCall<ReqT, RespT> call, Metadata headers,
            ServerCallHandler<ReqT, RespT> next, Semaphore keySemaphore, Semaphore semaphore, long permits) {
        this.interceptor = interceptor;
        this.call = call;
        this.headers = headers;
        this.next = next;
        this.context = Context.current();
        this.keySemaphore = keySemaphore;
        this.semaphore = semaphore;
        this.permits = permits;
    }

    /** Starts acquiring: the key's permit first, if any. */
    void acquire() {
        if (keySemaphore != null) {
            step(keySemaphore, interceptor.maxWait(), true);
        } else {
            step(semaphore, interceptor.maxWait(), false);
        }
    }

    private void step(Semaphore s, Duration timeout, boolean isKey) {
        CompletableFuture<Permit> f;
        try {
            f = s.acquireAsync(permits, timeout);
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        boolean withdrawn;
        synchronized (this) {
            withdrawn = state != State.WAITING;
            if (!withdrawn) {
                acquiring = f;
            }
        }
        if (withdrawn) {
            f.cancel(false); // keeps I1: a grant that raced with it reaches stepDone, which gives it back
        }
        f.whenComplete((p, e) -> stepDone(s, isKey, p, e));
    }

    private void stepDone(Semaphore s, boolean isKey, Permit p, Throwable failure) {
        Permit giveBack = null;
        Permit keyBack = null;
        boolean refuse = false;
        boolean granted = false;
        boolean nextStep = false;
        synchronized (this) {
            if (state != State.WAITING) {
                giveBack = p; // keeps I1: granted after the call ended
            } else {
                acquiring = null;
                if (failure != null) {
                    state = State.ENDED;
                    pending = null;
                    keyBack = keyPermit; // keeps I1: the key's permit goes back when the second acquire fails
                    keyPermit = null;
                    refuse = true;
                } else if (isKey) {
                    keyPermit = p;
                    nextStep = semaphore != null;
                    granted = !nextStep;
                } else {
                    permit = p;
                    granted = true;
                }
                if (granted) {
                    state = State.GRANTED;
                }
            }
        }
        if (giveBack != null) {
            giveBack.close();
        }
        if (refuse) {
            SemaServerInterceptor.release(null, keyBack);
            interceptor.refused(call, s, failure, Duration.ofNanos(System.nanoTime() - startNanos));
        } else if (nextStep) {
            step(semaphore, Refusals.remaining(interceptor.maxWait(), startNanos), false);
        } else if (granted) {
            Executor executor = interceptor.executor();
            if (executor == null) {
                begin();
            } else {
                try {
                    executor.execute(this::begin);
                } catch (RejectedExecutionException e) {
                    if (end()) {
                        interceptor.refused(call, s, e, null);
                    }
                }
            }
        }
    }

    /** Starts the handler, then delivers the events kept meanwhile. */
    private void begin() {
        synchronized (this) {
            if (state != State.GRANTED) {
                return; // ended meanwhile; its permits are back (I3)
            }
            state = State.STARTING;
        }
        Context previous = context.attach();
        try {
            ServerCall.Listener<ReqT> listener;
            try {
                listener = next.startCall(call, headers);
            } catch (RuntimeException | Error e) {
                end();
                call.close(Status.fromThrowable(e), new Metadata());
                if (e instanceof Error error) {
                    throw error;
                }
                return;
            }
            List<Consumer<ServerCall.Listener<ReqT>>> batch = new ArrayList<>();
            while (true) {
                synchronized (this) {
                    if (pending.isEmpty()) {
                        pending = null;
                        delegate = listener; // keeps I2: published only once nothing is kept
                        state = State.STARTED;
                        break;
                    }
                    List<Consumer<ServerCall.Listener<ReqT>>> t = batch;
                    batch = pending;
                    pending = t;
                }
                for (Consumer<ServerCall.Listener<ReqT>> event : batch) {
                    event.accept(listener);
                }
                batch.clear();
            }
        } finally {
            context.detach(previous);
        }
    }

    /**
     * Ends a call whose handler has not started, or whose {@code startCall} failed: withdraws its acquire or gives
     * back its permits.
     *
     * @return whether this call ended it
     */
    private boolean end() {
        Taken taken;
        synchronized (this) {
            if (state == State.ENDED || state == State.STARTED) {
                return false;
            }
            taken = takeLocked();
        }
        taken.giveBack();
        return true;
    }

    /** Moves to ENDED and takes what the call holds or awaits, to be given back outside the lock (I3). */
    private Taken takeLocked() {
        Taken taken = new Taken(acquiring, permit, keyPermit);
        state = State.ENDED;
        pending = null;
        acquiring = null;
        permit = null;
        keyPermit = null;
        return taken;
    }

    /** What an ended call gives back. */
    private record Taken(CompletableFuture<Permit> acquiring, Permit permit, Permit keyPermit) {
        void giveBack() {
            if (acquiring != null) {
                acquiring.cancel(false); // withdraws the request (I1: a grant that raced with it goes back in stepDone)
            }
            SemaServerInterceptor.release(permit, keyPermit);
        }
    }

    /** Gives back the permits of a started call (I3). */
    private void releaseStarted() {
        Taken taken;
        synchronized (this) {
            taken = takeLocked();
        }
        taken.giveBack();
    }

    private void dispatch(Consumer<ServerCall.Listener<ReqT>> event) {
        ServerCall.Listener<ReqT> listener = delegate;
        if (listener == null) {
            synchronized (this) {
                listener = delegate;
                if (listener == null) {
                    if (pending != null) {
                        pending.add(event); // keeps I2
                    }
                    return; // ENDED before it started: nobody to tell
                }
            }
        }
        event.accept(listener);
    }

    /** The call's last event: the handler hears of it if started; the permits go back. */
    private void last(Consumer<ServerCall.Listener<ReqT>> event) {
        Consumer<ServerCall.Listener<ReqT>> thenRelease = l -> {
            try {
                event.accept(l);
            } finally {
                releaseStarted();
            }
        };
        ServerCall.Listener<ReqT> listener;
        Taken taken = null;
        synchronized (this) {
            listener = delegate;
            if (listener == null) {
                if (state == State.STARTING) {
                    pending.add(thenRelease); // keeps I2; delivered once startCall has returned
                    return;
                }
                if (state == State.ENDED) {
                    return;
                }
                taken = takeLocked(); // WAITING or GRANTED: the client left before the handler started
            }
        }
        if (taken != null) {
            taken.giveBack();
        } else {
            thenRelease.accept(listener);
        }
    }

    @Override
    public void onMessage(ReqT message) {
        dispatch(l -> l.onMessage(message));
    }

    @Override
    public void onHalfClose() {
        dispatch(ServerCall.Listener::onHalfClose);
    }

    @Override
    public void onReady() {
        dispatch(ServerCall.Listener::onReady);
    }

    @Override
    public void onCancel() {
        last(ServerCall.Listener::onCancel);
    }

    @Override
    public void onComplete() {
        last(ServerCall.Listener::onComplete);
    }
}
