package dev.sema.spring;

import dev.sema.Fairness;
import dev.sema.internal.PartitionSpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;

/**
 * The partitions of one semaphore as {@code sema.semaphores.<name>.partitions} declares them, checked: names in
 * priority order with their shares. The rules are {@link PartitionSpec}'s, the engines' own; they are applied
 * here entry by entry first, so that a mistake names the property that holds it
 * ({@code sema.semaphores.api.partitions.batch}) rather than the builder's argument.
 *
 * @param names the partitions' names, in priority order (first = highest)
 * @param shares their shares, in the same order
 */
record ConfiguredPartitions(List<String> names, List<Double> shares) {
    static final ConfiguredPartitions NONE = new ConfiguredPartitions(List.of(), List.of());

    ConfiguredPartitions {
        names = List.copyOf(names);
        shares = List.copyOf(shares);
    }

    /**
     * Checks the partitions of the semaphore {@code name}.
     *
     * @param name the semaphore's name
     * @param at its property prefix ({@link Settings#semaphore})
     * @param config its properties
     * @param settings for the order of declaration and the messages
     * @return the partitions, {@link #NONE} when it declares none
     * @throws SemaConfigurationException if a share is missing or out of range, two names are one to Spring
     *         Boot's relaxed binding, the shares add up to more than 1, or the semaphore is not fifo
     */
    static ConfiguredPartitions check(String name, String at, SemaProperties.SemaphoreProperties config,
            Settings settings) {
        Map<String, Double> bound = config.partitions();
        if (bound.isEmpty()) {
            return NONE;
        }
        String property = at + ".partitions";
        List<String> names = settings.declared(property, bound.keySet(), true, "partitions");
        List<Double> shares = new ArrayList<>(names.size());
        Map<String, String> relaxed = new HashMap<>();
        for (String partition : names) {
            String entry = Settings.key(property, partition);
            Double share = bound.get(partition);
            if (share == null) {
                throw settings.invalid(entry, null, "is required: the partition's share of the limit, greater than 0"
                        + " and at most 1", "Set " + entry + " to the share, e.g. 0.1.");
            }
            String twin = relaxed.putIfAbsent(relaxedForm(partition), partition);
            if (twin != null) {
                throw settings.invalid(entry, share, "partitions '" + twin + "' and '" + partition + "' are one name"
                        + " to Spring Boot's relaxed binding (an environment variable would set both)",
                        "Give the partitions names that differ by more than case, dashes and underscores.");
            }
            try {
                PartitionSpec.of(name, List.of(partition), List.of(share)); // the rules for one entry
            } catch (IllegalArgumentException e) {
                throw settings.invalid(entry, share, e.getMessage(), "Set " + entry + " to a share greater than 0"
                        + " and at most 1, the partition's part of the limit.");
            }
            shares.add(share);
        }
        try {
            PartitionSpec.of(name, names, shares); // the rules for them together
        } catch (IllegalArgumentException e) {
            String written = names.stream().map(n -> n + "=" + bound.get(n)).collect(Collectors.joining(", ", "{",
                    "}"));
            throw settings.invalid(property, written, e.getMessage(), "Lower the shares of " + property
                    + " so that they add up to at most 1.");
        }
        if (config.fairness() != Fairness.FIFO) {
            throw settings.invalid(at + ".fairness", config.fairness(), "a partitioned semaphore serves its"
                    + " partitions by guarantee and priority, which needs fifo (" + property + " declares " + names
                    + ")", "Remove " + at + ".fairness (fifo is the default), or remove " + property + ".");
        }
        return new ConfiguredPartitions(names, shares);
    }

    /** The name as Spring Boot's relaxed binding compares names: case, dashes and underscores aside. */
    private static String relaxedForm(String name) {
        return name.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "");
    }

    boolean isEmpty() {
        return names.isEmpty();
    }

    /**
     * Declares each partition, in priority order, to a builder: {@code partitions.forEach(builder::partition)}.
     *
     * @param declare what declares one partition
     */
    void forEach(BiConsumer<String, Double> declare) {
        for (int i = 0; i < names.size(); i++) {
            declare.accept(names.get(i), shares.get(i));
        }
    }
}
