package dev.sema.micrometer;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * Durations recorded for the price of a counter: an exact count and total, and percentiles of the last
 * two minutes or so, with no clock read and no allocation per sample. {@link SemaphoreMetrics} keeps one
 * per timer it exports in its default mode and publishes it as a {@code FunctionTimer} (count, total)
 * and {@code .percentile} gauges (as Micrometer itself names them).
 *
 * <p>A sample is one increment of a bucket of the current window, and, when it is not 0, one add to the
 * total. Buckets are log-linear: values below {@link #SUB} nanoseconds exactly, above that {@link #SUB}
 * buckets per power of two, so a bucket is at most 1/8 of its value wide and a percentile, reported as its
 * bucket's middle, is within about 6% of a recorded value. Values from {@link #MAX_NANOS} on (about 2.4
 * hours) share the last bucket.
 *
 * <p>Rules kept here:
 * <ul>
 * <li>H1: writers never lock and never read a clock: they read {@code current} and increment one of its
 *     buckets. Windows are rotated by readers only ({@code synchronized}), when they find that a period has
 *     passed since the last rotation; so a histogram nobody reads costs nothing over time.</li>
 * <li>H2: the count is exact: {@code retired} + the buckets of every window. A rotation empties the oldest
 *     window bucket by bucket with {@code getAndSet(0)} into {@code retired} before making it current, so
 *     an increment lands either before its bucket is emptied (and is retired) or after (and stays in the
 *     window that is now current). Readers hold the lock, so the count they see never goes down.</li>
 * <li>H3: percentiles come from the {@link #WINDOWS} windows together: the samples of the last
 *     {@code WINDOWS - 1} to {@code WINDOWS} periods, and always every sample since the last read (a read
 *     rotates at most {@code WINDOWS - 1} times, so the window written since the last read is kept, however
 *     long ago that was: a scrape interval longer than the window loses no sample).</li>
 * <li>H4: the windows are allocated at the first sample, so a timer that never records (an outcome that
 *     never happens) holds no buckets.</li>
 * <li>H5: a window has {@link #STRIPES} copies of the buckets, {@link #STRIDE} apart; a thread increments
 *     those of the stripe its id picks, and readers add up all stripes, so H2 and H3 hold for their sums.</li>
 * </ul>
 */
final class TimeHistogram implements LongConsumer {
    /** Sub-buckets per power of two; values below it have a bucket each. */
    static final int SUB = 8;
    private static final int SUB_BITS = 3;
    /** Values from here on share the last bucket: 2^43 ns, about 2.4 hours. */
    static final long MAX_NANOS = 1L << 43;
    static final int BUCKETS = index(MAX_NANOS - 1) + 1;
    /**
     * Stripes of buckets in each window (H5): 1, 2 or 4, by the processors there are. A thread records in the stripe
     * of its id, so threads recording at once mostly write different cache lines.
     */
    static final int STRIPES = stripes(Runtime.getRuntime().availableProcessors());
    /** The distance between stripes: the buckets and a cache line, so no line holds two stripes' buckets. */
    static final int STRIDE = BUCKETS + 8;
    /** Windows in the ring; percentiles cover all of them (H3). */
    static final int WINDOWS = 3;
    /** How long one window is current, so percentiles cover 80 to 120 seconds, as Micrometer's do. */
    static final long PERIOD_NANOS = TimeUnit.SECONDS.toNanos(40);

    private final LongSupplier clock;
    private final LongAdder totalNanos = new LongAdder();
    /** Null until the first sample (H4); then one of {@code ring}. */
    private volatile AtomicLongArray current;

    // Guarded by this (readers and the first writer):
    private AtomicLongArray[] ring;
    private int currentIndex;
    private long rotatedAt;
    private long retired;

    /** A histogram whose windows turn by {@code System.nanoTime()}. */
    TimeHistogram() {
        this(System::nanoTime);
    }

    /**
     * A histogram whose windows turn by {@code clock}, read by readers only (and at the first sample).
     *
     * @param clock nanoseconds
     */
    TimeHistogram(LongSupplier clock) {
        this.clock = clock;
    }

    /**
     * Records one duration; negative durations count as 0.
     *
     * @param nanos the duration
     */
    void record(long nanos) {
        AtomicLongArray c = current;
        if (c == null) {
            c = start();
        }
        int stripe = ((int) Thread.currentThread().threadId() & (STRIPES - 1)) * STRIDE;
        if (nanos > 0) {
            c.getAndIncrement(stripe + index(nanos));
            totalNanos.add(nanos);
        } else {
            c.getAndIncrement(stripe);
        }
    }

    /** {@link #record}, for the listener that feeds either histograms or Micrometer timers. */
    @Override
    public void accept(long nanos) {
        record(nanos);
    }

    private synchronized AtomicLongArray start() {
        if (ring == null) {
            ring = new AtomicLongArray[WINDOWS];
            for (int i = 0; i < WINDOWS; i++) {
                ring[i] = new AtomicLongArray(STRIPES * STRIDE);
            }
            rotatedAt = clock.getAsLong();
            current = ring[0];
        }
        return current;
    }

    static int stripes(int processors) {
        return processors >= 4 ? 4 : processors >= 2 ? 2 : 1;
    }

    /**
     * The bucket of a value: values below 0 in the first, from {@link #MAX_NANOS} on in the last.
     *
     * @param value the value
     * @return its bucket
     */
    static int index(long value) {
        if (value < SUB) {
            return (int) Math.max(value, 0);
        }
        long v = Math.min(value, MAX_NANOS - 1);
        int e = 63 - Long.numberOfLeadingZeros(v);
        return (e - SUB_BITS + 1) * SUB + (int) ((v >>> (e - SUB_BITS)) & (SUB - 1));
    }

    /**
     * The smallest value of a bucket.
     *
     * @param index the bucket
     * @return its lower bound, in nanoseconds
     */
    static long lowerBound(int index) {
        if (index < SUB) {
            return index;
        }
        int e = index / SUB + SUB_BITS - 1;
        return (1L << e) + ((long) (index % SUB) << (e - SUB_BITS));
    }

    /** Every sample since the start (H2). */
    synchronized long count() {
        rotate(clock.getAsLong());
        long n = retired;
        if (ring != null) {
            for (AtomicLongArray w : ring) {
                for (int i = 0; i < w.length(); i++) {
                    n += w.get(i);
                }
            }
        }
        return n;
    }

    /** The sum of every sample since the start, in nanoseconds. */
    double totalNanos() {
        return totalNanos.sum();
    }

    /**
     * The value at or below which a fraction {@code phi} of the recent samples lie (H3), as the middle of its
     * bucket; 0 when there were none.
     *
     * @param phi in [0, 1]
     * @return nanoseconds
     */
    synchronized double percentileNanos(double phi) {
        rotate(clock.getAsLong());
        if (ring == null) {
            return 0;
        }
        long total = 0;
        for (AtomicLongArray w : ring) {
            for (int i = 0; i < w.length(); i++) {
                total += w.get(i);
            }
        }
        if (total == 0) {
            return 0;
        }
        // A second pass, bucket by bucket over the windows: counts only grow between the passes (rotations
        // hold this lock), so the rank is reached; no array is allocated per read.
        long rank = Math.max(1, (long) Math.ceil(phi * total));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            for (AtomicLongArray w : ring) {
                for (int stripe = 0; stripe < STRIPES; stripe++) {
                    seen += w.get(stripe * STRIDE + i);
                }
            }
            if (seen >= rank) {
                long low = lowerBound(i);
                long high = i + 1 < BUCKETS ? lowerBound(i + 1) : low + 1;
                return i < SUB ? low : (low + high - 1) / 2.0;
            }
        }
        return lowerBound(BUCKETS - 1);
    }

    /** Makes the oldest window current once per period passed, keeping the current one (H1, H2, H3). */
    private void rotate(long now) {
        if (ring == null) {
            return;
        }
        long periods = (now - rotatedAt) / PERIOD_NANOS;
        if (periods <= 0) {
            return;
        }
        for (long p = 0; p < Math.min(periods, WINDOWS - 1); p++) { // never the current one: H3
            int oldest = (currentIndex + 1) % WINDOWS;
            AtomicLongArray w = ring[oldest];
            for (int i = 0; i < w.length(); i++) {
                if (w.get(i) != 0) {
                    retired += w.getAndSet(i, 0);
                }
            }
            currentIndex = oldest;
            current = w;
        }
        rotatedAt += periods * PERIOD_NANOS;
    }
}
