package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.KeyedSemaphore;
import dev.sema.LeakDetection;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Builds the {@link ConfiguredSemaphoreRegistry} from {@code sema.semaphores} and then {@code sema.keyed} (whose
 * parents are semaphores), checking each property first, so
 * that a mistake is reported as the property and its value rather than as a builder's argument.
 */
final class SemaphoreRegistryFactory {
    private static final System.Logger LOG = System.getLogger(SemaphoreRegistryFactory.class.getName());

    private final SemaProperties properties;
    private final RedisSemaphoreSource redis;
    private final Settings settings;

    /**
     * @param properties the {@code sema.*} properties
     * @param redis opens the Redis semaphores; {@code null} when sema-redis is not on the class path
     * @param settings for the messages
     */
    SemaphoreRegistryFactory(SemaProperties properties, RedisSemaphoreSource redis, Settings settings) {
        this.properties = properties;
        this.redis = redis;
        this.settings = settings;
    }

    ConfiguredSemaphoreRegistry build() {
        ConfiguredSemaphoreRegistry registry = new ConfiguredSemaphoreRegistry();
        try {
            for (Map.Entry<String, SemaProperties.SemaphoreProperties> e : properties.semaphores().entrySet()) {
                String name = e.getKey();
                SemaProperties.SemaphoreProperties config = e.getValue();
                String at = Settings.semaphore(name);
                long permits = permits(at, config);
                long maxPermits = maxPermits(at, config, permits);
                ConfiguredPartitions partitions = ConfiguredPartitions.check(name, at, config, settings);
                Semaphore semaphore;
                if (config.redis()) {
                    if (redis == null) {
                        throw settings.invalid(at + ".redis", true, "there is no Redis to keep it in: sema-redis is"
                                + " not on the class path",
                                "Add dev.sema:sema-redis to the application's dependencies and set sema.redis.uri"
                                        + " (or define a RedisSemaphores bean), or make the semaphore local with "
                                        + at + ".redis=false.");
                    }
                    semaphore = redis.open(name, config, permits, maxPermits, partitions, settings);
                    registry.add(name, semaphore, false);
                } else {
                    semaphore = local(name, at, config, permits, maxPermits, partitions);
                    registry.add(name, semaphore, true);
                }
                if (config.adaptive() != null) {
                    Supplier<AdaptiveLimit> adaptive = adaptive(at, config.adaptive(), semaphore);
                    if (config.redis()) {
                        // A Redis semaphore not open yet gets its adaptive limit once it is (its stored limit is
                        // then known); one open now gets it now, and a mistake stops the start.
                        redis.whenOpen(semaphore, () -> registry.attach(name, adaptive));
                    } else {
                        registry.attach(name, adaptive);
                    }
                }
            }
            for (Map.Entry<String, SemaProperties.KeyedProperties> e : properties.keyed().entrySet()) {
                keyed(registry, e.getKey(), e.getValue());
            }
        } catch (RuntimeException failure) {
            // Nothing half-built outlives a failed start: refills stop, adaptive limits unregister.
            registry.close();
            throw failure;
        }
        return registry;
    }

    /** Checks and builds the family {@code name} into {@code registry}. */
    private void keyed(ConfiguredSemaphoreRegistry registry, String name, SemaProperties.KeyedProperties config) {
        String at = Settings.key("sema.keyed", name);
        if (config == null) {
            throw settings.invalid(at + ".permits", null, "is required: how many permits one key may hold at once",
                    "Set " + at + ".permits to 0 or more.");
        }
        if (properties.semaphores().containsKey(name)) {
            throw settings.invalid(at + ".permits", config.permits(), "'" + name + "' is also a semaphore ("
                    + Settings.semaphore(name) + "): a family and a semaphore cannot share a name, which"
                    + " @WithPermits and sema.web refer to", "Rename the family or the semaphore.");
        }
        if (config.permits() == null) {
            throw settings.invalid(at + ".permits", null, "is required: how many permits one key may hold at once",
                    "Set " + at + ".permits to 0 or more.");
        }
        long permits = config.permits();
        checkCount(at + ".permits", permits);
        if (config.redis()) {
            checkRedisKeyedFits(at, config);
        }
        long maxPermits = permits;
        if (config.maxPermits() != null) {
            maxPermits = config.maxPermits();
            checkCount(at + ".max-permits", maxPermits);
            if (maxPermits < permits) {
                throw settings.invalid(at + ".max-permits", maxPermits, "must not be below " + at + ".permits ("
                        + permits + ")", "Raise " + at + ".max-permits to at least " + permits + ", or leave it out"
                                + " (it defaults to permits).");
            }
        }
        int maxKeys = 100_000;
        if (config.maxKeys() != null) {
            if (config.maxKeys() < 1) {
                throw settings.invalid(at + ".max-keys", config.maxKeys(), "must be at least 1", "Set " + at
                        + ".max-keys to the most keys that may be live at once, or leave it out (100000).");
            }
            maxKeys = config.maxKeys();
        }
        Semaphore parent = config.parent() == null || config.parent().isBlank() ? null
                : parent(registry, at + ".parent", config.parent().trim());
        KeyedSemaphore<Object> family;
        if (config.redis()) {
            if (redis == null) {
                throw settings.invalid(at + ".redis", true, "there is no Redis to keep it in: sema-redis is not on"
                        + " the class path", "Add dev.sema:sema-redis to the application's dependencies and set"
                                + " sema.redis.uri (or define a RedisSemaphores bean), or make the family local with "
                                + at + ".redis=false.");
            }
            family = redis.openKeyed(name, config, permits, maxKeys, parent, settings);
        } else {
            if (config.lease() != null) {
                LOG.log(System.Logger.Level.WARNING, at + ".lease applies to keyed families on Redis only (redis:"
                        + " true); ignored");
            }
            if (config.expireWhenIdle() != null) {
                LOG.log(System.Logger.Level.WARNING, at + ".expire-when-idle applies to keyed families on Redis only"
                        + " (redis: true); ignored");
            }
            KeyedSemaphore.Builder<Object> builder = KeyedSemaphore.builder().name(name).permits(permits)
                    .maxPermits(maxPermits).leakDetection(config.leakDetection()).maxKeys(maxKeys);
            if (parent != null) {
                builder.parent(parent);
            }
            family = builder.build();
        }
        registry.addKeyed(name, family, permits);
    }

