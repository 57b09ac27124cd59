package dev.sema;

/**
 * A function that may throw a checked exception: the work {@link Parallel#map(Iterable, int,
 * ThrowingFunction)} and its relatives run for each item.
 *
 * @param <T> the item type
 * @param <R> the result type
 */
@FunctionalInterface
public interface ThrowingFunction<T, R> {
    /**
     * Applies the function.
     *
     * @param t the item, may be {@code null}
     * @return the result, may be {@code null}
     * @throws Exception if the work fails
     */
    R apply(T t) throws Exception;
}
