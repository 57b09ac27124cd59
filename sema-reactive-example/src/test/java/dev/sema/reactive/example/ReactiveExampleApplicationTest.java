package dev.sema.reactive.example;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The reactive example application as {@code application.yml} configures it, on Netty over real HTTP and gRPC: each
 * endpoint answers, the semaphores are those the file names, and the gRPC server listens where
 * {@code /actuator/example} says. The demo's reactive part runs it under load.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class ReactiveExampleApplicationTest {
    @LocalServerPort
    int port;

    @Autowired
    QuoteGrpcServer grpc;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theFilteredEndpointAnswersAQuote() throws Exception {
        HttpResponse<String> r = get("/api/quotes/ACME");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"symbol\":\"ACME\"");
    }

    @Test
    void theWithPermitsMonoMethodRendersAReport() throws Exception {
        HttpResponse<String> r = get("/reports/7");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"id\":7", "\"stale\":false");
    }

    @Test
    void theGrpcServerAnswersThroughTheInterceptor() throws Exception {
        assertThat(get("/actuator/example").body()).contains("\"grpcPort\":" + grpc.port(), "\"blockhound\":false");
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", grpc.port()).usePlaintext().build();
        try {
            String quote = ClientCalls.blockingUnaryCall(channel, Quotes.GET,
                    CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), "ACME");
            assertThat(quote).startsWith("ACME ");
        } finally {
            channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void theActuatorShowsTheThreeSemaphores() throws Exception {
        HttpResponse<String> r = get("/actuator/semaphores");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("\"inbound\"", "\"reports\"", "\"grpc\"");
    }
}
