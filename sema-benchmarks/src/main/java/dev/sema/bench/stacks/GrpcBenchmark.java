package dev.sema.bench.stacks;

import com.netflix.concurrency.limits.grpc.server.ConcurrencyLimitServerInterceptor;
import com.netflix.concurrency.limits.grpc.server.GrpcServerLimiterBuilder;
import com.netflix.concurrency.limits.limit.FixedLimit;
import dev.sema.Semaphore;
import dev.sema.grpc.SemaServerInterceptor;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * Benchmark 16c, what a server interceptor that limits concurrent calls adds to one unary gRPC call, in process
 * (grpc's in-process transport, {@code directExecutor()} on server and channel, so the whole call runs on the
 * benchmark's thread and the interceptor's work is a visible part of it): one thread makes blocking unary calls
 * of a few bytes through
 * <ul>
 *   <li>{@code none}: no interceptor, the baseline;
 *   <li>{@code sema}: {@code SemaServerInterceptor.builder(semaphore).build()} on a Sema {@code Semaphore} of 64
 *       (sema-grpc: a {@code tryAcquire} when the call starts, the permit closed when it closes);
 *   <li>{@code netflix}: Netflix concurrency-limits' {@code ConcurrencyLimitServerInterceptor} on a
 *       {@code GrpcServerLimiterBuilder} limiter with a {@code FixedLimit} of 64 (its acquire when the call
 *       starts, its listener's {@code onSuccess} when it closes).
 * </ul>
 * The limit is never reached (one call at a time), so every call is served: {@code unaryCall}'s score is the
 * cost per call, and the interceptor's share is its difference from {@code none}. That share is a small part of a
 * call, so {@code interceptorAlone} also measures it without the transport: the server side of one unary call as
 * the transport drives it ({@code interceptCall}, then the listener's {@code onMessage}, {@code onHalfClose}, on
 * which the service sends its reply and closes the call, and {@code onComplete}), on a stub call, through the
 * same interceptor. The target: {@code sema} no slower than {@code netflix}. Each iteration checks that every
 * permit came back.
 *
 * <p>Run: {@code bin/benchmarks stacks} (section 16), or
 * {@code java -jar sema-benchmarks/target/benchmarks.jar GrpcBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class GrpcBenchmark {
    static final int LIMIT = 64;

    /** A unary method whose messages are bytes as they are: no codec in the measured path beyond a copy. */
    static final MethodDescriptor<byte[], byte[]> ECHO = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName("bench.Echo", "Echo"))
            .setRequestMarshaller(new Bytes())
            .setResponseMarshaller(new Bytes())
            .build();

    @Param({"none", "sema", "netflix"})
    public String interceptor;

    private Semaphore semaphore;
    private ServerInterceptor limiter;
    private final StubCall stubCall = new StubCall();
    private final ServerCallHandler<byte[], byte[]> echoHandler = (call, headers) -> new EchoListener(call);
    private final Metadata headers = new Metadata();
    private Server server;
    private ManagedChannel channel;
    private final byte[] request = {1, 2, 3, 4, 5, 6, 7, 8};
    private long calls;

    /**
     * An in-process server with the echo service behind the interceptor, and a channel to it.
     *
     * @throws IOException never: the in-process server binds no port
     */
    @Setup(Level.Trial)
    public void setUp() throws IOException {
        semaphore = Semaphore.create(LIMIT);
        ServerServiceDefinition service = ServerServiceDefinition.builder("bench.Echo")
                .addMethod(ECHO, ServerCalls.asyncUnaryCall((req, out) -> {
                    out.onNext(req);
                    out.onCompleted();
                }))
                .build();
        limiter = switch (interceptor) {
            case "none" -> null;
            case "sema" -> SemaServerInterceptor.builder(semaphore).build();
            case "netflix" -> ConcurrencyLimitServerInterceptor.newBuilder(
                    new GrpcServerLimiterBuilder().limit(FixedLimit.of(LIMIT)).build()).build();
            default -> throw new IllegalArgumentException("interceptor " + interceptor);
        };
        String name = "grpc-bench-" + interceptor + "-" + System.nanoTime();
        server = InProcessServerBuilder.forName(name).directExecutor()
                .addService(limiter == null ? service : ServerInterceptors.intercept(service, limiter))
                .build().start();
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    }

    /** Fails the run if a call went unanswered or a permit did not come back. */
    @TearDown(Level.Iteration)
    public void check() {
        if (semaphore.availablePermits() != LIMIT) {
            throw new IllegalStateException("permits missing: " + semaphore.availablePermits() + " of " + LIMIT);
        }
    }

    /**
     * Closes the channel and the server.
     *
     * @throws InterruptedException if interrupted while they shut down
     */
    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        if (calls == 0) {
            throw new IllegalStateException("no call was made");
        }
    }

    /**
     * One blocking unary call.
     *
     * @return the reply
     */
    @Benchmark
    public byte[] unaryCall() {
        byte[] reply = ClientCalls.blockingUnaryCall(channel, ECHO, CallOptions.DEFAULT, request);
        if (reply.length != request.length) {
            throw new IllegalStateException("reply of " + reply.length + " bytes");
        }
        calls++;
        return reply;
    }

    /**
     * The server side of one unary call without the transport: the interceptor, then what the transport calls on
     * the listener it returned, with the reply sent and the call closed on half-close as a unary service does.
     *
     * @return the listener's call's last message, so that nothing is left unused
     */
    @Benchmark
    public Object interceptorAlone() {
        ServerCall.Listener<byte[]> listener = limiter == null
                ? echoHandler.startCall(stubCall, headers)
                : limiter.interceptCall(stubCall, headers, echoHandler);
        listener.onMessage(request);
        listener.onHalfClose();
        listener.onComplete();
        if (stubCall.closed != Status.Code.OK) {
            throw new IllegalStateException("call closed with " + stubCall.closed);
        }
        calls++;
        return stubCall.last;
    }

    /** A unary service's listener: replies with the request and closes the call on half-close. */
    static final class EchoListener extends ServerCall.Listener<byte[]> {
        private final ServerCall<byte[], byte[]> call;
        private byte[] message;

        EchoListener(ServerCall<byte[], byte[]> call) {
            this.call = call;
            call.request(1);
        }

        @Override
        public void onMessage(byte[] m) {
            message = m;
        }

        @Override
        public void onHalfClose() {
            call.sendHeaders(new Metadata());
            call.sendMessage(message);
            call.close(Status.OK, new Metadata());
        }
    }

    /** A server call that keeps what it was sent, in place of the transport's. */
    static final class StubCall extends ServerCall<byte[], byte[]> {
        Object last;
        Status.Code closed;

        @Override
        public void request(int numMessages) {
        }

        @Override
        public void sendHeaders(Metadata headers) {
            closed = null;
        }

        @Override
        public void sendMessage(byte[] message) {
            last = message;
        }

        @Override
        public void close(Status status, Metadata trailers) {
            closed = status.getCode();
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public MethodDescriptor<byte[], byte[]> getMethodDescriptor() {
            return ECHO;
        }
    }

    /** byte[] as it is. */
    static final class Bytes implements MethodDescriptor.Marshaller<byte[]> {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
