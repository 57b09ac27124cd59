package dev.sema.spring;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatus;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * {@code sema.web} in a WebFlux application: the reactive sibling of {@link SemaphoreFilter}, from the same checked
 * {@link WebLimit}. A request whose path matches {@code paths} and none of {@code exclude-paths} takes one permit of
 * its key's semaphore (with {@code sema.web.keyed}) and then one of the semaphore or its partition
 * ({@link WebLimit#admit}), the two waits together bounded by {@code max-wait}, and goes on down the chain holding
 * them; they are given back (the semaphore's first) when the chain's {@code Mono} ends: the response written, an
 * error, or the exchange cancelled because the client went away. Waiting blocks no thread: the requests queue on the
 * semaphore ({@link ReactorPermits}, through sema-reactor) and resume on the thread whose release served them.
 *
 * <p>Answers, as the servlet filter's: a refusal (none in time, the semaphore closed, a family at its
 * {@code max-keys}, Redis unreachable) is 503 with {@code Retry-After} and a JSON body naming the semaphore
 * ({@link PermitUnavailableExceptionHandler#send}); a missing key, or one the family refuses, is 400 saying what was
 * missing. The key's permit goes back if the semaphore's is refused.
 *
 * <p>The path matched is the one within the application ({@code spring.webflux.base-path} left out), each segment
 * decoded and without its matrix variables, {@code .} and {@code ..} resolved, so that {@code /api;x=1/quick} or
 * {@code /%61pi/quick} is matched as {@code /api/quick}. With {@code sema.web.key: principal}, the principal is the
 * exchange's ({@link ServerWebExchange#getPrincipal()}), which Spring Security sets before this filter runs
 * ({@link SemaWebFluxAutoConfiguration#FILTER_ORDER}).
 */
final class SemaphoreWebFilter implements WebFilter, Ordered {
    private final WebLimit limit;
    private final String retryAfter;

    SemaphoreWebFilter(WebLimit limit) {
        this.limit = limit;
        this.retryAfter = Long.toString(Durations.secondsUp(limit.retryAfter()));
    }

    /** What it limits, checked. */
    WebLimit limit() {
        return limit;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        String path = path(exchange.getRequest());
        if (!limit.limits(path)) {
            return chain.filter(exchange);
        }
        if (limit.keyedByPrincipal()) {
            return exchange.getPrincipal().map(p -> Optional.ofNullable(p.getName())).defaultIfEmpty(Optional.empty())
                    .flatMap(name -> admit(exchange, chain, path, name.orElse(null)));
        }
        return admit(exchange, chain, path, null);
    }

    private Mono<Void> admit(ServerWebExchange exchange, WebFilterChain chain, String path, String principal) {
        WebLimit.Admission admission = limit.admit(path, new Keys(exchange.getRequest(), principal));
        if (admission.badRequest() != null) {
            return sendBadRequest(exchange, admission.badRequest());
        }
        long start = System.nanoTime();
        Mono<Void> passed = Mono.defer(() -> chain.filter(exchange));
        if (admission.semaphore() != null) {
            Mono<Void> inner = passed;
            passed = ReactorPermits.holding(Mono.defer(() -> ReactorPermits.acquire(admission.semaphore(), 1,
                    WebLimit.remaining(limit.maxWait(), start))), permit -> inner, failure -> { });
        }
        if (admission.key() != null) {
            Mono<Void> inner = passed;
            passed = ReactorPermits.holding(ReactorPermits.acquire(admission.key(), 1, limit.maxWait()),
                    permit -> inner, failure -> { });
        }
        return passed.onErrorResume(ReactorPermits.Refused.class,
                refused -> PermitUnavailableExceptionHandler.send(exchange, refused.refusal(), retryAfter));
    }

    /** 400 with a JSON body saying what the request lacks. */
    private static Mono<Void> sendBadRequest(ServerWebExchange exchange, String message) {
        return PermitUnavailableExceptionHandler.writeJson(exchange, HttpStatus.BAD_REQUEST,
                WebResponses.badRequest(message, exchange.getRequest().getPath().value()));
    }

    /** The request's path within the application, decoded, without matrix variables, dot segments resolved. */
    static String path(ServerHttpRequest request) {
        Deque<String> segments = new ArrayDeque<>();
        boolean trailingSlash = false;
        for (PathContainer.Element element : request.getPath().pathWithinApplication().elements()) {
            if (element instanceof PathContainer.PathSegment segment) {
                String value = segment.valueToMatch();
                trailingSlash = false;
                if (value.equals("..")) {
                    segments.pollLast();
                    trailingSlash = true;
                } else if (value.equals(".")) {
                    trailingSlash = true;
                } else if (!value.isEmpty()) {
                    segments.addLast(value);
                }
            } else {
                trailingSlash = true;
            }
        }
        if (segments.isEmpty()) {
            return "/";
        }
        return "/" + String.join("/", segments) + (trailingSlash ? "/" : "");
    }

    /** The request as {@code sema.web.key} and {@code partition-header} read it. */
    private record Keys(ServerHttpRequest request, String principal) implements WebLimit.RequestKeys {
        @Override
        public String header(String name) {
            return request.getHeaders().getFirst(name);
        }

        @Override
        public String remoteAddress() {
            InetSocketAddress address = request.getRemoteAddress();
            if (address == null) {
                return null;
            }
            return address.getAddress() != null ? address.getAddress().getHostAddress() : address.getHostString();
        }
    }

    @Override
    public int getOrder() {
        return SemaWebFluxAutoConfiguration.FILTER_ORDER;
    }

    @Override
    public String toString() {
        return "SemaphoreWebFilter[" + limit + "]";
    }
}
