package dev.sema.bench.partitions;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.FixedLimit;
import com.netflix.concurrency.limits.limiter.AbstractPartitionedLimiter;
import com.netflix.concurrency.limits.limiter.BlockingLimiter;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;

/**
 * One way to admit the requests of several traffic classes under one limit, each request waiting at most a
 * given time for one permit: the contenders of {@link PartitionSimulation}.
 */
interface ClassLimiter {
    /**
     * Waits at most the limiter's maximum wait for one permit for a request of class {@code cls} (an index
     * into the class names it was created with).
     *
     * @return the grant, to release once, or null if the request was refused
     */
    Grant acquire(int cls) throws InterruptedException;

    /** A granted permit. */
    interface Grant {
        void release();
    }

    List<String> KINDS = List.of("sema-partitioned", "sema-flat", "static-split", "netflix-partitioned");

    /** Whether this kind is one of Sema's, which must never let more than the limit in. */
    static boolean isSema(String kind) {
        return kind.startsWith("sema-") || kind.equals("static-split");
    }

    /**
     * A fresh limiter of this kind.
     *
     * @param names the classes in priority order (first = highest)
     * @param shares each class's share of the limit
     */
    static ClassLimiter create(String kind, int limit, List<String> names, double[] shares, Duration maxWait) {
        return switch (kind) {
            case "sema-partitioned" -> {
                Semaphore.Builder b = Semaphore.builder().name("api").permits(limit);
                for (int i = 0; i < names.size(); i++) {
                    b.partition(names.get(i), shares[i]);
                }
                Semaphore api = b.build();
                Semaphore[] views = names.stream().map(api::partition).toArray(Semaphore[]::new);
                yield cls -> sema(views[cls], maxWait);
            }
            case "sema-flat" -> {
                Semaphore api = Semaphore.builder().name("api").permits(limit).build();
                yield cls -> sema(api, maxWait);
            }
            case "static-split" -> {
                Semaphore[] own = new Semaphore[names.size()];
                for (int i = 0; i < own.length; i++) {
                    own[i] = Semaphore.builder().name("api-" + names.get(i)).permits(guarantee(shares[i], limit)).build();
                }
                yield cls -> sema(own[cls], maxWait);
            }
            case "netflix-partitioned" -> netflix(limit, names, shares, maxWait);
            default -> throw new IllegalArgumentException("unknown limiter " + kind + "; known: " + KINDS);
        };
    }

    /** floor(share × limit) on the decimal the share was written as, as Sema's partitions compute it. */
    static int guarantee(double share, int limit) {
        return BigDecimal.valueOf(share).multiply(BigDecimal.valueOf(limit)).setScale(0, RoundingMode.FLOOR).intValueExact();
    }

    private static Grant sema(Semaphore s, Duration maxWait) throws InterruptedException {
        try {
            Permit p = s.acquire(1, maxWait);
            return p::close;
        } catch (TimeoutException e) {
            return null;
        }
    }

    /**
     * Netflix's partitioned limiter (the anonymous {@code AbstractPartitionedLimiter} its builder builds once a
     * partition resolver is given) on a fixed limit, the class name as the context, wrapped in its
     * {@code BlockingLimiter} for the bounded wait: the library's own way to make a caller wait instead of
     * being refused at once.
     */
    private static ClassLimiter netflix(int limit, List<String> names, double[] shares, Duration maxWait) {
        NetflixBuilder b = new NetflixBuilder().named("api").limit(FixedLimit.of(limit)).partitionResolver(name -> name);
        for (int i = 0; i < names.size(); i++) {
            b.partition(names.get(i), shares[i]);
        }
        Limiter<String> blocking = BlockingLimiter.wrap(b.build(), maxWait);
        return cls -> {
            Optional<Limiter.Listener> l = blocking.acquire(names.get(cls));
            return l.<Grant>map(listener -> listener::onSuccess).orElse(null);
        };
    }

    /** The builder is abstract only for {@code self()}; the limiter it builds is the library's. */
    final class NetflixBuilder extends AbstractPartitionedLimiter.Builder<NetflixBuilder, String> {
        @Override
        protected NetflixBuilder self() {
            return this;
        }
    }
}
