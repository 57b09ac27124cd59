package dev.sema.reactive.example;

import dev.sema.grpc.SemaServerInterceptor;
import dev.sema.spring.SemaphoreRegistry;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;

/**
 * A gRPC server on Netty whose calls run on its event loop ({@code directExecutor}), behind
 * {@link SemaServerInterceptor} on the registry's {@code grpc} semaphore: a call finding no permit is closed at once
 * with {@code UNAVAILABLE} and {@code grpc-retry-pushback-ms}, its handler never started.
 *
 * <p>The service is {@link Quotes}: {@code Get} answers the quote of the symbol it is sent after
 * {@code example.quote-time}, on a timer, not a thread; {@code Block} sleeps a millisecond on the event loop, on
 * purpose, for the demo's check that BlockHound is watching.
 */
@Component
class QuoteGrpcServer implements SmartLifecycle {
    private final Server server;
    private final InFlight inFlight;
    private final Duration quoteTime;
    private volatile boolean running;

    QuoteGrpcServer(SemaphoreRegistry registry, ExampleEndpoint example,
            @Value("${example.grpc.port:0}") int port, @Value("${example.quote-time}") Duration quoteTime) {
        this.inFlight = example.grpc();
        this.quoteTime = quoteTime;
        ServerServiceDefinition service = ServerServiceDefinition.builder(Quotes.SERVICE)
                .addMethod(Quotes.GET, ServerCalls.asyncUnaryCall(this::get))
                .addMethod(Quotes.BLOCK, ServerCalls.asyncUnaryCall(this::block))
                .build();
        this.server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
                .directExecutor()
                .addService(ServerInterceptors.intercept(service,
                        SemaServerInterceptor.builder(registry.get("grpc")).build()))
                .build();
        example.grpcPort(this::port);
    }

    private void get(String symbol, StreamObserver<String> response) {
        inFlight.enter();
        Mono.delay(quoteTime).subscribe(tick -> {
            inFlight.exit();
            response.onNext(symbol + " " + (100 + Math.floorMod(symbol.hashCode(), 1_000) / 100.0));
            response.onCompleted();
        });
    }

    private void block(String request, StreamObserver<String> response) {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        response.onNext(Thread.currentThread().getName());
        response.onCompleted();
    }

    int port() {
        return running ? server.getPort() : -1;
    }

    @Override
    public void start() {
        try {
            server.start();
        } catch (IOException e) {
            throw new UncheckedIOException("the gRPC server could not start", e);
        }
        running = true;
    }

    @Override
    public void stop() {
        running = false;
        server.shutdown();
        try {
            if (!server.awaitTermination(10, TimeUnit.SECONDS)) {
                server.shutdownNow();
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
