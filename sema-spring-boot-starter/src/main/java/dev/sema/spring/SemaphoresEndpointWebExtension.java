package dev.sema.spring;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

/**
 * The HTTP status codes of the {@link SemaphoresEndpoint}: 404 for an unknown name (on GET and POST), 400 with
 * a message for a limit outside {@code 0..maxPermits}.
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
     * One semaphore, or 404.
     *
     * @param name its name
     * @return its state, or 404
     */
    @ReadOperation
    public WebEndpointResponse<SemaphoresEndpoint.SemaphoreDescriptor> semaphore(@Selector String name) {
        SemaphoresEndpoint.SemaphoreDescriptor d = endpoint.semaphore(name);
        return d == null ? new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND) : new WebEndpointResponse<>(d);
    }

    /**
     * Sets a semaphore's limit: its new state, 404 for an unknown name, 400 for a limit out of range.
     *
     * @param name its name
     * @param permits the new limit
     * @return the new state, or 404 or 400
     */
    @WriteOperation
    public WebEndpointResponse<Object> setPermits(@Selector String name, long permits) {
        try {
            SemaphoresEndpoint.SemaphoreDescriptor d = endpoint.setPermits(name, permits);
            return d == null ? new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND)
                    : new WebEndpointResponse<>(d);
        } catch (InvalidEndpointRequestException e) {
            return new WebEndpointResponse<>(new Error(e.getReason()), WebEndpointResponse.STATUS_BAD_REQUEST);
        }
    }

    /**
     * The body of a 400.
     *
     * @param error what is wrong
     */
    public record Error(String error) {
    }
}
