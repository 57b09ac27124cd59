package dev.sema.spring;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * The HTTP status codes of the {@link SemaphoresEndpoint}: 404 for an unknown name (on GET and POST); 400 with
 * {@code {"error": "..."}} for a POST whose {@code permits} is missing, not a whole number, or outside
 * {@code 0..maxPermits}; 503 for a semaphore that Redis cannot be asked about, with the
 * {@code {"kind": "redis", "error": "..."}} entry on GET and {@code {"error": "..."}} naming the semaphore on
 * POST.
 */
@EndpointWebExtension(endpoint = SemaphoresEndpoint.class)
public class SemaphoresEndpointWebExtension {
    private final SemaphoresEndpoint endpoint;

    /**
     * The extension of an endpoint.
     *
     * @param endpoint the endpoint
     */
    public SemaphoresEndpointWebExtension(SemaphoresEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /**
     * One semaphore: its state, 404, or 503 with why it cannot be read.
     *
     * @param name its name
     * @return its state, or 404 or 503
     */
    @ReadOperation
    public WebEndpointResponse<SemaphoresEndpoint.SemaphoreEntry> semaphore(@Selector String name) {
        return switch (endpoint.semaphore(name)) {
            case null -> new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND);
            case SemaphoresEndpoint.UnreadableDescriptor u ->
                    new WebEndpointResponse<>(u, WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
            case SemaphoresEndpoint.SemaphoreDescriptor d -> new WebEndpointResponse<>(d);
            case SemaphoresEndpoint.KeyedDescriptor k -> new WebEndpointResponse<>(k);
        };
    }

    /**
     * Sets a semaphore's limit: its new state, 404 for an unknown name, 400 for a {@code permits} that is
     * missing, not a whole number or out of range, 503 when the semaphore could not be changed.
     *
     * @param name its name
     * @param permits the new limit as the request gave it (nullable, so that a missing one reaches the check
     *     that says what was expected rather than the actuator's own 400)
     * @return the new state, or 404, 400 or 503
     */
    @WriteOperation
    public WebEndpointResponse<Object> setPermits(@Selector String name, @Nullable String permits) {
        SemaphoresEndpoint.SemaphoreEntry entry;
        try {
            entry = endpoint.setPermitsAsRequested(name, permits);
        } catch (InvalidEndpointRequestException e) {
            return new WebEndpointResponse<>(new Error(e.getReason()), WebEndpointResponse.STATUS_BAD_REQUEST);
        } catch (RuntimeException e) {
            return new WebEndpointResponse<>(new Error("semaphore '" + name + "' could not be changed: "
                    + SemaphoreState.describe(e)), WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
        }
        return switch (entry) {
            case null -> new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND);
            case SemaphoresEndpoint.UnreadableDescriptor u -> new WebEndpointResponse<>(new Error("the limit of "
                    + "semaphore '" + name + "' was set to " + permits + ", but its state could not be read just after: "
                    + u.error()), WebEndpointResponse.STATUS_SERVICE_UNAVAILABLE);
            case SemaphoresEndpoint.SemaphoreDescriptor d -> new WebEndpointResponse<>(d);
            case SemaphoresEndpoint.KeyedDescriptor k -> new WebEndpointResponse<>(k); // refused before: a 400
        };
    }

    /**
     * The body of a 400 or of a 503 on POST.
     *
     * @param error what is wrong, naming the semaphore
     */
    public record Error(String error) {
    }
}
