package dev.sema.spring;

import java.time.Duration;
import java.util.Locale;

/** How the starter writes durations in messages: {@code 0ms}, {@code 250ms}, {@code 1.5s}, {@code 90s}. */
final class Durations {
    private Durations() {
    }

    static String format(Duration d) {
        if (d.isNegative()) {
            return "-" + format(d.negated());
        }
        if (d.compareTo(Duration.ofSeconds(1)) < 0) {
            long micros = d.toNanos() / 1_000;
            return micros % 1_000 == 0 || micros >= 10_000 ? (micros / 1_000) + "ms"
                    : String.format(Locale.ROOT, "%.1fms", micros / 1_000.0);
        }
        if (d.compareTo(Duration.ofSeconds(100)) < 0) {
            long millis = d.toMillis();
            return millis % 1_000 == 0 ? (millis / 1_000) + "s"
                    : String.format(Locale.ROOT, "%.1fs", millis / 1_000.0);
        }
        return d.toSeconds() + "s";
    }

    /** Whole seconds, rounded up, for a {@code Retry-After} header. */
    static long secondsUp(Duration d) {
        long s = d.getSeconds();
        return d.getNano() > 0 ? s + 1 : s;
    }
}
