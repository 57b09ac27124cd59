package dev.sema.grpc;

import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The tests' service, defined by hand (no protoc): a unary method and a bidirectional streaming one, with String
 * messages. The unary request says what the handler does: {@code "echo:x"} answers {@code x}; {@code "hold"}
 * keeps the call open until the test completes it ({@link #held}); {@code "fail"} ends it with INTERNAL;
 * {@code "throw"} throws from the handler; {@code "sleep:n"} answers after n ms (without a thread). The
 * streaming method echoes every message and completes when the client does. It counts the handlers running.
 */
final class EchoService {
    static final MethodDescriptor.Marshaller<String> STRING = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    static final MethodDescriptor<String, String> UNARY = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("sema.test.Echo/Unary")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    static final MethodDescriptor<String, String> BIDI = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
            .setFullMethodName("sema.test.Echo/Bidi")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    /** Handlers started. */
    final AtomicInteger started = new AtomicInteger();
    /** Handlers running now, and the most at once. */
    final AtomicInteger active = new AtomicInteger();
    final AtomicInteger maxActive = new AtomicInteger();
    /** The response observers of "hold" calls, in the order they started. */
    final BlockingQueue<StreamObserver<String>> held = new LinkedBlockingQueue<>();
    /** Where "sleep:n" waits: a timer, or, for handlers on an event loop, that loop itself. */
    private final Supplier<? extends ScheduledExecutorService> timer;

    EchoService(ScheduledExecutorService timer) {
        this(() -> timer);
    }

    EchoService(Supplier<? extends ScheduledExecutorService> timer) {
        this.timer = timer;
    }

    ServerServiceDefinition definition() {
        return ServerServiceDefinition.builder("sema.test.Echo")
                .addMethod(UNARY, ServerCalls.asyncUnaryCall(this::unary))
                .addMethod(BIDI, ServerCalls.asyncBidiStreamingCall(this::bidi))
                .build();
    }

    private void enter() {
        started.incrementAndGet();
        int now = active.incrementAndGet();
        maxActive.accumulateAndGet(now, Math::max);
    }

    private void unary(String request, StreamObserver<String> response) {
        enter();
        if (request.startsWith("echo:")) {
            active.decrementAndGet();
            response.onNext(request.substring(5));
            response.onCompleted();
        } else if (request.equals("hold")) {
            held.add(new Leaving(response));
        } else if (request.equals("fail")) {
            active.decrementAndGet();
            response.onError(Status.INTERNAL.withDescription("failed on purpose").asRuntimeException());
        } else if (request.equals("throw")) {
            active.decrementAndGet();
            throw new IllegalStateException("thrown on purpose");
        } else if (request.startsWith("sleep:")) {
            // A cancelled call (by the client, or at its deadline) ends the handler's work at once: the pending
            // answer is only a timer by then, and the interceptor gives the permit back right after onCancel.
            ServerCallStreamObserver<String> call = (ServerCallStreamObserver<String>) response;
            AtomicBoolean left = new AtomicBoolean();
            Runnable leave = () -> {
                if (left.compareAndSet(false, true)) {
                    active.decrementAndGet();
                }
            };
            call.setOnCancelHandler(leave);
            timer.get().schedule(() -> {
                leave.run();
                if (!call.isCancelled()) {
                    response.onNext("slept");
                    response.onCompleted();
                }
            }, Long.parseLong(request.substring(6)), TimeUnit.MILLISECONDS);
        } else {
            active.decrementAndGet();
            response.onError(Status.INVALID_ARGUMENT.withDescription(request).asRuntimeException());
        }
    }

    private StreamObserver<String> bidi(StreamObserver<String> response) {
        enter();
        return new StreamObserver<>() {
            @Override
            public void onNext(String value) {
                response.onNext(value);
            }

            @Override
            public void onError(Throwable t) {
                active.decrementAndGet();
            }

            @Override
            public void onCompleted() {
                active.decrementAndGet();
                response.onCompleted();
            }
        };
    }

    /** A held call's observer, which counts the handler as gone once the test ends the call. */
    private final class Leaving implements StreamObserver<String> {
        private final StreamObserver<String> delegate;

        Leaving(StreamObserver<String> delegate) {
            this.delegate = delegate;
        }

        @Override
        public void onNext(String value) {
            delegate.onNext(value);
        }

        @Override
        public void onError(Throwable t) {
            active.decrementAndGet();
            delegate.onError(t);
        }

        @Override
        public void onCompleted() {
            active.decrementAndGet();
            delegate.onCompleted();
        }
    }
}
