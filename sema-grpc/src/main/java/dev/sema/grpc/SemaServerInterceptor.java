package dev.sema.grpc;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.function.ToLongFunction;

/**
 * A {@link ServerInterceptor} that lets a call in only with a permit of a {@link Semaphore}, held from before the
 * handler starts until the call ends, streaming calls included (API.md §12).
 *
 * {@snippet :
 * Semaphore api = Semaphore.builder().name("api").permits(100)
 *         .partition("interactive", 0.8)
 *         .partition("batch", 0.2)
 *         .build();
 * ServerInterceptor limit = SemaServerInterceptor.builder(api)
 *         .partitionBy(Metadata.Key.of("x-traffic-class", Metadata.ASCII_STRING_MARSHALLER))
 *         .build();
 * Server server = ServerBuilder.forPort(8080)
 *         .addService(ServerInterceptors.intercept(service, limit))
 *         .build();
 * }
 *
 * <h2>Admission</h2>
 * Each call takes one permit (or its {@link Builder#permits weight}) of the semaphore (or of the partition its
 * metadata names, see {@link Builder#partitionBy}) before its handler is started. By default a call that finds
 * no permit free is refused at once: the interceptor sheds load rather than queueing it. With {@link Builder#maxWait} a call may
 * wait that long; it then waits without a thread, its handler not yet started, and the listener events that
 * reach it meanwhile are kept and delivered in order once it starts. A call started after a wait starts on the
 * thread that granted its permit (normally one ending another call, on the server's executor; or Sema's timer),
 * or on the {@link Builder#executor executor} given; either way with the call's {@link io.grpc.Context}.
 * Without {@code maxWait} the acquire is a {@code tryAcquire} on the thread that runs {@code interceptCall}
 * (gRPC's executor): no wait for a local semaphore, but a round trip for a Redis one; with {@code maxWait}
 * it is an {@code acquireAsync} on every semaphore.
 *
 * <h2>Refusal</h2>
 * A call that gets no permit (none free, none within {@code maxWait}, the semaphore closed, a keyed family at
 * its {@code maxKeys}, or any other failure of the acquire) is closed with {@link Status#UNAVAILABLE}, whose
 * description names the semaphore and the reason, and the trailer {@code grpc-retry-pushback-ms}
 * ({@link #RETRY_PUSHBACK}, {@link Builder#retryPushback}, default 1 s) that gRPC's retry policy reads. Its
 * handler never starts.
 *
 * <h2>Keys</h2>
 * With {@link Builder#keyedBy}, a call also needs a permit of its key's semaphore in a {@link KeyedSemaphore},
 * the key being the value of a metadata entry: it takes the key's first, so that a client at its own limit is
 * refused without holding a permit that every client shares, then the semaphore's, the two waits together
 * bounded by {@code maxWait}; a refusal of the second gives the first back at once. A call without the entry, or
 * with a key the family refuses, is closed with {@link Status#INVALID_ARGUMENT} naming what is wrong: it is
 * never limited under a shared key. {@link #builder(KeyedSemaphore, Metadata.Key)} limits by the key alone.
 *
 * <h2>Release</h2>
 * The permits are held until the call ends, that is until its listener hears {@code onComplete} or
 * {@code onCancel}: after the server closed it with any status, the client cancelled it, its deadline passed,
 * or a handler's exception ended it. They are given back exactly once, after the handler's listener has
 * returned from that last event; the semaphore's first, then the key's. If the handler's {@code startCall}
 * throws, they are given back at once.
 *
 * <h2>Cancellation</h2>
 * A call cancelled by its client (or by its deadline) while it waits withdraws its request: nothing stays held
 * and its handler never starts. A grant that raced with the cancellation is given back.
 *
 * <h2>Memory consistency effects</h2>
 * As for {@link Semaphore}: what a call's handler did before the call ended happens-before the start of a call
 * granted the permits it gave back.
 */
public final class SemaServerInterceptor implements ServerInterceptor {
    /** The trailer of a refused call: how long its client should wait before it retries, in milliseconds. */
    public static final Metadata.Key<String> RETRY_PUSHBACK =
            Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

