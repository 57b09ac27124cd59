package dev.sema.spring;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;

/**
 * WebFlux: a {@link PermitUnavailableException} (also as the cause of another), as a {@code @WithPermits} method's
 * {@code Mono} or {@code Flux} signals it, becomes 503 with a {@code Retry-After} header and the JSON body of Spring
 * MVC's {@link PermitUnavailableExceptionResolver} ({@link WebResponses#refused}). Ordered before Spring Boot's error
 * handler ({@code -1}); an {@code @ExceptionHandler} of the application still comes first, as Spring WebFlux applies
 * those before any {@code WebExceptionHandler}. The {@code sema.web} filter answers its refusals the same way
 * ({@link #send}).
 */
final class PermitUnavailableExceptionHandler implements WebExceptionHandler, Ordered {
    /** Before Spring Boot's {@code DefaultErrorWebExceptionHandler} ({@code -1}). */
    static final int ORDER = -2;

    private final String retryAfter;

    PermitUnavailableExceptionHandler(Duration retryAfter) {
        this.retryAfter = Long.toString(Durations.secondsUp(retryAfter));
    }

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, Throwable ex) {
        PermitUnavailableException refusal = WebResponses.refusalIn(ex);
        if (refusal == null || exchange.getResponse().isCommitted()) {
            return Mono.error(ex);
        }
        return send(exchange, refusal, retryAfter);
    }

    /**
     * Answers 503 with {@code Retry-After} and a JSON body naming the semaphore.
     *
     * @param retryAfter the header's value, in seconds
     */
    static Mono<Void> send(ServerWebExchange exchange, PermitUnavailableException refusal, String retryAfter) {
        HttpHeaders headers = exchange.getResponse().getHeaders();
        headers.remove(HttpHeaders.CONTENT_DISPOSITION); // a handler's, set before it failed
        headers.set(HttpHeaders.RETRY_AFTER, retryAfter);
        return writeJson(exchange, HttpStatus.SERVICE_UNAVAILABLE, WebResponses.refused(refusal,
                exchange.getRequest().getPath().value()));
    }

    /** Answers {@code status} with the JSON {@code body}: this handler's 503, the {@code sema.web} filter's 400. */
    static Mono<Void> writeJson(ServerWebExchange exchange, HttpStatus status, String body) {
        ServerHttpResponse response = exchange.getResponse();
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        response.setStatusCode(status);
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        response.getHeaders().setContentLength(bytes.length);
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(bytes)));
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
