package dev.sema.grpc;

import static dev.sema.grpc.Fixture.awaitAllBack;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.common.util.concurrent.ListenableFuture;
import dev.sema.Semaphore;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Both interceptors over a real HTTP/2 transport: Netty on an ephemeral loopback port. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NettyServerTest {
    @Test
    void bothInterceptorsOverNetty() throws Exception {
        Semaphore api = Semaphore.builder().name("api").permits(4).build();
        Semaphore client = Semaphore.builder().name("client").permits(8).build();
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        EchoService service = new EchoService(timer);
        InFlight inFlight = new InFlight();
        Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .addService(ServerInterceptors.intercept(service.definition(), inFlight,
                        SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(20)).build()))
                .build()
                .start();
        ManagedChannel managed = Grpc.newChannelBuilderForAddress("localhost", server.getPort(),
                InsecureChannelCredentials.create()).build();
        try {
            Channel channel = ClientInterceptors.intercept(managed,
                    SemaClientInterceptor.builder(client).maxWait(Duration.ofSeconds(20)).build());
            List<ListenableFuture<String>> calls = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                calls.add(ClientCalls.futureUnaryCall(channel.newCall(EchoService.UNARY, CallOptions.DEFAULT),
                        "sleep:3"));
            }
            for (ListenableFuture<String> c : calls) {
                assertThat(c.get(30, TimeUnit.SECONDS)).isEqualTo("slept");
            }
            assertThat(inFlight.max.get()).isBetween(1, 4);
            awaitAllBack(api);
            awaitAllBack(client);

            // a refusal crosses the wire with its pushback trailer
            Server refusing = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                    .addService(ServerInterceptors.intercept(service.definition(),
                            SemaServerInterceptor.builder(Semaphore.builder().name("full").permits(0).maxPermits(1)
                                    .build()).build()))
                    .build()
                    .start();
            ManagedChannel toRefusing = Grpc.newChannelBuilderForAddress("localhost", refusing.getPort(),
                    InsecureChannelCredentials.create()).build();
            try {
                StatusRuntimeException shed = catchThrowableOfType(StatusRuntimeException.class,
                        () -> ClientCalls.blockingUnaryCall(toRefusing, EchoService.UNARY, CallOptions.DEFAULT,
                                "echo:x"));
                assertThat(shed.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(shed.getStatus().getDescription()).contains("semaphore 'full'");
                assertThat(Status.trailersFromThrowable(shed).get(SemaServerInterceptor.RETRY_PUSHBACK))
                        .isEqualTo("1000");
            } finally {
                toRefusing.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                refusing.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        } finally {
            managed.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            timer.shutdownNow();
        }
    }
}
