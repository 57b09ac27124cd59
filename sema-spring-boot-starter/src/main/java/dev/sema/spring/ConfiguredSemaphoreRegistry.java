package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The starter's {@link SemaphoreRegistry}: the semaphores built from {@code sema.semaphores}, their adaptive
 * limits, and which of them it closes at shutdown (the local ones).
 *
 * <p>The semaphores are added while the registry is built, before it is published as a bean, and never change
 * after. Adaptive limits may come later: a Redis semaphore opened once Redis is reached gets its adaptive limit
 * then, on the thread that opened it ({@link #attach}); after {@link #close()} none is built any more.
 */
final class ConfiguredSemaphoreRegistry implements SemaphoreRegistry, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ConfiguredSemaphoreRegistry.class.getName());

    private final Map<String, Semaphore> semaphores = new LinkedHashMap<>();
    private final Map<String, Semaphore> view = Collections.unmodifiableMap(semaphores);
    private final Map<String, AdaptiveLimit> adaptive = new ConcurrentHashMap<>();
    private final Map<String, KeyedSemaphore<Object>> families = new LinkedHashMap<>();
    private final Map<String, KeyedSemaphore<Object>> familiesView = Collections.unmodifiableMap(families);
    /** Each family's limit per key, as configured: the actuator shows it (the family does not say). */
    private final Map<String, Long> permitsPerKey = new LinkedHashMap<>();
    /** The semaphores this registry closes: the local ones (closing a Redis one would close it for the fleet). */
    private final List<Semaphore> owned = new ArrayList<>();
    private boolean closed;

    /** Adds a semaphore while the registry is built; {@code owned}: closed with the registry. */
    void add(String name, Semaphore semaphore, boolean owned) {
        semaphores.put(name, semaphore);
        if (owned) {
            this.owned.add(semaphore);
        }
    }

    /** Adds a keyed family while the registry is built; closed with the registry. */
    void addKeyed(String name, KeyedSemaphore<Object> family, long permits) {
        families.put(name, family);
        permitsPerKey.put(name, permits);
    }

    /** The configured limit per key of the family {@code name}, or {@code null}. */
    Long permitsPerKey(String name) {
        return permitsPerKey.get(name);
    }

    /** Builds and keeps the adaptive limit of {@code name}, unless the registry is closed already. */
    synchronized void attach(String name, Supplier<AdaptiveLimit> build) {
        if (closed) {
            return;
        }
        adaptive.put(name, build.get());
    }

    @Override
    public Semaphore get(String name) {
        Semaphore s = semaphores.get(Objects.requireNonNull(name, "name"));
        if (s == null) {
            throw new NoSuchElementException("no semaphore '" + name + "' in the registry; "
                    + (semaphores.isEmpty() ? "sema.semaphores configures none" : "it has " + semaphores.keySet())
                    + (families.containsKey(name) ? " ('" + name + "' is a keyed family: keyed(\"" + name + "\"))"
                            : ""));
        }
        return s;
    }

    @Override
    public Optional<Semaphore> find(String name) {
        return Optional.ofNullable(semaphores.get(Objects.requireNonNull(name, "name")));
    }

    @Override
    public Map<String, Semaphore> all() {
        return view;
    }

    @Override
    public Optional<AdaptiveLimit> adaptive(String name) {
        return Optional.ofNullable(adaptive.get(Objects.requireNonNull(name, "name")));
    }

    @Override
    public Map<String, KeyedSemaphore<Object>> allKeyed() {
        return familiesView;
    }

    /**
     * Closes the adaptive limits, the keyed families (before their parents), then the local semaphores: called when the application context closes,
     * after the web server has stopped (the lifecycle phases end before singletons are destroyed).
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (AdaptiveLimit a : adaptive.values()) {
            a.close();
        }
        for (KeyedSemaphore<Object> f : families.values()) {
            f.close();
        }
        for (Semaphore s : owned) {
            s.close();
        }
        LOG.log(System.Logger.Level.DEBUG, () -> "closed " + adaptive.size() + " adaptive limit(s), "
                + families.size() + " keyed famil(ies) and " + owned.size() + " local semaphore(s)");
    }

    @Override
    public String toString() {
        return "SemaphoreRegistry" + semaphores.keySet() + (families.isEmpty() ? "" : ", keyed" + families.keySet());
    }
}
