package dev.sema;

import java.security.SecureRandom;

/**
 * The random seed of the stress suites: {@code -Dsema.seed=N} replays a run, otherwise a fresh one is drawn.
 * Every test prints it, and every failure message carries it.
 */
final class StressSeed {
    private static final long SEED = initial();

    private StressSeed() {
    }

    private static long initial() {
        String given = System.getProperty("sema.seed");
        if (given != null && !given.isBlank()) {
            return Long.decode(given.trim());
        }
        return new SecureRandom().nextLong();
    }

    /** The seed of this run, printed together with {@code test} and how to replay it. */
    static long of(String test) {
        System.out.println(test + ": seed " + SEED + " (replay with -Dsema.seed=" + SEED + ")");
        return SEED;
    }
}
