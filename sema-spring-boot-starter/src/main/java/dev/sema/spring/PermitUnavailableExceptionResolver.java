package dev.sema.spring;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;

/**
 * Spring MVC: a {@link PermitUnavailableException} (also as the cause of another, as when a
 * {@code CompletableFuture} returned by a controller fails) becomes 503 with a {@code Retry-After} header and a JSON
 * body naming the semaphore. Ordered right after Spring MVC's own resolvers, so that an {@code @ExceptionHandler} of
 * the application still comes first.
 *
 * <p>The body is written here rather than by the container's error page ({@code sendError}), whose JSON leaves the
 * message out unless {@code server.error.include-message} says otherwise: a client, and whoever reads its logs,
 * should learn which limit refused it. The {@code sema.web} filter answers the same way ({@link #send}).
 */
final class PermitUnavailableExceptionResolver implements HandlerExceptionResolver, Ordered {
    /** After the {@code HandlerExceptionResolverComposite} of Spring MVC (order 0). */
    static final int ORDER = 1;

    private final String retryAfter;

    PermitUnavailableExceptionResolver(Duration retryAfter) {
        this.retryAfter = Long.toString(Durations.secondsUp(retryAfter));
    }

    @Override
    public ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response, Object handler,
            Exception ex) {
        PermitUnavailableException unavailable = WebResponses.refusalIn(ex);
        if (unavailable == null || response.isCommitted()) {
            return null;
        }
        try {
            send(request, response, unavailable, retryAfter);
        } catch (IOException e) {
            return null;
        }
        return new ModelAndView();
    }

    /**
     * Answers 503 with {@code Retry-After} and a JSON body ({@link WebResponses#refused}).
     *
     * @param retryAfter the header's value, in seconds
     */
    static void send(HttpServletRequest request, HttpServletResponse response, PermitUnavailableException refusal,
            String retryAfter) throws IOException {
        response.resetBuffer();
        response.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
        response.setHeader(HttpHeaders.RETRY_AFTER, retryAfter);
        response.setContentType("application/json");
        response.setCharacterEncoding(StandardCharsets.UTF_8.name());
        String body = WebResponses.refused(refusal, request.getRequestURI());
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        response.setHeader(HttpHeaders.CONTENT_DISPOSITION, null); // a handler's, set before it failed
        try {
            var out = response.getOutputStream();
            response.setContentLength(bytes.length);
            out.write(bytes);
        } catch (IllegalStateException writerTaken) { // the handler had asked for the writer already
            response.getWriter().write(body);
        }
        response.flushBuffer();
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
