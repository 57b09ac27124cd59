package dev.sema;

import dev.sema.internal.Checks;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.ToLongFunction;

/**
 * A family of semaphores, one per key (a tenant, a user, an API key), each created on the first request for its
 * key and removed the moment it is idle (API.md §11b).
 *
 * {@snippet :
 * KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder()
 *         .name("exports")
 *         .permits(5)           // at most 5 exports at once per tenant
 *         .maxKeys(100_000)     // tenants with exports running or waiting, at most
 *         .build();
 * try (Permit p = exports.get(tenantId).acquire()) {
 *     // ...
 * }
 * }
 *
 * <p>{@link #get(Object)} returns a view bound to the key: a {@link Semaphore} named {@code "exports[<key>]"},
 * cheap to get and valid for good. A key's semaphore lives while it holds permits or has requests in flight,
 * and is removed as soon as it has neither; the next request for that key starts afresh, with the key's
 * limit computed again. <b>At no instant do the permits held for one key exceed its limit</b>, however
 * requests, releases, removals and re-creations race. An idle key costs no memory.
 *
 * <p>A request that would create a key beyond {@link #maxKeys()} fails at once with
 * {@link TooManyKeysException} ({@code tryAcquire}: an empty {@code Optional}; {@code acquireAsync}: a failed
 * future) and produces a {@code rejected(UNAVAILABLE)} event: a flood of distinct keys cannot exhaust memory.
 *
 * <p>With a {@link Builder#parent parent}, every key's request also takes as many of the parent's permits,
 * after the key's: the {@code Permit} holds both and gives both back together (a partial release, a split
 * and a merge keep them equal), a timeout covers both waits, and a request that fails or is cancelled while
 * waiting for the parent gives the key's permits back. The key's listener events are about the key's
 * permits; the parent's listeners see the parent's.
 *
 * <h2>Fairness</h2>
 * Each key's semaphore is FIFO: its requests are granted in arrival order, a large one never starved by smaller
 * ones behind it. Different keys do not wait for each other.
 *
 * <h2>Memory consistency effects</h2>
 * As for {@link Semaphore}: actions before a {@code Permit}'s release happen-before a successful acquire of
 * the permits it released, for the same key.
 *
 * <h2>Cancellation and interruption</h2>
 * As for {@link Semaphore}, for both waits: a cancelled future or an interrupted thread leaves nothing held.
 *
 * <h2>Views</h2>
 * A view's {@code permits()} and {@code maxPermits()} are its key's limit; {@code availablePermits()} and
 * {@code queueLength()} its key's now (its whole limit and 0 when the key is idle). Resizing a view and closing
 * it throw {@code UnsupportedOperationException}: close the family. A view takes no listeners: the family's
 * ({@link #addListener}) see every key's events with the view as the semaphore. Forgetting a key's
 * {@code Permit} lowers that key's limit until the key is next idle and removed (the parent's, for good).
 *
 * @param <K> the key: any value with {@code equals} and {@code hashCode}, not {@code null}
 */
public interface KeyedSemaphore<K> {

    /**
     * A builder of a local family.
     *
     * @param <K> the key type
     * @return a new builder
     */
    static <K> Builder<K> builder() {
        return new Builder<>();
    }

    /**
     * Returns the semaphore of {@code key}: a view that finds the key's semaphore at each call, creating it if
     * needed. Cheap, and valid for good.
     *
     * @param key the key
     * @return the view, named {@code "<family>[<key>]"}
     * @throws NullPointerException if {@code key} is {@code null}
     */
    Semaphore get(K key);

    /**
     * Returns how many keys are live now: holding permits or with requests in flight.
     *
     * @return the live keys, at most {@link #maxKeys()}
     */
    int size();

    /**
     * Returns the most keys that may be live at once.
     *
     * @return the bound
     */
    int maxKeys();

    /**
     * Returns the family's name, shown in messages and in each view's name.
     *
     * @return the name
     */
    String name();

    /**
     * Adds a listener of every key's events, called with the key's view as the semaphore, after those added
     * before it (see {@link Semaphore#addListener}).
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    void addListener(SemaphoreListener listener);

    /**
     * Removes the first registration of {@code listener}.
     *
     * @param listener the listener
     * @return whether it was registered
     */
    boolean removeListener(SemaphoreListener listener);

    /**
     * Closes every key's semaphore: their waiters fail with {@link SemaphoreClosedException}, and so does
     * every later request. Permits held may still be released. Idempotent.
     */
    void close();

    /**
     * Returns whether {@link #close()} was called.
     *
     * @return true once closed
     */
    boolean isClosed();

