package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * API.md §8: each algorithm's reaction to drops, success and latency, pinned with samples fed straight to
 * the listener methods (hold times chosen by the test) and a fake clock for backoff episodes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AdaptiveLimitTest {
    private static final long MS = 1_000_000;

    private final AtomicLong clock = new AtomicLong(1_000 * MS);

    private static Semaphore semaphore(long permits, long max) {
        return Semaphore.builder().permits(permits).maxPermits(max).name("downstream").build();
    }

    /** One window of {@code n} samples of {@code hold} each, with {@code inUse} permits granted at its start. */
    private static void window(AdaptiveLimit a, Semaphore s, long n, long inUse, long hold) {
        a.acquired(s, inUse, 0);
        for (long i = 0; i < n; i++) {
            a.released(s, i < inUse ? 1 : 0, hold);
        }
    }

    // ---- AIMD ----

    @Test
    void aimdGrowsByOnePerLimitsWorthOfUsedSamples() {
        Semaphore s = semaphore(10, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().clock(clock::get).build(s);
        window(a, s, 9, 10, MS);
        assertThat(a.limit()).as("nine samples are not yet a window of ten").isEqualTo(10);
        a.released(s, 1, MS);
        assertThat(a.limit()).isEqualTo(11);
        window(a, s, 11, 11, MS);
        assertThat(a.limit()).isEqualTo(12);
        assertThat(s.permits()).isEqualTo(12);
    }

    @Test
    void aimdDoesNotGrowWhileLessThanHalfTheLimitIsUsed() {
        Semaphore s = semaphore(10, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().build(s);
        for (int i = 0; i < 20; i++) {
            window(a, s, 10, 4, MS);
        }
        assertThat(a.limit()).isEqualTo(10);
        window(a, s, 10, 5, MS);
        assertThat(a.limit()).as("half the limit in use is use").isEqualTo(11);
    }

    @Test
    void aimdBacksOffOncePerEpisode() {
        Semaphore s = semaphore(40, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().clock(clock::get).build(s);
        window(a, s, 40, 1, 2 * MS); // unused: stays 40, and the smoothed hold time is 2 ms
        assertThat(a.limit()).isEqualTo(40);

        a.dropped();
        assertThat(a.limit()).isEqualTo(36);
        assertThat(s.permits()).isEqualTo(36);
        clock.addAndGet(MS);
        a.dropped();
        a.dropped();
        assertThat(a.limit()).as("drops within one hold time of the backoff are the same episode").isEqualTo(36);
        clock.addAndGet(MS);
        a.dropped();
        assertThat(a.limit()).as("floor(36 * 0.9)").isEqualTo(32);
    }

    @Test
    void aimdBackoffRatioIsTheBuilders() {
        Semaphore s = semaphore(40, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().backoff(0.5).build(s);
        a.dropped();
        assertThat(a.limit()).isEqualTo(20);
    }

    @Test
    void aTimeoutIsADropButARefusedTryAcquireIsNot() throws Exception {
        Semaphore s = semaphore(10, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().build(s);
        try (Permit all = s.acquire(10)) {
            assertThat(s.tryAcquire()).isEmpty();
            assertThat(a.limit()).isEqualTo(10);
            assertThatThrownBy(() -> s.acquire(1, Duration.ofMillis(1))).isInstanceOf(TimeoutException.class);
            assertThat(a.limit()).isEqualTo(9);
            assertThat(all.permits()).isEqualTo(10);
        }
        assertThat(s.availablePermits()).isEqualTo(9);
    }

    @Test
    void aHoldLongerThanDropAboveIsADrop() {
        Semaphore s = semaphore(20, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().dropAbove(Duration.ofMillis(50)).build(s);
        a.released(s, 0, 50 * MS);
        assertThat(a.limit()).isEqualTo(20);
        a.released(s, 0, 51 * MS);
        assertThat(a.limit()).isEqualTo(18);
    }

    @Test
    void realAcquiresAndReleasesDriveIt() throws Exception {
        Semaphore s = semaphore(4, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().build(s);
        for (int round = 0; round < 3; round++) {
            long limit = s.permits();
            Permit p = s.acquire(limit); // all of it in use
            for (long i = 0; i < limit; i++) {
                p.release(1);
            }
        }
        assertThat(a.limit()).isEqualTo(7);
        assertThat(s.permits()).isEqualTo(7);
        assertThat(s.availablePermits()).isEqualTo(7);
    }

    // ---- gradient ----

    @Test
    void gradientGrowsWhileLatencyHoldsAndShrinksWhenItRises() {
        Semaphore s = semaphore(20, 1_000);
        AdaptiveLimit a = AdaptiveLimit.gradient().clock(clock::get).build(s);
        window(a, s, 20, 20, 10 * MS);
        assertThat(a.limit()).as("the first window only sets the long-term hold time").isEqualTo(20);
        assertThat(a.longHoldNanos()).isEqualTo(10.0 * MS);

        window(a, s, 20, 20, 10 * MS);
        long grown = a.limit();
        assertThat(grown).as("20 + sqrt(20)").isEqualTo(24);
        window(a, s, grown, grown, 11 * MS); // within the tolerance of 1.15
        assertThat(a.limit()).isGreaterThan(grown);

        long before = a.limit();
        window(a, s, before, before, 40 * MS); // four times the long-term hold time
        long shrunk = a.limit();
        assertThat(shrunk).isLessThan(before);
        assertThat(shrunk).as("at most halved, then smoothed: three quarters").isGreaterThanOrEqualTo(before * 3 / 4 - 1);
        assertThat(shrunk).isLessThanOrEqualTo(before * 3 / 4 + 1);
    }

    @Test
    void gradientDoesNotGrowUnused() {
        Semaphore s = semaphore(20, 1_000);
        AdaptiveLimit a = AdaptiveLimit.gradient().build(s);
        for (int i = 0; i < 10; i++) {
            window(a, s, 20, 3, 10 * MS);
        }
        assertThat(a.limit()).isEqualTo(20);
    }

    @Test
    void gradientLongTermTakesAFallHalfWayAndARiseOverLongWindows() {
        Semaphore s = semaphore(20, 1_000);
        AdaptiveLimit a = AdaptiveLimit.gradient().longWindows(100).build(s);
        window(a, s, 20, 0, 100 * MS);
        window(a, s, 20, 0, 200 * MS);
        assertThat(a.longHoldNanos()).as("1/100 of the rise").isEqualTo(101.0 * MS);
        window(a, s, 20, 0, 1 * MS);
        assertThat(a.longHoldNanos()).as("half of the fall").isEqualTo(51.0 * MS);
    }

    @Test
    void gradientBacksOffOnADropToo() {
        Semaphore s = semaphore(50, 100);
        AdaptiveLimit a = AdaptiveLimit.gradient().build(s);
        a.dropped();
        assertThat(a.limit()).isEqualTo(45);
    }

    @Test
    void gradientOnlyOptionsAreRefusedOnAimd() {
        assertThatThrownBy(() -> AdaptiveLimit.aimd().tolerance(2)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("tolerance").hasMessageContaining("gradient()");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().smoothing(0.2)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> AdaptiveLimit.aimd().minWindow(5)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> AdaptiveLimit.aimd().longWindows(5)).isInstanceOf(IllegalStateException.class);
    }

    // ---- bounds and building ----

    @Test
    void staysWithinMinLimitAndTheCeiling() {
        Semaphore s = semaphore(10, 12);
        AdaptiveLimit a = AdaptiveLimit.aimd().minLimit(8).maxLimit(1_000).clock(clock::get).build(s);
        for (int i = 0; i < 10; i++) {
            window(a, s, a.limit(), a.limit(), MS);
        }
        assertThat(a.limit()).as("maxPermits caps maxLimit").isEqualTo(12);
        for (int i = 0; i < 10; i++) {
            clock.addAndGet(1_000 * MS);
            a.dropped();
        }
        assertThat(a.limit()).isEqualTo(8);
        assertThat(s.permits()).isEqualTo(8);
    }

    @Test
    void startsFromTheSemaphoresLimitBroughtWithinBounds() {
        Semaphore s = semaphore(100, 1_000);
        assertThat(AdaptiveLimit.aimd().maxLimit(50).build(s).limit()).isEqualTo(50);
        assertThat(s.permits()).isEqualTo(50);
        Semaphore t = semaphore(30, 1_000);
        assertThat(AdaptiveLimit.gradient().initialLimit(7).build(t).limit()).isEqualTo(7);
        assertThat(t.permits()).isEqualTo(7);
    }

    @Test
    void refusedBuildsChangeNothing() {
        Semaphore s = semaphore(10, 20);
        assertThatThrownBy(() -> AdaptiveLimit.aimd().minLimit(21).build(s))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minLimit (21)")
                .hasMessageContaining("(20)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().minLimit(5).maxLimit(4).build(s))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minLimit (5)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().minLimit(5).initialLimit(4).build(s))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initialLimit (4)")
                .hasMessageContaining("5..20");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().initialLimit(21).build(s))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initialLimit (21)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().build(null)).isInstanceOf(NullPointerException.class);
        assertThat(s.permits()).isEqualTo(10);
        // no listener was left behind: a timeout changes nothing
        Permit all = s.tryAcquire(10).orElseThrow();
        assertThatThrownBy(() -> s.acquire(1, Duration.ofMillis(1))).isInstanceOf(TimeoutException.class);
        assertThat(s.permits()).isEqualTo(10);
        all.close();

        Semaphore closed = semaphore(10, 20);
        closed.close();
        assertThatThrownBy(() -> AdaptiveLimit.aimd().build(closed)).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void aSemaphoreHasOneAdaptiveLimitAtATime() {
        Semaphore s = semaphore(10, 20);
        AdaptiveLimit first = AdaptiveLimit.aimd().build(s);
        assertThatThrownBy(() -> AdaptiveLimit.gradient().build(s)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already has an adaptive limit");
        first.close();
        try (AdaptiveLimit second = AdaptiveLimit.gradient().build(s)) {
            assertThat(second.limit()).isEqualTo(10);
        }
        AdaptiveLimit.aimd().build(semaphore(10, 20)).close(); // another semaphore: its own
    }

    @Test
    void listenerCallsAboutAnotherSemaphoreChangeNothing() {
        Semaphore s = semaphore(10, 20);
        Semaphore other = semaphore(10, 20);
        AdaptiveLimit adaptive = AdaptiveLimit.aimd().minLimit(2).build(s);
        for (int i = 0; i < 50; i++) {
            adaptive.rejected(other, 1, Rejection.TIMEOUT, 0); // would be drops, halving the limit each time
        }
        adaptive.limitChanged(other, 10, 3);
        adaptive.closed(other);
        assertThat(s.permits()).isEqualTo(10);
        assertThat(adaptive.toString()).doesNotContain("closed");
        adaptive.close();
    }

    @Test
    void badOptionsAreRefusedByName() {
        assertThatThrownBy(() -> AdaptiveLimit.aimd().minLimit(0)).hasMessageContaining("minLimit (0) must be at least 1");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().maxLimit(-1)).hasMessageContaining("maxLimit (-1)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().initialLimit(0)).hasMessageContaining("initialLimit (0)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().backoff(1)).hasMessageContaining("backoff (1.0)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().backoff(Double.NaN)).hasMessageContaining("backoff (NaN)");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().dropAbove(Duration.ZERO)).hasMessageContaining("dropAbove");
        assertThatThrownBy(() -> AdaptiveLimit.aimd().dropAbove(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> AdaptiveLimit.gradient().tolerance(0.9)).hasMessageContaining("tolerance (0.9)");
        assertThatThrownBy(() -> AdaptiveLimit.gradient().smoothing(0)).hasMessageContaining("smoothing (0.0)");
        assertThatThrownBy(() -> AdaptiveLimit.gradient().minWindow(0)).hasMessageContaining("minWindow (0)");
        assertThatThrownBy(() -> AdaptiveLimit.gradient().longWindows(0)).hasMessageContaining("longWindows (0)");
    }

    @Test
    void adoptsALimitSetBySomeoneElse() {
        Semaphore s = semaphore(10, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().build(s);
        s.setPermits(30);
        window(a, s, 30, 30, MS);
        assertThat(a.limit()).isEqualTo(31);
    }

    @Test
    void aLimitSetBySomeoneElseIsItsLimitAtOnce() {
        Semaphore s = semaphore(10, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().build(s);
        s.setPermits(30);
        assertThat(a.limit()).as("no sample has come since, so no decision has adopted it yet").isEqualTo(30);
        a.dropped();
        assertThat(a.limit()).as("the backoff starts from the adopted limit").isEqualTo(27);
        assertThat(s.permits()).isEqualTo(27);
    }

    @Test
    void algorithmIsNamedAsTheBuilderWasChosen() {
        assertThat(AdaptiveLimit.aimd().build(semaphore(10, 20)).algorithm()).isEqualTo("aimd");
        assertThat(AdaptiveLimit.gradient().build(semaphore(10, 20)).algorithm()).isEqualTo("gradient");
    }

    @Test
    void minLimitIsTheBuildersOrOne() {
        assertThat(AdaptiveLimit.aimd().minLimit(4).build(semaphore(10, 20)).minLimit()).isEqualTo(4);
        assertThat(AdaptiveLimit.gradient().build(semaphore(10, 20)).minLimit()).isEqualTo(1);
    }

    @Test
    void maxLimitIsTheBuildersCappedByMaxPermits() {
        assertThat(AdaptiveLimit.aimd().maxLimit(15).build(semaphore(10, 20)).maxLimit()).isEqualTo(15);
        assertThat(AdaptiveLimit.aimd().maxLimit(500).build(semaphore(10, 20)).maxLimit()).isEqualTo(20);
        assertThat(AdaptiveLimit.gradient().build(semaphore(10, 20)).maxLimit()).isEqualTo(20);
    }

    @Test
    void closeStopsAdjustingAndClosingTheSemaphoreClosesIt() {
        Semaphore s = semaphore(10, 100);
        AdaptiveLimit a = AdaptiveLimit.aimd().build(s);
        a.close();
        a.dropped();
        window(a, s, 10, 10, MS);
        assertThat(s.permits()).isEqualTo(10);
        assertThat(a.toString()).contains("closed");

        Semaphore t = semaphore(10, 100);
        AdaptiveLimit b = AdaptiveLimit.aimd().build(t);
        t.close();
        b.dropped();
        assertThat(t.permits()).isEqualTo(10);
        assertThat(b.toString()).contains("closed");
    }

    // ---- a shared (not local) semaphore ----

    /**
     * A semaphore that is not a LocalSemaphore (as a RedisSemaphore is not), recording who changes its limit;
     * listeners registered on it see nothing (the tests feed them), so one delegate stands for the one
     * semaphore in Redis that several processes share.
     */
    private static Semaphore shared(Semaphore delegate, List<String> setters) {
        return (Semaphore) Proxy.newProxyInstance(Semaphore.class.getClassLoader(), new Class<?>[] {Semaphore.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("addListener")) {
                        return null; // its events are fed by the test, as a process sees only its own
                    }
                    if (method.getName().equals("removeListener")) {
                        return true;
                    }
                    if (method.getName().equals("setPermits")) {
                        setters.add(Thread.currentThread().getName() + " " + args[0]);
                    }
                    try {
                        return method.invoke(delegate, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Test
    void onASharedSemaphoreProcessesThatSeeOneOverloadBackOffOnce() throws Exception {
        Semaphore redis = semaphore(40, 100);
        List<String> setters = new CopyOnWriteArrayList<>();
        AdaptiveLimit first = AdaptiveLimit.aimd().build(shared(redis, setters));
        AdaptiveLimit second = AdaptiveLimit.aimd().build(shared(redis, setters));
        first.dropped();
        Waiting.until("the first backoff applied", () -> first.limit() == 36);
        second.dropped(); // the same episode, seen by another process that last saw 40
        Waiting.until("the second adopts the shared 36", () -> second.limit() == 36);
        assertThat(redis.permits()).isEqualTo(36);
        assertThat(setters).hasSize(1);
        assertThat(setters.get(0)).startsWith("sema-adaptive-downstream 36");
    }

    @Test
    void onASharedSemaphoreGrowthFoundAlreadyMadeIsNotRepeated() throws Exception {
        Semaphore redis = semaphore(10, 100);
        List<String> setters = new CopyOnWriteArrayList<>();
        Semaphore p1 = shared(redis, setters);
        Semaphore p2 = shared(redis, setters);
        AdaptiveLimit first = AdaptiveLimit.aimd().build(p1);
        AdaptiveLimit second = AdaptiveLimit.aimd().build(p2);
        window(first, p1, 10, 10, MS);
        Waiting.until("the first growth applied", () -> first.limit() == 11);
        window(second, p2, 10, 10, MS);
        Waiting.until("the second finds 11 already", () -> second.limit() == 11);
        assertThat(redis.permits()).isEqualTo(11);
        assertThat(setters).hasSize(1);
    }
}
