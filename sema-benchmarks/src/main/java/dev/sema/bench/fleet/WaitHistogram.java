package dev.sema.bench.fleet;

import java.util.Arrays;

/**
 * A log-linear histogram of durations in nanoseconds, with 1% relative precision from 1 µs to over an
 * hour (in the manner of HdrHistogram, without the dependency): bucket {@code i > 0} holds the values in
 * {@code [1 µs × 1.01^(i-1), 1 µs × 1.01^i)}, bucket 0 everything below 1 µs. Percentiles are reported
 * as their bucket's upper bound (at most 1% high), the maximum exactly. One per thread (not thread-safe);
 * merged with {@link #add}, and carried between processes as text ({@link #encode}, {@link #decode}).
 */
final class WaitHistogram {
    private static final double RATIO = 1.01;
    private static final double LOG_RATIO = Math.log(RATIO);
    private static final long FLOOR_NANOS = 1_000;
    private static final int BUCKETS = 2_500; // 1.01^2499 µs is about 17 hours

    private final long[] counts = new long[BUCKETS];
    private long count;
    private long max;
    private double sum;

    /** Records one duration. */
    void record(long nanos) {
        long v = Math.max(0, nanos);
        counts[index(v)]++;
        count++;
        sum += v;
        max = Math.max(max, v);
    }

    private static int index(long nanos) {
        if (nanos < FLOOR_NANOS) {
            return 0;
        }
        int i = 1 + (int) (Math.log(nanos / (double) FLOOR_NANOS) / LOG_RATIO);
        return Math.min(BUCKETS - 1, i);
    }

    /** The upper bound of bucket {@code i}, in nanoseconds. */
    private static double upper(int i) {
        return FLOOR_NANOS * Math.pow(RATIO, i);
    }

    /** Adds {@code other}'s values to this one's. */
    void add(WaitHistogram other) {
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] += other.counts[i];
        }
        count += other.count;
        sum += other.sum;
        max = Math.max(max, other.max);
    }

    long count() {
        return count;
    }

    /** The largest value recorded, in nanoseconds (0 when empty). */
    long max() {
        return max;
    }

    /** The mean, in nanoseconds (NaN when empty). */
    double mean() {
        return count == 0 ? Double.NaN : sum / count;
    }

    /**
     * The nearest-rank {@code q}-quantile ({@code 0 < q <= 1}), in nanoseconds: the upper bound of the
     * bucket that holds it, but never above the maximum; NaN when empty.
     */
    double percentile(double q) {
        if (count == 0) {
            return Double.NaN;
        }
        long rank = Math.max(1, (long) Math.ceil(q * count));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return Math.min(upper(i), max);
            }
        }
        return max;
    }

    /** {@code count/sum/max/i:n,i:n,...} over the non-empty buckets. */
    String encode() {
        StringBuilder b = new StringBuilder().append(count).append('/').append((long) sum).append('/').append(max)
                .append('/');
        boolean first = true;
        for (int i = 0; i < BUCKETS; i++) {
            if (counts[i] != 0) {
                b.append(first ? "" : ",").append(i).append(':').append(counts[i]);
                first = false;
            }
        }
        return b.toString();
    }

    /** The histogram {@link #encode()} wrote. */
    static WaitHistogram decode(String text) {
        String[] parts = text.split("/", -1);
        WaitHistogram h = new WaitHistogram();
        h.count = Long.parseLong(parts[0]);
        h.sum = Long.parseLong(parts[1]);
        h.max = Long.parseLong(parts[2]);
        if (!parts[3].isEmpty()) {
            for (String kv : parts[3].split(",")) {
                int colon = kv.indexOf(':');
                h.counts[Integer.parseInt(kv.substring(0, colon))] += Long.parseLong(kv.substring(colon + 1));
            }
        }
        long total = Arrays.stream(h.counts).sum();
        if (total != h.count) {
            throw new IllegalArgumentException("histogram counts " + total + " values, its header " + h.count);
        }
        return h;
    }
}
