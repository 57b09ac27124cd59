package dev.sema.bench.adaptive;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.AIMDLimit;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.sema.AdaptiveLimit;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.util.Optional;

/**
 * One way to admit requests to the downstream, rejecting at once when its limit is reached: a fixed Sema
 * limit, a Sema {@link AdaptiveLimit}, or one of Netflix's {@code concurrency-limits} limiters.
 */
interface Admission {
    /** Admits a request, or refuses at once. */
    Optional<Ticket> tryAdmit();

    /** The limit now. */
    long limit();

    /** A request that was admitted, to report on once. */
    interface Ticket {
        void succeeded();

        void dropped();
    }

    /** The contenders of the simulation, each fresh, starting from {@code initial}. */
    static Admission create(String kind, int initial) {
        return switch (kind) {
            case "sema-aimd" -> sema(AdaptiveLimit.aimd(), initial);
            case "sema-gradient" -> sema(AdaptiveLimit.gradient(), initial);
            case "netflix-aimd" -> netflix(AIMDLimit.newBuilder().initialLimit(initial).build());
            case "netflix-gradient2" -> netflix(Gradient2Limit.newBuilder().initialLimit(initial).build());
            default -> {
                if (kind.startsWith("sema-gradient-")) { // another tolerance: sema-gradient-1.25
                    yield sema(AdaptiveLimit.gradient().tolerance(Double.parseDouble(kind.substring(14))), initial);
                }
                if (kind.startsWith("fixed-")) {
                    yield fixed(Integer.parseInt(kind.substring("fixed-".length())));
                }
                throw new IllegalArgumentException("unknown admission " + kind);
            }
        };
    }

    private static Admission fixed(int limit) {
        Semaphore s = Semaphore.builder().permits(limit).maxPermits(1_000).build();
        return new Admission() {
            @Override
            public Optional<Ticket> tryAdmit() {
                return s.tryAcquire().map(p -> new SemaTicket(p, null));
            }

            @Override
            public long limit() {
                return s.permits();
            }
        };
    }

    private static Admission sema(AdaptiveLimit.Builder builder, int initial) {
        Semaphore s = Semaphore.builder().permits(initial).maxPermits(1_000).name("simulated").build();
        AdaptiveLimit adaptive = builder.maxLimit(1_000).build(s);
        return new Admission() {
            @Override
            public Optional<Ticket> tryAdmit() {
                return s.tryAcquire().map(p -> new SemaTicket(p, adaptive));
            }

            @Override
            public long limit() {
                return adaptive.limit();
            }
        };
    }

    /** The permit is held for the call: its release is the latency sample. */
    record SemaTicket(Permit permit, AdaptiveLimit adaptive) implements Ticket {
        @Override
        public void succeeded() {
            permit.close();
        }

        @Override
        public void dropped() {
            if (adaptive != null) {
                adaptive.dropped();
            }
            permit.close();
        }
    }

    private static Admission netflix(com.netflix.concurrency.limits.Limit limit) {
        SimpleLimiter<Void> limiter = SimpleLimiter.newBuilder().limit(limit).build();
        return new Admission() {
            @Override
            public Optional<Ticket> tryAdmit() {
                Optional<Limiter.Listener> l = limiter.acquire(null);
                return l.map(listener -> new Ticket() {
                    @Override
                    public void succeeded() {
                        listener.onSuccess();
                    }

                    @Override
                    public void dropped() {
                        listener.onDropped();
                    }
                });
            }

            @Override
            public long limit() {
                return limiter.getLimit();
            }
        };
    }
}
