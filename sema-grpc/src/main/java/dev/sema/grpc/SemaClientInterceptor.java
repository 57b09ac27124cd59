package dev.sema.grpc;

import dev.sema.Semaphore;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * A {@link ClientInterceptor} that bounds the calls a client has in flight: each call takes one permit (or its
 * {@link Builder#permits weight}) of a {@link Semaphore} before it starts and gives it back when it closes
 * (API.md §12).
 *
 * {@snippet :
 * Semaphore backend = Semaphore.builder().name("backend").permits(32).build();
 * ManagedChannel channel = ManagedChannelBuilder.forTarget("backend:443")
 *         .intercept(SemaClientInterceptor.builder(backend).maxWait(Duration.ofSeconds(2)).build())
 *         .build();
 * }
 *
 * <h2>Waiting</h2>
 * A call that finds no permit free is deferred, never blocking the thread that starts it: {@code start} returns
 * at once, the messages, {@code request}s and {@code halfClose} sent meanwhile are kept and replayed in order
 * once the permit is granted and the call really starts, and {@code isReady()} is {@code false} until then. The
 * call starts on the thread that granted its permit (normally one ending another call; or Sema's timer).
 *
 * <p>A call waits at most {@link Builder#maxWait} (default: as long as its deadline allows) and never past its
 * deadline (of its {@link CallOptions} or its {@link Context}, the earlier). With no permit by then its listener
 * hears {@code onClose} with {@link io.grpc.Status#UNAVAILABLE}, whose description names the semaphore, or with
 * {@link io.grpc.Status#DEADLINE_EXCEEDED} when the deadline ended the wait; the call never reaches the channel.
 * {@code maxWait(Duration.ZERO)} refuses at once a call that finds no permit free (a {@code tryAcquire} on the
 * caller's thread: for a Redis semaphore, a round trip).
 *
 * <h2>Cancellation</h2>
 * {@code cancel} on a waiting call withdraws its request (a grant that raced with it is given back) and its
 * listener hears {@code onClose} with {@link io.grpc.Status#CANCELLED}. The listener events of a call that never
 * started (refused, cancelled) run on the executor of its {@link CallOptions} if it names one (as the blocking
 * stubs' does), else on the thread that ended the wait: Sema's timer or the thread that cancelled.
 *
 * <h2>Release</h2>
 * A started call gives its permit back exactly once, when it closes, just before its listener hears
 * {@code onClose}, so that a call started from {@code onClose} finds it free.
 *
 * <h2>Memory consistency effects</h2>
 * As for {@link Semaphore}: what happened before a call closed happens-before the start of a call granted the
 * permit it gave back.
 */
public final class SemaClientInterceptor implements ClientInterceptor {
    private static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE / 2);

    private final Semaphore semaphore;
    /** {@code null}: as long as the deadline allows. */
    private final Duration maxWait;
    /** {@code null}: 1 permit per call. */
    private final ToLongFunction<? super MethodDescriptor<?, ?>> permits;

    private SemaClientInterceptor(Builder b) {
        this.semaphore = b.semaphore;
        this.maxWait = b.maxWait;
        this.permits = b.permits;
    }

    /**
     * A builder of an interceptor that limits calls with {@code semaphore}.
     *
     * @param semaphore the semaphore, local or on Redis
     * @return a new builder
     * @throws NullPointerException if {@code semaphore} is {@code null}
     */
    public static Builder builder(Semaphore semaphore) {
        return new Builder(Objects.requireNonNull(semaphore, "semaphore"));
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
            CallOptions callOptions, Channel next) {
        long n = permits == null ? 1 : permits.applyAsLong(method);
        return new LimitedClientCall<>(semaphore, n, maxWait, next.newCall(method, callOptions),
                callOptions.getExecutor(), earlier(callOptions.getDeadline(), Context.current().getDeadline()));
    }

    private static Deadline earlier(Deadline a, Deadline b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : a.minimum(b);
    }

    /** The wait left to a call with {@code deadline} ({@code null}: none), or {@code null} for no bound. */
    static Duration untilDeadline(Deadline deadline) {
        return deadline == null ? null : Duration.ofNanos(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
    }

    @Override
    public String toString() {
        return "SemaClientInterceptor[semaphore=" + semaphore.name() + ", maxWait="
                + (maxWait == null ? "until the deadline" : maxWait) + "]";
    }

    /** Builds a {@link SemaClientInterceptor}. */
    public static final class Builder {
        private final Semaphore semaphore;
        private Duration maxWait;
        private ToLongFunction<? super MethodDescriptor<?, ?>> permits;

        private Builder(Semaphore semaphore) {
            this.semaphore = semaphore;
        }

        /**
         * How long a call may wait for its permit before its listener hears {@code UNAVAILABLE} (default: as long
         * as its deadline allows, without bound if it has none). Zero refuses at once a call that finds no permit
         * free.
         *
         * @param maxWait the longest wait, zero or more
         * @return this builder
         * @throws IllegalArgumentException if {@code maxWait} is negative
         * @throws NullPointerException if {@code maxWait} is {@code null}
         */
        public Builder maxWait(Duration maxWait) {
            if (maxWait.isNegative()) {
                throw new IllegalArgumentException("maxWait must not be negative: " + maxWait);
            }
            this.maxWait = maxWait.compareTo(LONGEST) > 0 ? LONGEST : maxWait;
            return this;
        }

        /**
         * How many permits each call takes (default 1), by its method. A weight the semaphore cannot grant
         * (negative, or above its ceiling) ends the call with {@code UNAVAILABLE} naming the numbers.
         *
         * @param permits the weight of a call to a method
         * @return this builder
         * @throws NullPointerException if {@code permits} is {@code null}
         */
        public Builder permits(ToLongFunction<? super MethodDescriptor<?, ?>> permits) {
            this.permits = Objects.requireNonNull(permits, "permits");
            return this;
        }

        /**
         * Builds the interceptor.
         *
         * @return the interceptor
         */
        public SemaClientInterceptor build() {
            return new SemaClientInterceptor(this);
        }
    }
}