    /**
     * Builds a local {@link KeyedSemaphore}. Each setter checks its own argument at once.
     *
     * @param <K> the key type
     */
    final class Builder<K> {
        private String name;
        private long permits = -1;
        private ToLongFunction<? super K> limits;
        private long maxPermits = Semaphore.MAX_PERMITS;
        private int maxKeys = 100_000;
        private Semaphore parent;
        private LeakDetection leakDetection = LeakDetection.OFF;
        private final List<SemaphoreListener> listeners = new ArrayList<>();

        Builder() {
        }

        /**
         * Sets the family's name (default: generated, unique).
         *
         * @param name a non-blank name
         * @return this builder
         * @throws NullPointerException if {@code name} is {@code null}
         * @throws IllegalArgumentException if {@code name} is blank
         */
        public Builder<K> name(String name) {
            Objects.requireNonNull(name, "name");
            if (name.isBlank()) {
                throw new IllegalArgumentException("name must not be blank");
            }
            this.name = name;
            return this;
        }

        /**
         * Sets every key's limit.
         *
         * @param permits {@code 0 <= permits <= MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<K> permits(long permits) {
            this.permits = Checks.count("permits", permits);
            this.limits = null;
            return this;
        }

        /**
         * Sets each key's limit by a function of the key, called when the key's semaphore is created (and again
         * each time it is created anew after being idle). A call that throws, or returns a limit outside
         * {@code 0..maxPermits}, fails the request that asked for the key (an {@code IllegalArgumentException}
         * naming the key and the value), and creates nothing.
         *
         * @param limits the limit of a key
         * @return this builder
         * @throws NullPointerException if {@code limits} is {@code null}
         */
        public Builder<K> permits(ToLongFunction<? super K> limits) {
            this.limits = Objects.requireNonNull(limits, "limits");
            this.permits = -1;
            return this;
        }

        /**
         * Sets the most a key's limit may be (default {@link Semaphore#MAX_PERMITS}): a bound on what
         * {@link #permits(ToLongFunction)} returns.
         *
         * @param maxPermits {@code 0 <= maxPermits <= MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<K> maxPermits(long maxPermits) {
            this.maxPermits = Checks.count("maxPermits", maxPermits);
            return this;
        }

        /**
         * Sets the most keys that may be live at once (default 100,000).
         *
         * @param maxKeys at least 1
         * @return this builder
         * @throws IllegalArgumentException if below 1
         */
        public Builder<K> maxKeys(int maxKeys) {
            if (maxKeys < 1) {
                throw new IllegalArgumentException("maxKeys (" + maxKeys + ") must be at least 1");
            }
            this.maxKeys = maxKeys;
            return this;
        }

        /**
         * Makes every key's permits also hold as many of {@code parent}'s (none by default): a limit for all
         * keys together, which may be a partition of a partitioned semaphore.
         *
         * @param parent the parent semaphore
         * @return this builder
         * @throws NullPointerException if {@code parent} is {@code null}
         */
        public Builder<K> parent(Semaphore parent) {
            this.parent = Objects.requireNonNull(parent, "parent");
            return this;
        }

        /**
         * Sets leak detection for every key's semaphore (default {@link LeakDetection#OFF}), as
         * {@link Semaphore.Builder#leakDetection} does.
         *
         * @param leakDetection the level
         * @return this builder
         * @throws NullPointerException if {@code leakDetection} is {@code null}
         */
        public Builder<K> leakDetection(LeakDetection leakDetection) {
            this.leakDetection = Objects.requireNonNull(leakDetection, "leakDetection");
            return this;
        }

        /**
         * Adds a listener of every key's events, registered before the family is returned; repeatable, in
         * order.
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is {@code null}
         */
        public Builder<K> listener(SemaphoreListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Builds the family.
         *
         * @return the family, with no key yet
         * @throws IllegalStateException if no limit was set
         * @throws IllegalArgumentException if the limit set exceeds {@code maxPermits}
         */
        public KeyedSemaphore<K> build() {
            if (permits < 0 && limits == null) {
                throw new IllegalStateException("a keyed semaphore needs each key's limit: permits(n) or"
                        + " permits(key -> n)");
            }
            if (permits > maxPermits) {
                throw new IllegalArgumentException("permits (" + permits + ") exceeds maxPermits (" + maxPermits
                        + ")");
            }
            String n = name != null ? name : "keyed-" + LocalSemaphore.generatedName();
            long fixed = permits;
            ToLongFunction<? super K> limit = limits != null ? limits : key -> fixed;
            return new LocalKeyedSemaphore<>(n, limit, maxPermits, maxKeys, parent, leakDetection,
                    List.copyOf(listeners));
        }
    }
}
