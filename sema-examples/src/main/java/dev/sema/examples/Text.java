package dev.sema.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Formatting shared by the parts. */
final class Text {
    private Text() {
    }

    /** {@link String#format} in the root locale, so the output does not depend on the machine's. */
    static String format(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }

    /** Splits {@code text} into lines of at most {@code width} characters, at spaces where it can. */
    static List<String> wrap(String text, int width) {
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String word : text.split(" ")) {
            if (line.length() > 0 && line.length() + 1 + word.length() > width) {
                lines.add(line.toString());
                line.setLength(0);
            }
            if (line.length() > 0) {
                line.append(' ');
            }
            line.append(word);
        }
        if (line.length() > 0) {
            lines.add(line.toString());
        }
        return lines;
    }

    /** Milliseconds since {@code startNanos}. */
    static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