    /**
     * Refuses what a keyed family on Redis has no use for: a key's semaphore is created with its limit as its
     * ceiling and a key's view cannot be resized, and a lease, not leak detection, returns the permits of a holder
     * that is gone.
     */
    private void checkRedisKeyedFits(String at, SemaProperties.KeyedProperties config) {
        if (config.maxPermits() != null) {
            throw settings.invalid(at + ".max-permits", config.maxPermits(), "applies to local keyed families only: a"
                    + " key's semaphore on Redis has its limit as its ceiling (a key's limit cannot be changed at"
                    + " run time)", "Remove " + at + ".max-permits, or make the family local (" + at
                            + ".redis=false).");
        }
        if (config.leakDetection() != LeakDetection.OFF) {
            throw settings.invalid(at + ".leak-detection", config.leakDetection(), "applies to local keyed families"
                    + " only (on Redis, a key's lease returns the permits of a holder that stopped renewing it)",
                    "Remove " + at + ".leak-detection, or make the family local (" + at + ".redis=false).");
        }
    }

    /** The semaphore {@code api}, or the view of its partition {@code api/batch}, that {@code written} names. */
    private Semaphore parent(ConfiguredSemaphoreRegistry registry, String property, String written) {
        int slash = written.indexOf('/');
        String name = slash < 0 ? written : written.substring(0, slash);
        Semaphore semaphore = registry.find(name).orElseThrow(() -> settings.invalid(property, written,
                "names no semaphore (" + (registry.all().isEmpty() ? "sema.semaphores configures none"
                        : "there are " + registry.all().keySet()) + ")",
                "Name a semaphore of sema.semaphores (api), or a partition of one (api/batch)."));
        if (slash < 0) {
            return semaphore;
        }
        String partition = written.substring(slash + 1);
        if (!semaphore.partitionNames().contains(partition)) {
            throw settings.invalid(property, written, semaphore.partitionNames().isEmpty() ? "semaphore '" + name
                    + "' has no partitions" : "names no partition of semaphore '" + name + "' (its partitions are "
                            + semaphore.partitionNames() + ")", "Name one of the partitions of "
                                    + Settings.semaphore(name) + ".partitions, or the semaphore alone (" + name + ").");
        }
        return semaphore.partition(partition);
    }

    private long permits(String at, SemaProperties.SemaphoreProperties config) {
        Long permits = config == null ? null : config.permits();
        if (permits == null) {
            throw settings.invalid(at + ".permits", null, "is required: how many permits may be held at once",
                    "Set " + at + ".permits to 0 or more.");
        }
        checkCount(at + ".permits", permits);
        return permits;
    }

    private long maxPermits(String at, SemaProperties.SemaphoreProperties config, long permits) {
        Long max = config.maxPermits();
        if (max == null) {
            return permits;
        }
        checkCount(at + ".max-permits", max);
        if (max < permits) {
            throw settings.invalid(at + ".max-permits", max, "must not be below " + at + ".permits (" + permits + ")",
                    "Raise " + at + ".max-permits to at least " + permits + ", or leave it out (it defaults to "
                            + "permits).");
        }
        return max;
    }

    private void checkCount(String property, long value) {
        if (value < 0 || value > Semaphore.MAX_PERMITS) {
            throw settings.invalid(property, value, "must be between 0 and " + Semaphore.MAX_PERMITS
                    + " (Semaphore.MAX_PERMITS)", null);
        }
    }

