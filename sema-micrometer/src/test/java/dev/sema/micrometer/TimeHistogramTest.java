package dev.sema.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The rules H1 to H4 of {@link TimeHistogram}, and its buckets. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TimeHistogramTest {

    @Test
    void everyValueFallsInTheBucketWhoseBoundsHoldIt() {
        assertThat(TimeHistogram.index(-5)).isZero();
        for (long v = 0; v < 5000; v++) {
            checkBucket(v);
        }
        ThreadLocalRandom r = ThreadLocalRandom.current();
        for (int i = 0; i < 100_000; i++) {
            checkBucket(r.nextLong(TimeHistogram.MAX_NANOS));
        }
        checkBucket(TimeHistogram.MAX_NANOS - 1);
        assertThat(TimeHistogram.index(TimeHistogram.MAX_NANOS)).isEqualTo(TimeHistogram.BUCKETS - 1);
        assertThat(TimeHistogram.index(Long.MAX_VALUE)).isEqualTo(TimeHistogram.BUCKETS - 1);
    }

    private static void checkBucket(long v) {
        int i = TimeHistogram.index(v);
        assertThat(TimeHistogram.lowerBound(i)).as("lower bound of %d", v).isLessThanOrEqualTo(v);
        if (i + 1 < TimeHistogram.BUCKETS) {
            long upper = TimeHistogram.lowerBound(i + 1);
            assertThat(upper).as("upper bound of %d", v).isGreaterThan(v);
            assertThat((double) (upper - TimeHistogram.lowerBound(i))).as("width of the bucket of %d", v)
                    .isLessThanOrEqualTo(Math.max(1, v / 8.0));
        }
    }

    @Test
    void stripesFollowTheProcessorsUpToFour() {
        assertThat(TimeHistogram.stripes(1)).isEqualTo(1);
        assertThat(TimeHistogram.stripes(2)).isEqualTo(2);
        assertThat(TimeHistogram.stripes(3)).isEqualTo(2);
        assertThat(TimeHistogram.stripes(4)).isEqualTo(4);
        assertThat(TimeHistogram.stripes(96)).isEqualTo(4);
        assertThat(TimeHistogram.STRIDE % 8).as("stripes a whole number of cache lines apart").isZero();
    }

    @Test
    void percentilesAreWithinTheBucketWidthOfTheRecordedValues() {
        TimeHistogram h = new TimeHistogram(() -> 0);
        assertThat(h.percentileNanos(0.5)).as("no samples").isZero();
        for (long v = 1; v <= 1000; v++) {
            h.record(v * 1000); // 1 µs .. 1 ms
        }
        assertThat(h.percentileNanos(0.5)).isCloseTo(500_000, org.assertj.core.data.Percentage.withPercentage(6.5));
        assertThat(h.percentileNanos(0.99)).isCloseTo(990_000, org.assertj.core.data.Percentage.withPercentage(6.5));
        assertThat(h.percentileNanos(1.0)).isCloseTo(1_000_000, org.assertj.core.data.Percentage.withPercentage(6.5));
        assertThat(h.count()).isEqualTo(1000);
        assertThat(h.totalNanos()).isEqualTo(1000L * 1001 / 2 * 1000);
        h.record(0);
        h.record(-3);
        assertThat(h.count()).isEqualTo(1002);
        assertThat(h.totalNanos()).as("0 and negatives add nothing").isEqualTo(1000L * 1001 / 2 * 1000);
    }

    @Test
    void oldSamplesLeaveThePercentilesButNotTheCount() {
        AtomicLong now = new AtomicLong();
        TimeHistogram h = new TimeHistogram(now::get);
        for (int i = 0; i < 100; i++) {
            h.record(1_000_000); // 1 ms
        }
        now.addAndGet(TimeHistogram.PERIOD_NANOS);
        assertThat(h.percentileNanos(0.99)).as("in the window").isGreaterThan(900_000); // a read: turns the window
        h.record(5_000);
        now.addAndGet(TimeHistogram.PERIOD_NANOS * (TimeHistogram.WINDOWS - 1));
        assertThat(h.percentileNanos(0.99)).as("1 ms samples expired, the 5 µs one not yet")
                .isBetween(5_000 * 0.94, 5_000 * 1.06);
        now.addAndGet(TimeHistogram.PERIOD_NANOS * 100);
        assertThat(h.percentileNanos(0.99)).as("all expired").isZero();
        assertThat(h.count()).as("the count keeps every sample").isEqualTo(101);
        assertThat(h.totalNanos()).isEqualTo(100 * 1_000_000.0 + 5_000);
    }

    @Test
    void samplesSinceTheLastReadAreKeptHoweverLongAgoItWas() {
        AtomicLong now = new AtomicLong();
        TimeHistogram h = new TimeHistogram(now::get);
        h.record(1_000);
        h.count();
        now.addAndGet(TimeHistogram.PERIOD_NANOS * 1000); // a scrape interval far longer than the window
        h.record(2_000_000);
        assertThat(h.percentileNanos(0.99)).as("the samples since the last read").isBetween(1.88e6, 2.12e6);
        assertThat(h.percentileNanos(0.5)).isBetween(940.0, 1_060.0);
        now.addAndGet(TimeHistogram.PERIOD_NANOS * 1000);
        assertThat(h.percentileNanos(0.99)).as("read before this read's period: expired").isZero();
    }

    @Test
    void noSampleIsLostWhileReadersTurnTheWindows() throws Exception {
        AtomicLong now = new AtomicLong();
        TimeHistogram h = new TimeHistogram(now::get);
        int writers = 4;
        int each = 200_000;
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong wentDown = new AtomicLong(-1);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            threads.add(Thread.ofPlatform().start(() -> {
                ThreadLocalRandom r = ThreadLocalRandom.current();
                for (int i = 0; i < each; i++) {
                    h.record(r.nextLong(1, 1_000_000));
                }
            }));
        }
        Thread reader = Thread.ofPlatform().start(() -> {
            long last = 0;
            while (!done.get()) {
                now.addAndGet(TimeHistogram.PERIOD_NANOS); // a rotation at every read
                long c = h.count();
                if (c < last) {
                    wentDown.compareAndSet(-1, last);
                }
                last = c;
                h.percentileNanos(0.99);
            }
        });
        for (Thread t : threads) {
            t.join();
        }
        done.set(true);
        reader.join();
        assertThat(wentDown.get()).as("a count read after a larger one").isEqualTo(-1);
        assertThat(h.count()).isEqualTo((long) writers * each);
    }
}
