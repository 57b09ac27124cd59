package dev.sema.examples;

import java.util.concurrent.atomic.AtomicLong;

/** A count that goes up and down, remembering its peak. */
final class Gauge {
    private final AtomicLong value = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();

    long add(long amount) {
        long now = value.addAndGet(amount);
        peak.accumulateAndGet(now, Math::max);
        return now;
    }

    void subtract(long amount) {
        value.addAndGet(-amount);
    }

    long value() {
        return value.get();
    }

    long peak() {
        return peak.get();
    }
}
