package dev.sema.spring;

import dev.sema.Permit;
import dev.sema.Semaphore;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.util.UrlPathHelper;

/**
 * {@code sema.web}: every request whose path matches {@code paths} and none of {@code exclude-paths} takes one
 * permit of the semaphore, or of the partition of it that {@code partition-header} or {@code partition-paths} gives
 * it ({@link WebLimit#select}), before it goes on, waiting at most {@code max-wait}, and holds it until its response
 * is complete: when the filter chain returns, or, for a request that went asynchronous, when the asynchronous
 * processing completes (an {@link AsyncListener}; the servlet container delivers its {@code onComplete} after a
 * timeout or an error too). A request that gets no permit (none in time, the semaphore closed, or a Redis
 * semaphore whose Redis cannot be reached) is answered 503 with a {@code Retry-After} header and a JSON body naming
 * the semaphore, or the partition's view ({@code "api/batch"}) ({@link PermitUnavailableExceptionResolver#send}),
 * and goes no further.
 *
 * <p>Runs once per request: not again on the asynchronous or error dispatches of the same request
 * ({@link OncePerRequestFilter}). The path is the one within the application, decoded and normalized, so
 * that {@code /api;x=1/..} or an encoded path is matched as what it is.
 */
final class SemaphoreFilter extends OncePerRequestFilter {
    private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

    private final WebLimit limit;
    private final String retryAfter;

    SemaphoreFilter(WebLimit limit) {
        this.limit = limit;
        this.retryAfter = Long.toString(Durations.secondsUp(limit.retryAfter()));
    }

    /** What it limits, checked. */
    WebLimit limit() {
        return limit;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        return !limit.limits(PATHS.getPathWithinApplication(request));
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        Semaphore semaphore = limit.partitioned()
                ? limit.select(PATHS.getPathWithinApplication(request), request::getHeader) : limit.semaphore();
        Permit permit;
        try {
            permit = Refusals.acquire(semaphore, 1, limit.maxWait());
        } catch (PermitUnavailableException refusal) {
            PermitUnavailableExceptionResolver.send(request, response, refusal, retryAfter);
            return;
        }
        try {
            chain.doFilter(request, response);
        } finally {
            if (request.isAsyncStarted()) {
                // The container delivers the completion only after this dispatch returns, even when another
                // thread completed the request meanwhile, so the listener cannot miss it.
                request.getAsyncContext().addListener(new ReleaseOnComplete(permit));
            } else {
                permit.close();
            }
        }
    }

    @Override
    public String toString() {
        return "SemaphoreFilter[" + limit + "]";
    }

    /** Releases the request's permit when its asynchronous processing is complete. */
    private record ReleaseOnComplete(Permit permit) implements AsyncListener {
        @Override
        public void onComplete(AsyncEvent event) {
            permit.close();
        }

        @Override
        public void onTimeout(AsyncEvent event) {
            // onComplete follows, once the timeout's response is written
        }

        @Override
        public void onError(AsyncEvent event) {
            // onComplete follows, once the error's response is written
        }

        @Override
        public void onStartAsync(AsyncEvent event) {
            // A new asynchronous cycle of the same request: listeners must register again to hear of it.
            event.getAsyncContext().addListener(this);
        }
    }
}
