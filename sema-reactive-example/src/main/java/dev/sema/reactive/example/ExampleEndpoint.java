package dev.sema.reactive.example;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.IntSupplier;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.stereotype.Component;

/**
 * {@code /actuator/example}: the gRPC server's port, the requests each endpoint ran at once ({@link InFlight}, the
 * peak set back by each read) and the blocking calls BlockHound saw ({@link BlockingCalls}).
 */
@Component
@Endpoint(id = "example")
class ExampleEndpoint {
    private final InFlight quotes = new InFlight();
    private final InFlight reports = new InFlight();
    private final InFlight grpc = new InFlight();
    private volatile IntSupplier grpcPort = () -> -1;

    InFlight quotes() {
        return quotes;
    }

    InFlight reports() {
        return reports;
    }

    InFlight grpc() {
        return grpc;
    }

    void grpcPort(IntSupplier port) {
        this.grpcPort = port;
    }

    @ReadOperation
    Map<String, Object> read() {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("grpcPort", grpcPort.getAsInt());
        answer.put("quotes", quotes.readAndReset());
        answer.put("reports", reports.readAndReset());
        answer.put("grpc", grpc.readAndReset());
        answer.put("blockhound", BlockingCalls.installed());
        answer.put("blockingCalls", BlockingCalls.count());
        answer.put("firstBlockingCalls", BlockingCalls.first());
        return answer;
    }
}
