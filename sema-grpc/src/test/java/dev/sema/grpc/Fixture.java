package dev.sema.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Semaphore;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

/** An in-process server of {@link EchoService} behind a server interceptor, and a channel to it. */
final class Fixture implements AutoCloseable {
    private static int servers;

    final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    final EchoService service = new EchoService(timer);
    private final Server server;
    final ManagedChannel managed;
    /** The channel, behind the client interceptor if one was given. */
    final io.grpc.Channel channel;

    Fixture(ServerInterceptor serverInterceptor, ClientInterceptor clientInterceptor) {
        this(serverInterceptor == null ? UnaryOperator.identity()
                : def -> ServerInterceptors.intercept(def, serverInterceptor), clientInterceptor);
    }

    /** A fixture whose service definition {@code wrap} intercepts. */
    Fixture(UnaryOperator<ServerServiceDefinition> wrap, ClientInterceptor clientInterceptor) {
        String name = "sema-grpc-test-" + next();
        try {
            server = InProcessServerBuilder.forName(name)
                    .addService(wrap.apply(service.definition()))
                    .build()
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        managed = InProcessChannelBuilder.forName(name).build();
        channel = clientInterceptor == null ? managed : ClientInterceptors.intercept(managed, clientInterceptor);
    }

    private static synchronized int next() {
        return ++servers;
    }

    ClientCall<String, String> unaryCall(Metadata headers) {
        return newCall(EchoService.UNARY, CallOptions.DEFAULT, headers);
    }

    ClientCall<String, String> newCall(io.grpc.MethodDescriptor<String, String> method, CallOptions options,
            Metadata headers) {
        io.grpc.Channel c = headers == null ? channel
                : ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
        return c.newCall(method, options);
    }

    String blocking(String request, Metadata headers) {
        return ClientCalls.blockingUnaryCall(
                headers == null ? channel
                        : ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers)),
                EchoService.UNARY, CallOptions.DEFAULT, request);
    }

    com.google.common.util.concurrent.ListenableFuture<String> future(String request, Metadata headers) {
        return ClientCalls.futureUnaryCall(unaryCall(headers), request);
    }

    /** Ends the oldest held call with {@code "done"}, waiting for it to have started. */
    void releaseHeld() throws InterruptedException {
        StreamObserver<String> held = service.held.poll(10, TimeUnit.SECONDS);
        assertThat(held).as("a held call").isNotNull();
        held.onNext("done");
        held.onCompleted();
    }

    static Metadata headers(Metadata.Key<String> key, String value) {
        Metadata m = new Metadata();
        m.put(key, value);
        return m;
    }

    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("waiting for " + what).isNegative();
            Thread.sleep(1);
        }
    }

    /** Waits until every permit of {@code s} is back. */
    static void awaitAllBack(Semaphore s) throws InterruptedException {
        await("every permit of " + s, () -> s.availablePermits() == s.permits());
        assertThat(s.queueLength()).as("waiters of " + s).isZero();
    }

    @Override
    public void close() throws InterruptedException {
        managed.shutdownNow();
        server.shutdownNow();
        managed.awaitTermination(10, TimeUnit.SECONDS);
        server.awaitTermination(10, TimeUnit.SECONDS);
        timer.shutdownNow();
    }
}
