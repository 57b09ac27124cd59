package dev.sema;

/**
 * The arithmetic of one {@link AdaptiveLimit} algorithm, apart from its threading: fed whole windows of
 * hold-time samples and drops (always under the adaptive limit's lock, so it needs no synchronization of
 * its own), it returns the next estimate of the limit, unclamped. The estimate is a {@code double} so that
 * growth smaller than one permit per window accumulates.
 */
abstract sealed class LimitControl permits LimitControl.Aimd, LimitControl.Gradient {
    /** The multiplier applied on a drop: {@code 0 < backoff < 1}. */
    final double backoff;

    LimitControl(double backoff) {
        this.backoff = backoff;
    }

    /** The algorithm's name, as {@code toString} shows it. */
    abstract String name();

    /**
     * How many samples make the next window.
     *
     * @param estimate the current estimate
     * @return at least 1
     */
    abstract long windowSize(double estimate);

    /**
     * A window ended with no drop in it.
     *
     * @param estimate the current estimate
     * @param meanHoldNanos the mean hold time of the window's samples
     * @param used whether demand reached at least half the limit during the window; an algorithm grows
     *     only then, so that an idle or lightly used semaphore does not drift up to its ceiling
     * @return the next estimate
     */
    abstract double onWindow(double estimate, double meanHoldNanos, boolean used);

    /**
     * A drop ended an episode of no drops: back off.
     *
     * @param estimate the current estimate
     * @return the next estimate
     */
    double onDrop(double estimate) {
        return estimate * backoff;
    }

    /** Loss-based: one permit more per limit's worth of samples, {@code backoff} times less on a drop. */
    static final class Aimd extends LimitControl {
        Aimd(double backoff) {
            super(backoff);
        }

        @Override
        String name() {
            return "aimd";
        }

        @Override
        long windowSize(double estimate) {
            return Math.max(1, (long) estimate);
        }

        @Override
        double onWindow(double estimate, double meanHoldNanos, boolean used) {
            return used ? estimate + 1 : estimate;
        }
    }

    /**
     * Latency-based. The short-term hold time is a window's mean; the long-term one is a slow moving
     * average of those means that follows a fall at once (half-way per window) and a rise only over
     * {@code longWindows} windows: it tracks the hold time of the uncongested downstream, so queueing is
     * not learnt as normal, while a downstream that has really become slower is adopted in time. While the short-term time stays within
     * {@code tolerance} times the long-term one, the limit grows by its square root (at least 1) per
     * window (when used); beyond it, the limit is scaled by {@code long / short} (at least halved), the concurrency at
     * which the downstream answered in the long-term time: requests in excess of its capacity only queue
     * there. {@code smoothing} blends each decreased value with the old one.
     */
    static final class Gradient extends LimitControl {
        final double tolerance;
        final double smoothing;
        final int minWindow;
        final int longWindows;
        private double longHold;

        Gradient(double backoff, double tolerance, double smoothing, int minWindow, int longWindows) {
            super(backoff);
            this.tolerance = tolerance;
            this.smoothing = smoothing;
            this.minWindow = minWindow;
            this.longWindows = longWindows;
        }

        @Override
        String name() {
            return "gradient";
        }

        @Override
        long windowSize(double estimate) {
            return Math.max(minWindow, (long) estimate);
        }

        @Override
        double onWindow(double estimate, double meanHoldNanos, boolean used) {
            if (longHold == 0) {
                longHold = meanHoldNanos;
                return estimate;
            }
            double shortHold = meanHoldNanos;
            double next;
            if (shortHold <= tolerance * longHold) {
                next = used ? estimate + Math.max(1, Math.sqrt(estimate)) : estimate;
            } else { // only the decrease is smoothed: it rests on one window's noisy mean
                next = estimate + (estimate * Math.max(0.5, longHold / shortHold) - estimate) * smoothing;
            }
            // A fall is taken at once (half-way per window); a rise, mostly queueing, over longWindows.
            double rate = shortHold <= longHold ? 0.5 : 1.0 / longWindows;
            longHold += (shortHold - longHold) * rate;
            return next;
        }

        /** The long-term hold time, for tests. */
        double longHold() {
            return longHold;
        }
    }
}
