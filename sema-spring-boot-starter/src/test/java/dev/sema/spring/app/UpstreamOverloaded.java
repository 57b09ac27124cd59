package dev.sema.spring.app;

/** What a downstream's 503 becomes in the test services: a drop for the adaptive limit. */
public class UpstreamOverloaded extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UpstreamOverloaded(String message) {
        super(message);
    }
}
