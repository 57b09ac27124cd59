package dev.sema;

/**
 * An action that may throw a checked exception: the work {@link Parallel#forEach(Iterable, int,
 * ThrowingConsumer)} runs for each item.
 *
 * @param <T> the item type
 */
@FunctionalInterface
public interface ThrowingConsumer<T> {
    /**
     * Performs the action.
     *
     * @param t the item, may be {@code null}
     * @throws Exception if the work fails
     */
    void accept(T t) throws Exception;
}
