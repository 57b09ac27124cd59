package dev.sema.spring.example;

import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.stereotype.Component;

/**
 * {@code /actuator/inflight}: GET shows each endpoint's requests running now, the most at once and the highest limit
 * of its semaphore since the last reset ({@link InFlight}); DELETE resets them. The demo's spring part reads it to
 * check the limits from inside the application.
 */
@Component
@Endpoint(id = "inflight")
public class InFlightEndpoint {
    private final InFlight inFlight;

    InFlightEndpoint(InFlight inFlight) {
        this.inFlight = inFlight;
    }

    /** @return each endpoint's counts */
    @ReadOperation
    public Map<String, InFlight.Snapshot> counts() {
        return inFlight.snapshot();
    }

    /** @return each endpoint's counts after the reset */
    @DeleteOperation
    public Map<String, InFlight.Snapshot> reset() {
        inFlight.reset();
        return inFlight.snapshot();
    }
}
