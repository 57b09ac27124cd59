package dev.sema.examples;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One scrape in the Prometheus text format, read the way a Prometheus server reads it: one sample per line,
 * {@code name{label="value",...} number}; comments and blank lines skipped.
 */
final class Prometheus {
    private static final Pattern SAMPLE =
            Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})?\\s+(\\S+)(\\s+\\S+)?$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

    /** One line of a scrape. */
    record Sample(String name, Map<String, String> labels, double value) {
    }

    private final List<Sample> samples;

    private Prometheus(List<Sample> samples) {
        this.samples = samples;
    }

    /**
     * Reads a scrape.
     *
     * @throws IllegalArgumentException at the first line that is not a sample, a comment or blank
     */
    static Prometheus parse(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line.strip());
            if (!m.matches()) {
                throw new IllegalArgumentException("not a Prometheus sample: " + line);
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (m.group(3) != null) {
                Matcher l = LABEL.matcher(m.group(3));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
            }
            samples.add(new Sample(m.group(1), labels, value(m.group(4))));
        }
        return new Prometheus(samples);
    }

    private static double value(String text) {
        return switch (text) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            default -> Double.parseDouble(text);
        };
    }

    /**
     * The value of the one sample named {@code name} whose labels include these ({@code "name", "reports",
     * "outcome", "granted"}); {@code NaN} if there is none.
     *
     * @throws IllegalArgumentException if several samples match
     */
    double value(String name, String... labels) {
        double found = Double.NaN;
        int matches = 0;
        for (Sample s : samples) {
            if (s.name().equals(name) && has(s, labels)) {
                found = s.value();
                matches++;
            }
        }
        if (matches > 1) {
            throw new IllegalArgumentException(matches + " samples of " + name + " with labels " + List.of(labels));
        }
        return found;
    }

    /** Every sample's name, once each. */
    List<String> names() {
        return samples.stream().map(Sample::name).distinct().toList();
    }

    private static boolean has(Sample s, String... labels) {
        for (int i = 0; i + 1 < labels.length; i += 2) {
            if (!labels[i + 1].equals(s.labels().get(labels[i]))) {
                return false;
            }
        }
        return true;
    }
}
