package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The permits that the processes of one test believe they hold, across every handle of one semaphore: a
 * belief starts when an acquire hands a permit over and ends at the first of its {@code close()} and its
 * {@code leaseLost()}. All the test's processes live in one JVM, so one counter is the fleet's view; its
 * maximum must never exceed the limit.
 */
final class Beliefs {
    private final long limit;
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong max = new AtomicLong();
    private final AtomicLong granted = new AtomicLong();
    private final AtomicLong lost = new AtomicLong();
    private final Map<Permit, AtomicBoolean> open = new ConcurrentHashMap<>();
    private volatile String firstBreach;

    Beliefs(long limit) {
        this.limit = limit;
    }

    /** A permit was handed over: the belief starts; it ends when the lease is lost, if that comes first. */
    RedisPermit believe(Permit permit) {
        RedisPermit p = (RedisPermit) permit;
        long n = p.permits();
        AtomicBoolean ended = new AtomicBoolean();
        open.put(p, ended);
        long now = held.addAndGet(n);
        granted.incrementAndGet();
        max.accumulateAndGet(now, Math::max);
        if (now > limit && firstBreach == null) {
            firstBreach = "believed held " + now + " > limit " + limit + " when " + p + " was handed over";
        }
        p.leaseLost().thenRun(() -> {
            if (ended.compareAndSet(false, true)) {
                held.addAndGet(-n);
                lost.incrementAndGet();
            }
        });
        return p;
    }

    /** Ends the belief, then closes the permit (the process stops using it before it gives it back). */
    void close(Permit permit) {
        AtomicBoolean ended = open.remove(permit);
        if (ended != null && ended.compareAndSet(false, true)) {
            held.addAndGet(-permit.permits());
        }
        permit.close();
    }

    long granted() {
        return granted.get();
    }

    long lost() {
        return lost.get();
    }

    long max() {
        return max.get();
    }

    /** Fails if the permits believed held ever exceeded the limit. */
    void check() {
        assertThat(firstBreach).as("never more believed held than the limit (max %d)", max.get()).isNull();
        assertThat(max.get()).isLessThanOrEqualTo(limit);
    }
}
