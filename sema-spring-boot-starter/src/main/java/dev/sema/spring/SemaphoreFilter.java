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
 * <p>With {@code sema.web.keyed}, a limited request first takes one permit of its key's semaphore in the family (the
 * key read as {@code sema.web.key} says), then the semaphore's permit (when {@code sema.web.semaphore} is set too),
 * the two waits together bounded by {@code max-wait}. The key's comes first so that a tenant at its own limit waits
 * or is refused without holding a permit that other tenants share. Both are held until the response is complete,
 * and both are given back then (the semaphore's first); a refusal of the second gives the first back at once. A
 * request without a key is answered 400 naming what it lacks, never limited under a shared key, and so is one whose key
 * the family refuses (a family on Redis takes no empty key and none with a brace), naming the key; a family at its
 * {@code max-keys} refuses a new key with 503 like any refusal.
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
        // The path is decoded again only for a partition rule (shouldNotFilter does not keep its own).
        WebLimit.Admission admission = limit.admit(limit.partitioned() ? PATHS.getPathWithinApplication(request) : null,
                new Keys(request));
        if (admission.badRequest() != null) {
            sendBadRequest(request, response, admission.badRequest());
            return;
        }
        Semaphore keySemaphore = admission.key();
        Semaphore semaphore = admission.semaphore();
        long start = System.nanoTime();
        Permit keyPermit = null;
        Permit permit = null;
        try {
            if (keySemaphore != null) {
                keyPermit = Refusals.acquire(keySemaphore, 1, limit.maxWait());
            }
            if (semaphore != null) {
                permit = Refusals.acquire(semaphore, 1, WebLimit.remaining(limit.maxWait(), start));
            }
        } catch (RuntimeException refusal) { // the key's permit goes back whatever stopped the second acquire
            if (keyPermit != null) {
                keyPermit.close();
            }
            if (refusal instanceof PermitUnavailableException unavailable) {
                PermitUnavailableExceptionResolver.send(request, response, unavailable, retryAfter);
                return;
            }
            throw refusal;
        }
        ReleaseOnComplete held = new ReleaseOnComplete(permit, keyPermit);
        try {
            chain.doFilter(request, response);
        } finally {
            if (request.isAsyncStarted()) {
                // The container delivers the completion only after this dispatch returns, even when another
                // thread completed the request meanwhile, so the listener cannot miss it.
                request.getAsyncContext().addListener(held);
            } else {
                held.release();
            }
        }
    }

    /** 400 with a JSON body saying what the request lacks. */
    private static void sendBadRequest(HttpServletRequest request, HttpServletResponse response, String message)
            throws IOException {
        response.resetBuffer();
        response.setStatus(HttpServletResponse.SC_BAD_REQUEST);
        response.setContentType("application/json");
        response.setCharacterEncoding(java.nio.charset.StandardCharsets.UTF_8.name());
        byte[] body = WebResponses.badRequest(message, request.getRequestURI())
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
        response.flushBuffer();
    }

    /** The request as {@code sema.web.key} reads it. */
    private record Keys(HttpServletRequest request) implements WebLimit.RequestKeys {
        @Override
        public String header(String name) {
            return request.getHeader(name);
        }

        @Override
        public String principal() {
            java.security.Principal p = request.getUserPrincipal();
            return p == null ? null : p.getName();
        }

        @Override
        public String remoteAddress() {
            return request.getRemoteAddr();
        }
    }

    @Override
    public String toString() {
        return "SemaphoreFilter[" + limit + "]";
    }

    /**
     * Releases the request's permits when its response is complete: the semaphore's, then the key's (each
     * {@code null} when not taken).
     */
    private record ReleaseOnComplete(Permit permit, Permit keyPermit) implements AsyncListener {
        void release() {
            try {
                if (permit != null) {
                    permit.close();
                }
            } finally {
                if (keyPermit != null) {
                    keyPermit.close();
                }
            }
        }

        @Override
        public void onComplete(AsyncEvent event) {
            release();
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
