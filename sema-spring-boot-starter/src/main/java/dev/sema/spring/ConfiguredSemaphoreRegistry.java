package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.Semaphore;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;

/**
 * The starter's {@link SemaphoreRegistry}: the semaphores built from {@code sema.semaphores}, their adaptive
 * limits, and which of them it closes at shutdown (the local ones).
 */
final class ConfiguredSemaphoreRegistry implements SemaphoreRegistry, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ConfiguredSemaphoreRegistry.class.getName());

    private final Map<String, Semaphore> semaphores;
    private final Map<String, AdaptiveLimit> adaptive;
    /** The semaphores this registry closes: the local ones (closing a Redis one would close it for the fleet). */
    private final List<Semaphore> owned;

    ConfiguredSemaphoreRegistry(Map<String, Semaphore> semaphores, Map<String, AdaptiveLimit> adaptive,
            List<Semaphore> owned) {
        this.semaphores = Collections.unmodifiableMap(new LinkedHashMap<>(semaphores));
        this.adaptive = Map.copyOf(adaptive);
        this.owned = List.copyOf(owned);
    }

    @Override
    public Semaphore get(String name) {
        Semaphore s = semaphores.get(Objects.requireNonNull(name, "name"));
        if (s == null) {
            throw new NoSuchElementException("no semaphore '" + name + "' in the registry; "
                    + (semaphores.isEmpty() ? "sema.semaphores configures none" : "it has " + semaphores.keySet()));
        }
        return s;
    }

    @Override
    public Optional<Semaphore> find(String name) {
        return Optional.ofNullable(semaphores.get(Objects.requireNonNull(name, "name")));
    }

    @Override
    public Map<String, Semaphore> all() {
        return semaphores;
    }

    @Override
    public Optional<AdaptiveLimit> adaptive(String name) {
        return Optional.ofNullable(adaptive.get(Objects.requireNonNull(name, "name")));
    }

    /**
     * Closes the adaptive limits, then the local semaphores: called when the application context closes,
     * after the web server has stopped (the lifecycle phases end before singletons are destroyed).
     */
    @Override
    public void close() {
        for (AdaptiveLimit a : adaptive.values()) {
            a.close();
        }
        for (Semaphore s : owned) {
            s.close();
        }
        LOG.log(System.Logger.Level.DEBUG, () -> "closed " + adaptive.size() + " adaptive limit(s) and "
                + owned.size() + " local semaphore(s)");
    }

    @Override
    public String toString() {
        return "SemaphoreRegistry" + semaphores.keySet();
    }
}
