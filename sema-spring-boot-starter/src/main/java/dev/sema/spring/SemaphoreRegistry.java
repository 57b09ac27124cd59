package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;

/**
 * The application's semaphores by name: a bean made from the {@code sema.semaphores.*} properties (see the
 * {@linkplain dev.sema.spring package overview}), or the application's own bean of this type, which every
 * other part of the starter ({@link WithPermits}, the {@code sema.web} filter, the meters, the actuator
 * endpoint and the health contributor) then uses instead.
 *
 * {@snippet :
 * @Service
 * class Orders {
 *     private final Semaphore db;
 *
 *     Orders(SemaphoreRegistry semaphores) {
 *         this.db = semaphores.get("db");
 *     }
 *
 *     Order load(long id) throws InterruptedException {
 *         try (Permit p = db.acquire()) {
 *             return repository.load(id);
 *         }
 *     }
 * }
 * }
 *
 * <p>Keyed families ({@code sema.keyed.*}, API.md §11c) are a namespace beside the semaphores (no name is both):
 * {@link #keyed(String)}, {@link #allKeyed()}.
 *
 * <h2>Lifecycle</h2>
 * The starter's registry builds every semaphore when the application context starts, and fails the start
 * with a message naming the property and its value when one is configured wrongly. When the context
 * closes, once the web server has stopped taking requests, it closes the adaptive limits, the keyed families
 * and then the local semaphores (their waiters fail with {@link dev.sema.SemaphoreClosedException}; permits already held
 * can still be released). It never closes a {@code RedisSemaphore}, which would close it for every process:
 * the {@code RedisSemaphores} the starter opened is closed instead, which releases the permits this process
 * still holds and leaves the semaphores open for the rest of the fleet.
 *
 * <h2>Threading</h2>
 * Implementations are immutable once built and thread-safe.
 */
public interface SemaphoreRegistry {

    /**
     * Returns the semaphore of that name.
     *
     * @param name the semaphore's name, as configured under {@code sema.semaphores}
     * @return the semaphore
     * @throws NoSuchElementException if there is none of that name; the message names the known ones
     * @throws NullPointerException if {@code name} is {@code null}
     */
    Semaphore get(String name);

    /**
     * Returns the semaphore of that name, if there is one.
     *
     * @param name the semaphore's name
     * @return the semaphore, or empty
     * @throws NullPointerException if {@code name} is {@code null}
     */
    Optional<Semaphore> find(String name);

    /**
     * Returns every semaphore, in configuration order (the order in which their names first appear in the
     * application's configuration).
     *
     * @return an unmodifiable map from name to semaphore
     */
    Map<String, Semaphore> all();

    /**
     * Returns the adaptive limit that adjusts the semaphore of that name, if it has one
     * ({@code sema.semaphores.<name>.adaptive}).
     *
     * @param name the semaphore's name
     * @return its adaptive limit, or empty when it has none or there is no such semaphore
     * @throws NullPointerException if {@code name} is {@code null}
     */
    Optional<AdaptiveLimit> adaptive(String name);

    /**
     * Returns the keyed family of that name ({@code sema.keyed.<name>}). A local family's keys are compared as given
     * ({@code equals}): the key {@code "42"} and the key {@code 42} are two keys. A family on Redis
     * ({@code redis: true}) takes {@code String.valueOf(key)}, the same text in every process, so they are one key
     * there; its {@code get} refuses a key that is empty or contains a brace ({@link IllegalArgumentException}).
     *
     * <p>The default, for a registry of the application's own that has no families, knows none.
     *
     * @param name the family's name, as configured under {@code sema.keyed}
     * @return the family
     * @throws IllegalArgumentException if there is none of that name; the message names the known ones
     * @throws NullPointerException if {@code name} is {@code null}
     */
    default KeyedSemaphore<Object> keyed(String name) {
        KeyedSemaphore<Object> family = allKeyed().get(java.util.Objects.requireNonNull(name, "name"));
        if (family == null) {
            throw new IllegalArgumentException("no keyed family '" + name + "' in the registry; " + (allKeyed()
                    .isEmpty() ? "sema.keyed configures none" : "it has " + allKeyed().keySet())
                    + (find(name).isPresent() ? " ('" + name + "' is a semaphore: get(\"" + name + "\"))" : ""));
        }
        return family;
    }

    /**
     * Returns every keyed family, in configuration order.
     *
     * <p>The default, for a registry of the application's own, has none.
     *
     * @return an unmodifiable map from name to family
     */
    default Map<String, KeyedSemaphore<Object>> allKeyed() {
        return Map.of();
    }
}
