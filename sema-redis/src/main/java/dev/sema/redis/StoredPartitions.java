package dev.sema.redis;

import dev.sema.internal.PartitionSpec;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * A semaphore's partitions as stored in Redis, at the end of its meta value (partitions.lua): each share as
 * the decimal it was written as, {@code D s} meaning D x 10^-s, ';'-separated, then '|', then each name as its
 * length, ':' and the name. The scripts read the shares only, to compute each guarantee exactly as
 * {@link PartitionSpec#guarantee} does; the names are for the handles that open the semaphore.
 */
final class StoredPartitions {
    private StoredPartitions() {
    }

    /** The text stored for {@code spec}. */
    static String encode(PartitionSpec spec) {
        StringBuilder shares = new StringBuilder();
        StringBuilder names = new StringBuilder();
        for (int i = 0; i < spec.size(); i++) {
            // BigDecimal.valueOf gives back the decimal PartitionSpec keeps (it was made from the same double).
            BigDecimal share = BigDecimal.valueOf(spec.share(i)).stripTrailingZeros();
            if (share.scale() < 0) {
                share = share.setScale(0);
            }
            shares.append(i == 0 ? "" : ";").append(share.unscaledValue()).append(' ').append(share.scale());
            String name = spec.names().get(i);
            names.append(name.length()).append(':').append(name);
        }
        return shares + "|" + names;
    }

    /**
     * The partitions stored as {@code text}, checked again as a builder checks them.
     *
     * @throws RedisSemaphoreException if the text is not what {@link #encode} writes
     */
    static PartitionSpec decode(String semaphore, String text) {
        try {
            int bar = text.indexOf('|');
            List<Double> shares = new ArrayList<>();
            for (String part : text.substring(0, bar).split(";")) {
                String[] f = part.split(" ");
                shares.add(new BigDecimal(new BigInteger(f[0]), Integer.parseInt(f[1])).doubleValue());
            }
            List<String> names = new ArrayList<>();
            int at = bar + 1;
            while (at < text.length()) {
                int colon = text.indexOf(':', at);
                int length = Integer.parseInt(text.substring(at, colon));
                names.add(text.substring(colon + 1, colon + 1 + length));
                at = colon + 1 + length;
            }
            return PartitionSpec.of(semaphore, names, shares);
        } catch (RuntimeException e) {
            throw new RedisSemaphoreException("semaphore '" + semaphore + "': the partitions stored in Redis cannot be"
                    + " read: \"" + text + "\"", e);
        }
    }

    /** Whether two declarations are the same: names and shares, in the same order (null: none). */
    static boolean same(PartitionSpec a, PartitionSpec b) {
        if (a == null || b == null) {
            return a == b;
        }
        if (!a.names().equals(b.names())) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (Double.compare(a.share(i), b.share(i)) != 0) {
                return false;
            }
        }
        return true;
    }

    /** How messages show a declaration: {@code [checkout 0.6, batch 0.4]}, or {@code none}. */
    static String describe(PartitionSpec spec) {
        if (spec == null) {
            return "none";
        }
        List<String> terms = new ArrayList<>();
        for (int i = 0; i < spec.size(); i++) {
            terms.add(spec.names().get(i) + " " + spec.share(i));
        }
        return terms.toString();
    }
}
