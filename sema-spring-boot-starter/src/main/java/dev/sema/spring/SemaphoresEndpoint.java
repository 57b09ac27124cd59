package dev.sema.spring;

import dev.sema.Semaphore;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;

/**
 * The {@code semaphores} actuator endpoint: every semaphore of the {@link SemaphoreRegistry} with its counts,
 * and a way to change a limit at run time.
 *
 * <pre>
 * GET  /actuator/semaphores       {"semaphores": {"db": {"kind": "local", "permits": 10, "maxPermits": 50,
 *                                  "available": 10, "queued": 0, "closed": false, "fairness": "FIFO"}}}
 * GET  /actuator/semaphores/db    {"kind": "local", "permits": 10, ...}; 404 for an unknown name
 * POST /actuator/semaphores/db    {"permits": 20}: setPermits(20), then the new state; 404 for an unknown
 *                                 name, 400 for a limit outside 0..maxPermits
 * </pre>
 *
 * <p>Over HTTP it must be exposed like any other endpoint
 * ({@code management.endpoints.web.exposure.include=semaphores}); the status codes of unknown names and
 * limits out of range come from {@link SemaphoresEndpointWebExtension}. The counts of a Redis semaphore are
 * read with one round trip, so they belong together; a Redis that cannot be reached fails the request. A
 * limit set here on a Redis semaphore is the fleet's. With an adaptive limit, the limit set here is the
 * new starting point it adjusts from.
 */
@Endpoint(id = "semaphores")
public class SemaphoresEndpoint {
    private final SemaphoreRegistry registry;

    /**
     * The endpoint over a registry.
     *
     * @param registry the semaphores to show
     */
    public SemaphoresEndpoint(SemaphoreRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    /**
     * Every semaphore, in configuration order.
     *
     * @return the semaphores by name
     */
    @ReadOperation
    public SemaphoresDescriptor semaphores() {
        Map<String, SemaphoreDescriptor> all = new LinkedHashMap<>();
        registry.all().forEach((name, s) -> all.put(name, SemaphoreDescriptor.of(s)));
        return new SemaphoresDescriptor(all);
    }

    /**
     * One semaphore.
     *
     * @param name its name
     * @return its state, or {@code null} (404 over HTTP) when there is none of that name
     */
    @ReadOperation
    public SemaphoreDescriptor semaphore(@Selector String name) {
        return registry.find(name).map(SemaphoreDescriptor::of).orElse(null);
    }

    /**
     * Sets a semaphore's limit ({@link Semaphore#setPermits(long)}): never blocks and never revokes held
     * permits; a raised limit serves waiters at once.
     *
     * @param name its name
     * @param permits the new limit, {@code 0..maxPermits}
     * @return its new state, or {@code null} (404 over HTTP) when there is none of that name
     * @throws InvalidEndpointRequestException (400 over HTTP) if {@code permits} is out of range
     */
    @WriteOperation
    public SemaphoreDescriptor setPermits(@Selector String name, long permits) {
        Semaphore s = registry.find(name).orElse(null);
        if (s == null) {
            return null;
        }
        if (permits < 0 || permits > s.maxPermits()) {
            String message = "permits (" + permits + ") must be between 0 and the maxPermits of semaphore '" + name
                    + "' (" + s.maxPermits() + ")";
            throw new InvalidEndpointRequestException(message, message);
        }
        s.setPermits(permits);
        return SemaphoreDescriptor.of(s);
    }

    /**
     * The body of {@code GET /actuator/semaphores}.
     *
     * @param semaphores the semaphores by name, in configuration order
     */
    public record SemaphoresDescriptor(Map<String, SemaphoreDescriptor> semaphores) implements OperationResponseBody {
    }

    /**
     * One semaphore's state.
     *
     * @param kind {@code local} or {@code redis}
     * @param permits the limit
     * @param maxPermits the ceiling
     * @param available {@code permits} less what is held (negative after the limit was lowered below it)
     * @param queued the requests waiting now
     * @param closed whether it is closed
     * @param fairness {@code FIFO} or {@code BARGING}
     */
    public record SemaphoreDescriptor(String kind, long permits, long maxPermits, long available, int queued,
            boolean closed, String fairness) implements OperationResponseBody {

        static SemaphoreDescriptor of(Semaphore s) {
            SemaphoreState st = SemaphoreState.read(s);
            return new SemaphoreDescriptor(st.kind(), st.permits(), st.maxPermits(), st.available(), st.queued(),
                    st.closed(), s.fairness().name());
        }
    }
}