    private Semaphore local(String name, String at, SemaProperties.SemaphoreProperties config, long permits,
            long maxPermits, ConfiguredPartitions partitions) {
        if (config.lease() != null) {
            LOG.log(System.Logger.Level.WARNING, at + ".lease applies to Redis semaphores only (redis: true); ignored");
        }
        if (config.expireWhenIdle() != null) {
            LOG.log(System.Logger.Level.WARNING, at + ".expire-when-idle applies to Redis semaphores only"
                    + " (redis: true); ignored");
        }
        Semaphore.Builder builder = Semaphore.builder().name(name).permits(permits).maxPermits(maxPermits)
                .fairness(config.fairness()).leakDetection(config.leakDetection());
        SemaProperties.Refill refill = config.refill();
        if (refill != null) {
            if (refill.permits() == null || refill.permits() < 1 || refill.permits() > Semaphore.MAX_PERMITS) {
                throw settings.invalid(at + ".refill.permits", refill.permits(),
                        refill.permits() == null ? "is required with a refill: how many permits each period adds"
                                : "must be between 1 and " + Semaphore.MAX_PERMITS, null);
            }
            if (refill.period() == null || refill.period().compareTo(Duration.ofMillis(1)) < 0) {
                throw settings.invalid(at + ".refill.period", refill.period(),
                        refill.period() == null ? "is required with a refill: how often it adds permits"
                                : "must be at least 1ms", null);
            }
            builder.refill(refill.permits(), refill.period());
        }
        partitions.forEach(builder::partition);
        return builder.build();
    }

    /** Redis-only settings are refused for a local semaphore; local-only ones for a Redis one. */
    static void checkRedisFits(String at, SemaProperties.SemaphoreProperties config, Settings settings) {
        if (config.fairness() != dev.sema.Fairness.FIFO) {
            throw settings.invalid(at + ".fairness", config.fairness(), "a Redis semaphore is always fifo",
                    "Remove " + at + ".fairness, or make the semaphore local (" + at + ".redis=false).");
        }
        if (config.leakDetection() != LeakDetection.OFF) {
            throw settings.invalid(at + ".leak-detection", config.leakDetection(), "applies to local semaphores only"
                    + " (a Redis semaphore's lease returns the permits of a holder that stopped renewing it)",
                    "Remove " + at + ".leak-detection, or make the semaphore local (" + at + ".redis=false).");
        }
        if (config.refill() != null) {
            throw settings.invalid(at + ".refill.period", config.refill().period(), "refill applies to local"
                    + " semaphores only", "Remove " + at + ".refill, or make the semaphore local (" + at
                    + ".redis=false).");
        }
    }

    /**
     * Checks {@code config} against {@code semaphore} now (its configured ceiling, for a Redis semaphore not open
     * yet) and returns what builds the adaptive limit on it.
     */
    private Supplier<AdaptiveLimit> adaptive(String at, SemaProperties.Adaptive config, Semaphore semaphore) {
        if (config.algorithm() == null) {
            throw settings.invalid(at + ".adaptive.algorithm", null, "is required with an adaptive limit: gradient"
                    + " (latency-based) or aimd (loss-based)", "Set " + at + ".adaptive.algorithm.");
        }
        AdaptiveLimit.Builder builder = config.algorithm() == SemaProperties.Algorithm.AIMD ? AdaptiveLimit.aimd()
                : AdaptiveLimit.gradient();
        if (config.minLimit() != null) {
            atLeastOne(at + ".adaptive.min-limit", config.minLimit());
            builder.minLimit(config.minLimit());
        }
        if (config.maxLimit() != null) {
            atLeastOne(at + ".adaptive.max-limit", config.maxLimit());
            builder.maxLimit(config.maxLimit());
        }
        if (config.initialLimit() != null) {
            atLeastOne(at + ".adaptive.initial-limit", config.initialLimit());
            builder.initialLimit(config.initialLimit());
        }
        long ceiling = Math.min(config.maxLimit() == null ? Long.MAX_VALUE : config.maxLimit(),
                semaphore.maxPermits());
        long min = config.minLimit() == null ? 1 : config.minLimit();
        if (min > ceiling) {
            throw settings.invalid(at + ".adaptive.min-limit", min, "is above the highest limit it may set ("
                    + ceiling + ": the lower of adaptive.max-limit and the semaphore's max-permits)", null);
        }
        if (config.initialLimit() != null && (config.initialLimit() < min || config.initialLimit() > ceiling)) {
            throw settings.invalid(at + ".adaptive.initial-limit", config.initialLimit(), "must be within "
                    + min + ".." + ceiling + " (adaptive.min-limit to the lower of adaptive.max-limit and"
                    + " max-permits)", null);
        }
        return () -> {
            try {
                return builder.build(semaphore);
            } catch (IllegalArgumentException | IllegalStateException e) {
                throw settings.invalid(at + ".adaptive", config, e.getMessage(), null, e);
            }
        };
    }

    private void atLeastOne(String property, long value) {
        if (value < 1) {
            throw settings.invalid(property, value, "must be at least 1", null);
        }
    }
}
