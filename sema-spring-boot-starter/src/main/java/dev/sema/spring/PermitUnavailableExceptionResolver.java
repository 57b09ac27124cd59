package dev.sema.spring;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;

/**
 * Spring MVC: a {@link PermitUnavailableException} (also as the cause of another, as when a
 * {@code CompletableFuture} returned by a controller fails) becomes 503 with a {@code Retry-After} header,
 * through the container's error handling. Ordered right after Spring MVC's own resolvers, so that an
 * {@code @ExceptionHandler} of the application still comes first.
 */
final class PermitUnavailableExceptionResolver implements HandlerExceptionResolver, Ordered {
    /** After the {@code HandlerExceptionResolverComposite} of Spring MVC (order 0). */
    static final int ORDER = 1;
    private static final int MAX_CAUSES = 16;

    private final String retryAfter;

    PermitUnavailableExceptionResolver(Duration retryAfter) {
        this.retryAfter = Long.toString(Durations.secondsUp(retryAfter));
    }

    @Override
    public ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response, Object handler,
            Exception ex) {
        PermitUnavailableException unavailable = find(ex);
        if (unavailable == null || response.isCommitted()) {
            return null;
        }
        try {
            response.setHeader(HttpHeaders.RETRY_AFTER, retryAfter);
            response.sendError(HttpServletResponse.SC_SERVICE_UNAVAILABLE, unavailable.getMessage());
        } catch (IOException e) {
            return null;
        }
        return new ModelAndView();
    }

    private static PermitUnavailableException find(Throwable ex) {
        Throwable t = ex;
        for (int i = 0; t != null && i < MAX_CAUSES; i++, t = t.getCause()) {
            if (t instanceof PermitUnavailableException p) {
                return p;
            }
        }
        return null;
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
