package dev.sema.grpc;

import dev.sema.Permit;
import dev.sema.Semaphore;
import io.grpc.Attributes;
import io.grpc.ClientCall;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * A client call that starts the real one only once its permit is granted: what the caller sends before that is
 * kept and replayed in order; the permit goes back when the real call closes.
 */
final class LimitedClientCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private enum State {
        /** {@code start} not called yet. */
        NEW,
        /** Acquiring. */
        WAITING,
        /** Granted: the real call is being started and the kept calls replayed. */
        STARTING,
        /** Every call goes straight to {@link #real}. */
        STARTED,
        /** Refused or cancelled before it started: nothing held, nothing sent. */
        ENDED
    }

    private final Semaphore semaphore;
    private final long permits;
    private final Duration maxWait;
    private final ClientCall<ReqT, RespT> real;
    private final Executor callExecutor;
    private final Deadline deadline;

    /* Implementation overview
     *
     * I1: the permit granted to this call is either held by the listener that wraps the real call's (and given
     *     back at its onClose) or given back at once (granted after a cancel).
     * I2: the real call sees the caller's calls in the caller's order, one at a time: before STARTED they are
     *     kept in `pending` and replayed by the thread that started the real call, which sets `passThrough` only
     *     once `pending` is empty.
     * `this` guards every field below but `passThrough` (volatile, written under it). No callback runs while it
     * is held.
     */
    private State state = State.NEW;
    private CompletableFuture<Permit> acquiring;
    private Listener<RespT> listener;
    private Metadata headers;
    private List<Consumer<ClientCall<ReqT, RespT>>> pending = new ArrayList<>();
    private volatile boolean passThrough;

    LimitedClientCall(Semaphore semaphore, long permits, Duration maxWait, ClientCall<ReqT, RespT> real,
            Executor callExecutor, Deadline deadline) {
        this.semaphore = semaphore;
        this.permits = permits;
        this.maxWait = maxWait;
        this.real = real;
        this.callExecutor = callExecutor;
        this.deadline = deadline;
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata headers) {
        Duration byDeadline = SemaClientInterceptor.untilDeadline(deadline);
        Duration timeout = maxWait;
        boolean deadlineBound = false;
        if (byDeadline != null && (timeout == null || byDeadline.compareTo(timeout) < 0)) {
            timeout = byDeadline;
            deadlineBound = true;
        }
        CompletableFuture<Permit> f;
        try {
            if (timeout == null) {
                f = semaphore.acquireAsync(permits);
            } else if (timeout.isZero() && !deadlineBound) {
                // A try, so that a refusal is rejected(UNAVAILABLE) for listeners and metrics, never a timeout.
                f = semaphore.tryAcquire(permits).map(CompletableFuture::completedFuture).orElse(null);
            } else {
                f = semaphore.acquireAsync(permits, timeout);
            }
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        boolean cancelled;
        synchronized (this) {
            cancelled = state != State.NEW;
            if (!cancelled) {
                state = f == null ? State.ENDED : State.WAITING;
                listener = responseListener;
                this.headers = headers;
                acquiring = f;
                if (f == null) {
                    pending = null;
                }
            }
        }
        if (f == null) {
            if (!cancelled) {
                close(responseListener, Status.UNAVAILABLE.withDescription(Refusals.describe(semaphore, null, null)));
            }
            return;
        }
        if (cancelled) {
            f.cancel(false); // cancelled before start: nothing to start
        }
        Duration waitBound = timeout;
        boolean byTheDeadline = deadlineBound;
        long startNanos = System.nanoTime();
        f.whenComplete((p, e) -> granted(p, e, waitBound, byTheDeadline, startNanos));
    }

    private void granted(Permit p, Throwable failure, Duration waitBound, boolean deadlineBound, long startNanos) {
        Listener<RespT> l;
        Metadata h;
        synchronized (this) {
            if (state != State.WAITING) {
                if (p != null) {
                    p.close(); // keeps I1: granted after the call was cancelled
                }
                return;
            }
            acquiring = null;
            l = listener;
            h = headers;
            state = failure == null ? State.STARTING : State.ENDED;
            if (failure != null) {
                pending = null;
            }
        }
        if (failure != null) {
            Throwable cause = Refusals.unwrap(failure);
            Status status;
            if (deadlineBound && cause instanceof TimeoutException) {
                status = Status.DEADLINE_EXCEEDED.withDescription("deadline exceeded after "
                        + Refusals.millis(Duration.ofNanos(System.nanoTime() - startNanos))
                        + " waiting for a permit of semaphore '" + semaphore.name() + "'");
            } else {
                status = Status.UNAVAILABLE.withDescription(Refusals.describe(semaphore, cause, waitBound));
            }
            close(l, cause == null ? status : status.withCause(cause));
            return;
        }
        try {
            real.start(new Releasing<>(l, p), h);
        } catch (RuntimeException | Error e) {
            p.close();
            synchronized (this) {
                state = State.ENDED;
                pending = null;
            }
            close(l, Status.fromThrowable(e));
            if (e instanceof Error error) {
                throw error;
            }
            return;
        }
        List<Consumer<ClientCall<ReqT, RespT>>> batch = new ArrayList<>();
        while (true) {
            synchronized (this) {
                if (pending.isEmpty()) {
                    pending = null;
                    state = State.STARTED;
                    passThrough = true; // keeps I2: only once nothing is kept
                    break;
                }
                List<Consumer<ClientCall<ReqT, RespT>>> t = batch;
                batch = pending;
                pending = t;
            }
            for (Consumer<ClientCall<ReqT, RespT>> c : batch) {
                c.accept(real);
            }
            batch.clear();
        }
    }

    /** Tells the listener of a call that never started how it ended. */
    private void close(Listener<RespT> l, Status status) {
        Runnable onClose = () -> l.onClose(status, new Metadata());
        if (callExecutor != null) {
            callExecutor.execute(onClose);
        } else {
            onClose.run();
        }
    }

    private void dispatch(Consumer<ClientCall<ReqT, RespT>> c) {
        if (!passThrough) {
            synchronized (this) {
                if (!passThrough) {
                    if (pending != null) {
                        pending.add(c); // keeps I2
                    }
                    return; // ended before it started: dropped
                }
            }
        }
        c.accept(real);
    }

    @Override
    public void request(int numMessages) {
        dispatch(c -> c.request(numMessages));
    }

    @Override
    public void sendMessage(ReqT message) {
        dispatch(c -> c.sendMessage(message));
    }

    @Override
    public void halfClose() {
        dispatch(ClientCall::halfClose);
    }

    @Override
    public void setMessageCompression(boolean enabled) {
        dispatch(c -> c.setMessageCompression(enabled));
    }

    @Override
    public void cancel(String message, Throwable cause) {
        if (!passThrough) {
            CompletableFuture<Permit> f = null;
            Listener<RespT> l = null;
            boolean endedHere = false;
            synchronized (this) {
                if (state == State.STARTING) {
                    pending.add(c -> c.cancel(message, cause)); // keeps I2
                    return;
                }
                if (state == State.ENDED) {
                    return;
                }
                if (state != State.STARTED) { // NEW or WAITING
                    endedHere = true;
                    f = acquiring;
                    l = listener;
                    acquiring = null;
                    pending = null;
                    state = State.ENDED;
                }
            }
            if (endedHere) {
                if (f != null) {
                    f.cancel(false); // withdraws the request; I1: a grant that raced with it goes back in granted
                }
                if (l != null) {
                    Status status = Status.CANCELLED.withDescription(message != null ? message
                            : "cancelled while waiting for a permit of semaphore '" + semaphore.name() + "'");
                    close(l, cause == null ? status : status.withCause(cause));
                }
                return;
            }
        }
        real.cancel(message, cause);
    }

    @Override
    public boolean isReady() {
        return passThrough && real.isReady();
    }

    @Override
    public Attributes getAttributes() {
        return real.getAttributes();
    }

    @Override
    public String toString() {
        return "LimitedClientCall[" + semaphore.name() + ", " + real + "]";
    }

    /** The real call's listener: gives the permit back as the call closes, before the caller hears of it. */
    private static final class Releasing<RespT>
            extends ForwardingClientCallListener.SimpleForwardingClientCallListener<RespT> {
        private final Permit permit;

        Releasing(Listener<RespT> delegate, Permit permit) {
            super(delegate);
            this.permit = permit;
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
            permit.close(); // once: gRPC closes a call once
            super.onClose(status, trailers);
        }
    }
}
