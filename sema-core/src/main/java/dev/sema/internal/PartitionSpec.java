package dev.sema.internal;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The partitions of a semaphore as declared (API.md §11a): names in priority order and their shares, checked
 * once, and the guarantee each share gives under a limit. Both engines use it, so they accept, refuse and
 * compute alike.
 *
 * <p>Shares are kept as the decimals they were written as ({@link BigDecimal#valueOf(double)}), so that
 * {@code 0.29 × 100} is 29, not the 28 that binary floating point gives, and {@code 0.6 + 0.3 + 0.1} adds up
 * to exactly 1.
 */
public final class PartitionSpec {
    private final List<String> names;
    private final BigDecimal[] shares;
    /** Each share as numerator / denominator in longs, when it fits (always, for shares written as decimals). */
    private final long[] numerators;
    private final long[] denominators;

    private PartitionSpec(List<String> names, BigDecimal[] shares) {
        this.names = List.copyOf(names);
        this.shares = shares;
        this.numerators = new long[shares.length];
        this.denominators = new long[shares.length];
        for (int i = 0; i < shares.length; i++) {
            BigDecimal share = shares[i].stripTrailingZeros();
            int scale = Math.max(0, share.scale());
            if (scale <= 18 && share.movePointRight(scale).unscaledValue().bitLength() < 63) {
                numerators[i] = share.movePointRight(scale).longValueExact();
                denominators[i] = BigDecimal.TEN.pow(scale).longValueExact();
            }
        }
    }

    /**
     * Checks declared partitions: names non-empty and unique, each share in (0, 1], all adding up to at
     * most 1.
     *
     * @param semaphore the semaphore's name, for messages
     * @param names the names, in priority order (first = highest)
     * @param shares their shares, in the same order
     * @return the checked partitions
     * @throws IllegalArgumentException naming the partition and the numbers when a rule is broken
     */
    public static PartitionSpec of(String semaphore, List<String> names, List<Double> shares) {
        if (names.size() != shares.size()) {
            throw new IllegalArgumentException("partitions of semaphore '" + semaphore + "': " + names.size()
                    + " names but " + shares.size() + " shares");
        }
        Set<String> seen = new HashSet<>();
        BigDecimal[] exact = new BigDecimal[names.size()];
        BigDecimal sum = BigDecimal.ZERO;
        List<String> terms = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            double share = shares.get(i);
            if (name == null || name.isEmpty()) {
                throw new IllegalArgumentException("partition " + (i + 1) + " of semaphore '" + semaphore
                        + "' has an empty name; partition names must be non-empty");
            }
            if (!seen.add(name)) {
                throw new IllegalArgumentException("partition '" + name + "' of semaphore '" + semaphore
                        + "' is declared twice; partition names must be unique");
            }
            if (!(share > 0 && share <= 1)) { // also refuses NaN
                throw new IllegalArgumentException("partition '" + name + "' of semaphore '" + semaphore
                        + "' has share " + share + "; a share must be greater than 0 and at most 1");
            }
            exact[i] = BigDecimal.valueOf(share);
            sum = sum.add(exact[i]);
            terms.add(name + " " + share);
        }
        if (sum.compareTo(BigDecimal.ONE) > 0) {
            throw new IllegalArgumentException("the shares of the partitions of semaphore '" + semaphore
                    + "' add up to " + sum.stripTrailingZeros().toPlainString() + " (" + String.join(" + ", terms)
                    + "); they must add up to at most 1");
        }
        return new PartitionSpec(names, exact);
    }

    /**
     * The names, in priority order.
     *
     * @return an unmodifiable list
     */
    public List<String> names() {
        return names;
    }

    /**
     * How many partitions.
     *
     * @return the count
     */
    public int size() {
        return names.size();
    }

    /**
     * A partition's share.
     *
     * @param i its index in priority order
     * @return the share
     */
    public double share(int i) {
        return shares[i].doubleValue();
    }

    /**
     * A partition's guarantee under a limit: {@code floor(share × limit)}, exactly. The guarantees of all
     * partitions add up to at most the limit.
     *
     * @param i its index in priority order
     * @param limit the limit, {@code 0..MAX_PERMITS}
     * @return the guarantee
     */
    public long guarantee(int i, long limit) {
        long num = numerators[i];
        long den = denominators[i];
        if (den != 0 && Math.multiplyHigh(num, limit) == 0 && num * limit >= 0) {
            return num * limit / den; // exact: both non-negative, the product fits
        }
        return shares[i].multiply(BigDecimal.valueOf(limit)).setScale(0, RoundingMode.FLOOR).longValueExact();
    }

    /**
     * A partition's index.
     *
     * @param name its name
     * @return its index in priority order, or -1
     */
    public int indexOf(String name) {
        return names.indexOf(name);
    }

    /**
     * The failure of a lookup of a partition that was not declared.
     *
     * @param semaphore the semaphore's name
     * @param name the name asked for
     * @return an exception naming the known partitions
     */
    public IllegalArgumentException unknown(String semaphore, String name) {
        return new IllegalArgumentException("semaphore '" + semaphore + "' has no partition '" + name
                + "'; its partitions are " + names);
    }
}
