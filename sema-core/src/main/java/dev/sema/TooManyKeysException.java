package dev.sema;

/**
 * A request of a {@link KeyedSemaphore} would have created a key beyond the family's {@code maxKeys}: it was
 * refused at once, and nothing was created. Keys come back under the bound as soon as live keys become idle,
 * so the request may be retried later. A {@code tryAcquire} returns an empty {@code Optional} instead, and an
 * async request's future fails with this exception.
 */
public class TooManyKeysException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message names the family, its live keys and its bound
     */
    public TooManyKeysException(String message) {
        super(message);
    }
}