    private static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE / 2);

    /** The semaphore; {@code null}: limited by keys alone. */
    private final Semaphore semaphore;
    private final Metadata.Key<String> partitionKey;
    private final Map<String, Semaphore> partitions;
    private final KeyedSemaphore<String> keyed;
    private final Metadata.Key<String> key;
    private final Duration maxWait;
    private final String pushback;
    private final Executor executor;
    /** {@code null}: 1 permit per call. */
    private final ToLongFunction<? super ServerCall<?, ?>> permits;

    private SemaServerInterceptor(Builder b) {
        this.semaphore = b.semaphore;
        this.partitionKey = b.partitionKey;
        Map<String, Semaphore> views = new HashMap<>();
        if (b.partitionKey != null) {
            for (String name : b.semaphore.partitionNames()) {
                views.put(name, b.semaphore.partition(name));
            }
        }
        this.partitions = Map.copyOf(views);
        this.keyed = b.keyed;
        this.key = b.key;
        this.maxWait = b.maxWait;
        this.pushback = Long.toString(b.retryPushback.toMillis());
        this.executor = b.executor;
        this.permits = b.permits;
    }

    /**
     * A builder of an interceptor that limits calls with {@code semaphore}.
     *
     * @param semaphore the semaphore, local or on Redis, partitioned or not
     * @return a new builder
     * @throws NullPointerException if {@code semaphore} is {@code null}
     */
    public static Builder builder(Semaphore semaphore) {
        return new Builder(Objects.requireNonNull(semaphore, "semaphore"), null, null);
    }

    /**
     * A builder of an interceptor that limits calls by key alone: each call takes a permit of the semaphore of
     * its key in {@code keyed} (a family with a {@code parent} takes the parent's too), the key being the value
     * of the metadata entry {@code key}.
     *
     * @param keyed the family
     * @param key the metadata entry whose value is the key
     * @return a new builder
     * @throws NullPointerException if an argument is {@code null}
     */
    public static Builder builder(KeyedSemaphore<String> keyed, Metadata.Key<String> key) {
        return new Builder(null, Objects.requireNonNull(keyed, "keyed"), Objects.requireNonNull(key, "key"));
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
            ServerCallHandler<ReqT, RespT> next) {
        Semaphore keySemaphore = null;
        if (keyed != null) {
            String k = headers.get(key);
            if (k == null) {
                return closed(call, Status.INVALID_ARGUMENT.withDescription("metadata '" + key.name()
                        + "' is missing: keyed semaphore '" + keyed.name() + "' limits calls by it"), false);
            }
            try {
                keySemaphore = keyed.get(k);
            } catch (IllegalArgumentException badKey) {
                return closed(call, Status.INVALID_ARGUMENT.withDescription("keyed semaphore '" + keyed.name()
                        + "' refuses the key '" + k + "' of metadata '" + key.name() + "': " + badKey.getMessage()),
                        false);
            }
        }
        Semaphore s = semaphore;
        if (partitionKey != null) {
            String name = headers.get(partitionKey);
            if (name != null) {
                s = partitions.getOrDefault(name, semaphore);
            }
        }
        long n = permits == null ? 1 : permits.applyAsLong(call);
        if (maxWait.isZero()) {
            return tryNow(call, headers, next, keySemaphore, s, n);
        }
        WaitingCall<ReqT, RespT> waiting = new WaitingCall<>(this, call, headers, next, keySemaphore, s, n);
        waiting.acquire();
        return waiting;
    }

    /** The default: a try of each semaphore, the call refused at once if either has no permit free. */
    private <ReqT, RespT> ServerCall.Listener<ReqT> tryNow(ServerCall<ReqT, RespT> call, Metadata headers,
            ServerCallHandler<ReqT, RespT> next, Semaphore keySemaphore, Semaphore s, long n) {
        Permit keyPermit = null;
        if (keySemaphore != null) {
            try {
                Optional<Permit> p = keySemaphore.tryAcquire(n);
                if (p.isEmpty()) {
                    return refused(call, keySemaphore, null, null);
                }
                keyPermit = p.get();
            } catch (RuntimeException e) {
                return refused(call, keySemaphore, e, null);
            }
        }
        Permit permit = null;
        if (s != null) {
            try {
                Optional<Permit> p = s.tryAcquire(n);
                if (p.isEmpty()) {
                    release(null, keyPermit);
                    return refused(call, s, null, null);
                }
                permit = p.get();
            } catch (RuntimeException e) {
                release(null, keyPermit);
                return refused(call, s, e, null);
            }
        }
        ServerCall.Listener<ReqT> listener;
        try {
            listener = next.startCall(call, headers);
        } catch (RuntimeException | Error e) {
            release(permit, keyPermit);
            throw e;
        }
        return new Releasing<>(listener, permit, keyPermit);
    }

    /** Closes a call that got no permit of {@code s}: UNAVAILABLE with the retry pushback. */
    <ReqT> ServerCall.Listener<ReqT> refused(ServerCall<ReqT, ?> call, Semaphore s, Throwable cause,
            Duration waited) {
        Status status = Status.UNAVAILABLE.withDescription(Refusals.describe(s, cause, waited));
        return closed(call, cause == null ? status : status.withCause(Refusals.unwrap(cause)), true);
    }

    private <ReqT> ServerCall.Listener<ReqT> closed(ServerCall<ReqT, ?> call, Status status, boolean pushback) {
        Metadata trailers = new Metadata();
        if (pushback) {
            trailers.put(RETRY_PUSHBACK, this.pushback);
        }
        call.close(status, trailers);
        return new ServerCall.Listener<>() {
        };
    }

    Duration maxWait() {
        return maxWait;
    }

    Executor executor() {
        return executor;
    }

    /** Gives back a call's permits, the semaphore's first; each may be {@code null}. */
    static void release(Permit permit, Permit keyPermit) {
        try {
            if (permit != null) {
                permit.close();
            }
        } finally {
            if (keyPermit != null) {
                keyPermit.close();
            }
        }
    }

    @Override
    public String toString() {
        return "SemaServerInterceptor[" + (semaphore == null ? "" : "semaphore=" + semaphore.name())
                + (partitionKey == null ? "" : ", partitionBy=" + partitionKey.name())
                + (keyed == null ? "" : (semaphore == null ? "" : ", ") + "keyed=" + keyed.name() + " by "
                        + key.name())
                + ", maxWait=" + maxWait + ", retryPushback=" + pushback + " ms]";
    }

    /** The listener of a call started at once: forwards every event and releases when the call ends. */
    private static final class Releasing<ReqT> extends ServerCall.Listener<ReqT> {
        private final ServerCall.Listener<ReqT> delegate;
        private final Permit permit;
        private final Permit keyPermit;

        Releasing(ServerCall.Listener<ReqT> delegate, Permit permit, Permit keyPermit) {
            this.delegate = delegate;
            this.permit = permit;
            this.keyPermit = keyPermit;
        }

        @Override
        public void onMessage(ReqT message) {
            delegate.onMessage(message);
        }

        @Override
        public void onHalfClose() {
            delegate.onHalfClose();
        }

        @Override
        public void onReady() {
            delegate.onReady();
        }

        @Override
        public void onCancel() {
            try {
                delegate.onCancel();
            } finally {
                release(permit, keyPermit); // gRPC ends a call with one of onCancel and onComplete, once
            }
        }

        @Override
        public void onComplete() {
            try {
                delegate.onComplete();
            } finally {
                release(permit, keyPermit);
            }
        }
    }

    /** Builds a {@link SemaServerInterceptor}. */
    public static final class Builder {
        private final Semaphore semaphore;
        private Metadata.Key<String> partitionKey;
        private KeyedSemaphore<String> keyed;
        private Metadata.Key<String> key;
        private Duration maxWait = Duration.ZERO;
        private Duration retryPushback = Duration.ofSeconds(1);
        private Executor executor;
        private ToLongFunction<? super ServerCall<?, ?>> permits;

        private Builder(Semaphore semaphore, KeyedSemaphore<String> keyed, Metadata.Key<String> key) {
            this.semaphore = semaphore;
            this.keyed = keyed;
            this.key = key;
        }

        /**
         * Takes each call's permit from the partition of the semaphore (API.md §11a) that the value of the metadata
         * entry {@code key} names. A call without the entry, or whose value names no partition, takes a permit of
         * no partition (the semaphore's own, below every partition's priority), as {@code sema.web} does: an
         * unknown name gains a client nothing.
         *
         * @param key the metadata entry naming the partition
         * @return this builder
         * @throws NullPointerException if {@code key} is {@code null}
         * @throws IllegalStateException if this builder has no semaphore (it limits by key alone)
         * @throws IllegalArgumentException if the semaphore has no partitions
         */
        public Builder partitionBy(Metadata.Key<String> key) {
            Objects.requireNonNull(key, "key");
            if (semaphore == null) {
                throw new IllegalStateException("partitionBy needs a semaphore; this builder limits by the keys of '"
                        + keyed.name() + "' alone");
            }
            if (semaphore.partitionNames().isEmpty()) {
                throw new IllegalArgumentException("semaphore '" + semaphore.name()
                        + "' has no partitions for metadata '" + key.name() + "' to name");
            }
            this.partitionKey = key;
            return this;
        }

        /**
         * Makes each call also take a permit of its key's semaphore in {@code keyed}, before the semaphore's; the
         * key is the value of the metadata entry {@code key}. A call without it is refused with
         * {@link Status#INVALID_ARGUMENT}.
         *
         * @param keyed the family
         * @param key the metadata entry whose value is the key
         * @return this builder
         * @throws NullPointerException if an argument is {@code null}
         */
        public Builder keyedBy(KeyedSemaphore<String> keyed, Metadata.Key<String> key) {
            this.keyed = Objects.requireNonNull(keyed, "keyed");
            this.key = Objects.requireNonNull(key, "key");
            return this;
        }

        /**
         * How long a call may wait for its permits (both, with {@link #keyedBy}) before it is refused. Default
         * zero: a call that finds no permit free is refused at once (load shedding; the acquire is a
         * {@code tryAcquire}, reported to listeners as {@code rejected(UNAVAILABLE)}, never as a timeout).
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
         * The value of the trailer {@code grpc-retry-pushback-ms} of a refused call (default 1 s), in whole
         * milliseconds.
         *
         * @param retryPushback how long a client should wait before it retries, zero or more
         * @return this builder
         * @throws IllegalArgumentException if {@code retryPushback} is negative
         * @throws NullPointerException if {@code retryPushback} is {@code null}
         */
        public Builder retryPushback(Duration retryPushback) {
            if (retryPushback.isNegative()) {
                throw new IllegalArgumentException("retryPushback must not be negative: " + retryPushback);
            }
            this.retryPushback = retryPushback.compareTo(LONGEST) > 0 ? LONGEST : retryPushback;
            return this;
        }

        /**
         * Where a call that waited for its permits is started (default: on the thread that granted them). Its
         * handler's {@code startCall} and the listener events kept while it waited run there.
         *
         * @param executor the executor
         * @return this builder
         * @throws NullPointerException if {@code executor} is {@code null}
         */
        public Builder executor(Executor executor) {
            this.executor = Objects.requireNonNull(executor, "executor");
            return this;
        }

        /**
         * How many permits each call takes (default 1), of the semaphore and of its key's alike: the weight of a
         * call, read from its method ({@link ServerCall#getMethodDescriptor()}), authority or attributes. A
         * weight the semaphore cannot grant (negative, or above its ceiling) refuses the call like any failed
         * acquire, with {@code UNAVAILABLE} naming the numbers.
         *
         * @param permits the weight of a call
         * @return this builder
         * @throws NullPointerException if {@code permits} is {@code null}
         */
        public Builder permits(ToLongFunction<? super ServerCall<?, ?>> permits) {
            this.permits = Objects.requireNonNull(permits, "permits");
            return this;
        }

        /**
         * Builds the interceptor.
         *
         * @return the interceptor
         */
        public SemaServerInterceptor build() {
            return new SemaServerInterceptor(this);
        }
    }
}
