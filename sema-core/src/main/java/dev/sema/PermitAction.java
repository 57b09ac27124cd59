package dev.sema;

/**
 * Work run while permits are held, by {@link Semaphore#withPermits(long, PermitAction)}.
 *
 * @param <T> the result type
 * @param <X> the checked exception the work may throw
 */
@FunctionalInterface
public interface PermitAction<T, X extends Exception> {
    /**
     * Runs the work.
     *
     * @return the result, may be {@code null}
     * @throws X if the work fails
     */
    T run() throws X;
}
