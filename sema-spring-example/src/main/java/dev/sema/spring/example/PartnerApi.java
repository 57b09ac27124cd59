package dev.sema.spring.example;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * The partner API the quotes come from, simulated in process: it serves {@code capacity} calls at once, each for
 * {@code service-time}; further calls queue there (in arrival order), so that beyond its capacity every call takes
 * longer. That growing latency is what the adaptive limit of {@code inbound} watches: the permits of
 * {@code /api/**} are held for the whole request, the call to the partner included.
 */
@Component
public class PartnerApi {
    private final ReentrantLock lock = new ReentrantLock(true); // fair: calls are served in arrival order
    private final Condition free = lock.newCondition();
    private final int capacity;
    private final Duration serviceTime;
    private int serving; // guarded by lock

    /**
     * The partner's model.
     *
     * @param capacity how many calls it serves at once ({@code example.partner.capacity})
     * @param serviceTime how long it takes over each ({@code example.partner.service-time})
     */
    public PartnerApi(@Value("${example.partner.capacity:12}") int capacity,
            @Value("${example.partner.service-time:10ms}") Duration serviceTime) {
        if (capacity < 1) {
            throw new IllegalArgumentException("example.partner.capacity must be at least 1, not " + capacity);
        }
        this.capacity = capacity;
        this.serviceTime = serviceTime;
    }

    /**
     * Asks the partner for a quote: waits for one of its {@code capacity} slots, then for the service time.
     *
     * @param symbol what to quote
     * @return the quote
     * @throws InterruptedException if interrupted while waiting
     */
    public Quote quote(String symbol) throws InterruptedException {
        lock.lockInterruptibly();
        try {
            while (serving >= capacity) {
                free.await();
            }
            serving++;
        } finally {
            lock.unlock();
        }
        try {
            TimeUnit.NANOSECONDS.sleep(serviceTime.toNanos());
            return new Quote(symbol, 100 + Math.floorMod(symbol.hashCode(), 900) / 10.0);
        } finally {
            lock.lock();
            try {
                serving--;
                free.signal();
            } finally {
                lock.unlock();
            }
        }
    }

    /** How many calls the partner serves at once. */
    public int capacity() {
        return capacity;
    }

    /**
     * A price.
     *
     * @param symbol what was quoted
     * @param price its price
     */
    public record Quote(String symbol, double price) {
    }
}
