package dev.sema.spring;

import java.util.Locale;

/**
 * The bodies of the answers the starter writes itself, whatever the web stack: a refusal's 503 (the {@code sema.web}
 * filters, Spring MVC's {@link PermitUnavailableExceptionResolver}, WebFlux's {@code PermitUnavailableExceptionHandler})
 * and a missing or refused key's 400 (the filters).
 */
final class WebResponses {
    private static final int MAX_CAUSES = 16;

    private WebResponses() {
    }

    /**
     * {@code {"status":503,"error":"Service Unavailable","semaphore":"reports","permits":1,"message":"...","path":"/reports/7"}}.
     *
     * @param path the request's path, as the client sent it
     */
    static String refused(PermitUnavailableException refusal, String path) {
        return "{\"status\":503,\"error\":\"Service Unavailable\",\"semaphore\":" + json(refusal.semaphore())
                + ",\"permits\":" + refusal.permits() + ",\"message\":" + json(refusal.getMessage()) + ",\"path\":"
                + json(path) + "}";
    }

    /** {@code {"status":400,"error":"Bad Request","message":"...","path":"/api/x"}}: what the request lacks. */
    static String badRequest(String message, String path) {
        return "{\"status\":400,\"error\":\"Bad Request\",\"message\":" + json(message) + ",\"path\":" + json(path)
                + "}";
    }

    /** The {@link PermitUnavailableException} that {@code ex} is or was caused by, or {@code null}. */
    static PermitUnavailableException refusalIn(Throwable ex) {
        Throwable t = ex;
        for (int i = 0; t != null && i < MAX_CAUSES; i++, t = t.getCause()) {
            if (t instanceof PermitUnavailableException p) {
                return p;
            }
        }
        return null;
    }

    /** {@code text} as a JSON string. */
    static String json(String text) {
        if (text == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
