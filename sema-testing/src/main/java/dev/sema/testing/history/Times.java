package dev.sema.testing.history;

import java.util.Locale;

/** How reports write instants and lengths: instants relative to the history's first event. */
final class Times {

    private Times() {
    }

    /** An instant as seconds since the origin, to the microsecond: {@code +12.345678s}; "the end" for none. */
    static String at(long nanos, long origin) {
        if (nanos == Timeline.NEVER) {
            return "the end";
        }
        return String.format(Locale.ROOT, "+%.6fs", (nanos - origin) / 1e9);
    }

    /** A length: {@code 1.234ms} below a second, {@code 1.234s} from there. */
    static String length(long nanos) {
        if (nanos == Timeline.NEVER) {
            return "forever";
        }
        return Math.abs(nanos) < 1_000_000_000L
                ? String.format(Locale.ROOT, "%.3fms", nanos / 1e6)
                : String.format(Locale.ROOT, "%.3fs", nanos / 1e9);
    }
}
