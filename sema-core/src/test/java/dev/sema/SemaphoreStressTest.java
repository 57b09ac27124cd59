package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.sema.internal.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import jdk.jfr.consumer.RecordingStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Races every operation against every other on platform and virtual threads, with random weights, and checks
 * the contract throughout: never more permits held than the limit allows (exactly, see {@link LimitWatch}),
 * queued waiters granted in arrival order, close under load failing or granting every waiter, and at the end
 * every permit back, nobody queued, the implementation's invariants intact, and (JFR) no virtual thread parked
 * while pinned.
 *
 * <p>Each run prints its seed; {@code -Dsema.seed=N} replays the random choices of a run (the interleaving,
 * of course, differs).
 */
@Tag("stress")
class SemaphoreStressTest {
    private static final int PLATFORM_THREADS = 8;
    private static final int VIRTUAL_THREADS = 2_000;
    /**
     * Multiplies the random race's operations (and its time bound): 1 in every build (about 10^5
     * operations per fairness); {@code -Dsema.stress.scale=100} runs about 10^7.
     */
    private static final int SCALE = Integer.getInteger("sema.stress.scale", 1);
    private static final int PLATFORM_OPS = 3_000 * SCALE;
    private static final int VIRTUAL_OPS = 40 * SCALE;
    private static final long CEILING = 16;
    private static final Duration JOIN_WITHIN = Duration.ofSeconds(60L * SCALE);
    private static final int MAX_RESIZES = (1 << 17) * Integer.highestOneBit(2 * SCALE - 1); // history grows with the scale

    /** Thrown into futures by the test itself (completeExceptionally). */
    static final class GaveUp extends RuntimeException {
        private static final long serialVersionUID = 1L;

        GaveUp() {
            super("gave up", null, false, false);
        }
    }

    // =====================================================================================================
    // Random race: every acquire style, cancellation, interrupt, resize and Permit operation at once.
    // =====================================================================================================

    /**
     * Observed: a listener counts every outcome and permit, and the counts must match what the callers saw.
     * Unobserved: no listener, so the async grants take the paths where the future is the Permit itself
     * (ReadyPermit, a granted Waiter), which a timed grant does not. {@code -Dsema.stress.observed=false}
     * (or true) runs only those.
     */
    @ParameterizedTest(name = "{0}, observed={1}")
    @CsvSource({"FIFO, true", "BARGING, true", "FIFO, false", "BARGING, false"})
    @Timeout(value = 120 * 1_000, unit = TimeUnit.SECONDS) // the real bound is the preemptive one below
    void heldPermitsNeverExceedTheLimitUnderRandomRaces(Fairness fairness, boolean observed) {
        String only = System.getProperty("sema.stress.observed"); // a long soak may pick one kind
        Assumptions.assumeTrue(only == null || Boolean.parseBoolean(only) == observed, "-Dsema.stress.observed=" + only);
        assertTimeoutPreemptively(Duration.ofSeconds(120L * SCALE), () -> randomRace(fairness, observed));
    }

    private static void randomRace(Fairness fairness, boolean observed) throws Exception {
        String name = "heldPermitsNeverExceedTheLimitUnderRandomRaces(" + fairness + (observed ? "" : ", unobserved")
                + ")";
        long seed = StressSeed.of(name);
        Semaphore s = Semaphore.builder().permits(CEILING).maxPermits(CEILING).fairness(fairness)
                .name("stress-" + fairness).build();
        // First use of a class or call site by many virtual threads at once pins them while one initializes it:
        // a small race of the same code first, so the recording below sees only the steady state.
        Semaphore warmUp = Semaphore.builder().permits(CEILING).maxPermits(CEILING).fairness(fairness).build();
        Race first = new Race(warmUp, seed - 1, 2, 50, 100, 10);
        first.run();
        assertThat(first.failures).as("warm-up, seed " + seed + ", hung " + first.hung).isEmpty();

        Race race = new Race(s, seed + fairness.ordinal(), PLATFORM_THREADS, VIRTUAL_THREADS, PLATFORM_OPS,
                VIRTUAL_OPS);
        // I7: the listeners see every ended request exactly once, with the outcome its caller saw.
        Map<Outcome, LongAdder> recorded = new EnumMap<>(Outcome.class);
        for (Outcome o : Outcome.values()) {
            recorded.put(o, new LongAdder());
        }
        LongAdder permitsGranted = new LongAdder();
        LongAdder permitsReleased = new LongAdder();
        if (observed) {
            s.addListener(new SemaphoreListener() {
                @Override
                public void acquired(Semaphore semaphore, long permits, long waitNanos) {
                    recorded.get(Outcome.GRANTED).increment();
                    permitsGranted.add(permits);
                }

                @Override
                public void released(Semaphore semaphore, long permits, long heldNanos) {
                    permitsReleased.add(permits);
                }

                @Override
                public void rejected(Semaphore semaphore, long permits, Rejection why, long waitNanos) {
                    recorded.get(Outcome.valueOf(why.name())).increment();
                }
            });
        }
        // Blocking must never pin: no virtual thread may park while pinned. Other pinned events are the JDK's
        // own brief ones (e.g. Thread.interrupted() contending with interrupt() for the thread's internal
        // lock), counted but not failed.
        List<String> parkedPinned = new ArrayList<>();
        LongAdder otherPinned = new LongAdder();
        try (RecordingStream jfr = new RecordingStream()) {
            jfr.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
            jfr.onEvent("jdk.VirtualThreadPinned", event -> {
                boolean parked = event.getStackTrace() != null && event.getStackTrace().getFrames().stream()
                        .anyMatch(f -> f.getMethod().getType().getName().equals(LockSupport.class.getName())
                                && f.getMethod().getName().startsWith("park"));
                if (!parked) {
                    otherPinned.increment();
                    return;
                }
                synchronized (parkedPinned) {
                    if (parkedPinned.size() < 5) {
                        parkedPinned.add(event.toString());
                    }
                }
            });
            jfr.startAsync();
            race.run();
            jfr.stop();
        }

        String context = "seed " + seed + ", " + race.stats + ", " + s;
        System.out.println(name + ": " + race.stats
                + ", max held " + race.watch.maxHeld() + ", resizes " + race.watch.resizes()
                + ", checks " + race.watch.checks() + ", pinned events without parking " + otherPinned);
        assertThat(race.failures).as(context).isEmpty();
        assertThat(race.watch.violation()).as(context).isNull();
        assertThat(race.hung).as(context + ": threads still running").isEmpty();

        // Every permit comes back (a grant that lost to a cancel is given back by whoever completed it).
        s.awaitIdleAsync().get(30, TimeUnit.SECONDS);
        assertThat(race.watch.held()).as(context).isZero();
        assertThat(s.availablePermits()).as(context).isEqualTo(s.permits());
        assertThat(s.queueLength()).as(context).isZero();
        ((LocalSemaphore) s).checkInvariants();
        assertThat(parkedPinned).as("virtual threads parked while pinned; " + context).isEmpty();

        // The run really raced: every kind of outcome happened.
        assertThat(race.stats.granted.sum()).as(context).isGreaterThan(1_000);
        assertThat(race.stats.refused.sum()).as(context).isPositive();
        assertThat(race.stats.timedOut.sum()).as(context).isPositive();
        assertThat(race.stats.cancelled.sum()).as(context).isPositive();
        assertThat(race.stats.interrupted.sum()).as(context).isPositive();
        assertThat(race.watch.resizes()).as(context).isPositive();
        if (!observed) {
            return;
        }
        assertThat(counts(recorded)).as("outcomes the listener saw vs the callers; " + context)
                .isEqualTo(counts(race.seen));
        // Every granted permit came back through exactly one `released`, or was forgotten (no event).
        assertThat(permitsReleased.sum() + race.stats.forgotten.sum()).as("permits released + forgotten; " + context)
                .isEqualTo(permitsGranted.sum());
    }

    private static Map<Outcome, Long> counts(Map<Outcome, LongAdder> tally) {
        Map<Outcome, Long> m = new EnumMap<>(Outcome.class);
        tally.forEach((k, v) -> m.put(k, v.sum()));
        return m;
    }

    static final class Stats {
        final LongAdder granted = new LongAdder();
        final LongAdder refused = new LongAdder();
        final LongAdder timedOut = new LongAdder();
        final LongAdder cancelled = new LongAdder();
        final LongAdder interrupted = new LongAdder();
        final LongAdder forgotten = new LongAdder();

        @Override
        public String toString() {
            return "granted " + granted + ", refused " + refused + ", timed out " + timedOut + ", cancelled "
                    + cancelled + ", interrupted " + interrupted + ", forgotten " + forgotten;
        }
    }

    /** One random race over one semaphore. */
    static final class Race {
        final Semaphore s;
        final long seed;
        final LimitWatch watch;
        final Stats stats = new Stats();
        /** Every acquire request's end, as its caller saw it. */
        final Map<Outcome, LongAdder> seen = new EnumMap<>(Outcome.class);
        final ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        final List<String> hung = new ArrayList<>();
        final int platformThreads;
        final int platformOps;
        final int virtualOps;
        final Thread[] workers;
        final CountDownLatch finished;

        Race(Semaphore s, long seed, int platformThreads, int virtualThreads, int platformOps, int virtualOps) {
            this.s = s;
            this.seed = seed;
            this.watch = new LimitWatch(s, MAX_RESIZES);
            this.platformThreads = platformThreads;
            this.platformOps = platformOps;
            this.virtualOps = virtualOps;
            this.workers = new Thread[platformThreads + virtualThreads];
            this.finished = new CountDownLatch(workers.length);
            for (Outcome o : Outcome.values()) {
                seen.put(o, new LongAdder());
            }
        }

        private void saw(Outcome o) {
            seen.get(o).increment();
        }

        void run() throws InterruptedException {
            for (int i = 0; i < workers.length; i++) {
                int index = i;
                boolean platform = i < platformThreads;
                int ops = platform ? platformOps : virtualOps;
                Runnable body = () -> {
                    try {
                        work(new SplittableRandom(seed * 31 + index), ops);
                    } catch (Throwable e) {
                        failures.add(e);
                    } finally {
                        finished.countDown();
                    }
                };
                workers[i] = platform ? Thread.ofPlatform().name("stress-p" + i).unstarted(body)
                        : Thread.ofVirtual().name("stress-v" + i).unstarted(body);
            }
            Thread chaos = Thread.ofPlatform().name("stress-chaos").start(this::chaos);
            for (Thread t : workers) {
                t.start();
            }
            long deadline = System.nanoTime() + JOIN_WITHIN.toNanos();
            while (!finished.await(100, TimeUnit.MILLISECONDS) && System.nanoTime() - deadline < 0) {
                if (!failures.isEmpty()) {
                    // Failed: end the waits still going on (workers start nothing new once a failure is in).
                    s.setPermits(CEILING);
                    for (Thread t : workers) {
                        t.interrupt();
                    }
                }
            }
            for (Thread t : workers) {
                if (!t.join(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) {
                    hung.add(t.getName() + " " + t.getState() + " " + Arrays.toString(t.getStackTrace()));
                }
            }
            if (!hung.isEmpty()) {
                for (Thread t : workers) {
                    t.interrupt(); // let the rest of the suite run; the test fails on `hung`
                }
            }
            chaos.join(JOIN_WITHIN);
        }

        /** Interrupts workers, resizes, and now and then restores the full limit so that every waiter can end. */
        private void chaos() {
            SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
            try {
                while (finished.getCount() > 0 && failures.isEmpty()) {
                    int roll = random.nextInt(100);
                    if (roll < 50) {
                        workers[random.nextInt(workers.length)].interrupt();
                    } else if (roll < 70 && watch.resizes() < MAX_RESIZES / 2) {
                        watch.resizeRandomly(random); // bounded, so that a slow run still has room to heal
                    } else if (roll < 75 && watch.resizes() < MAX_RESIZES / 2) {
                        watch.resize(LimitWatch.Resize.SET, CEILING);
                    }
                    watch.check();
                    LockSupport.parkNanos(random.nextLong(20_000, 200_000));
                }
            } catch (Throwable e) {
                failures.add(e);
            }
            // Whoever still waits for more than the limit gets it (no acquirer is inside any more, or the race
            // has failed already: the watch need not know).
            s.setPermits(CEILING);
        }

        private void work(SplittableRandom random, int ops) {
            for (int op = 0; op < ops && failures.isEmpty(); op++) {
                int token = watch.enter();
                try {
                    acquireOnce(random);
                } finally {
                    watch.exit(token);
                }
                if (random.nextInt(64) == 0 && watch.resizes() < MAX_RESIZES / 2) {
                    watch.resizeRandomly(random);
                }
            }
            Thread.interrupted(); // a late interrupt of the chaos thread must not leak into anything else
        }

        private void acquireOnce(SplittableRandom random) {
            long n = 1 + random.nextLong(CEILING);
            switch (random.nextInt(11)) {
                case 0 -> {
                    try {
                        hold(granted(s.acquire(n)), n, random);
                    } catch (InterruptedException e) {
                        saw(Outcome.INTERRUPTED);
                        stats.interrupted.increment();
                    }
                }
                case 1 -> {
                    try {
                        hold(granted(s.acquire(n, timeout(random))), n, random);
                    } catch (TimeoutException e) {
                        saw(Outcome.TIMEOUT);
                        stats.timedOut.increment();
                    } catch (InterruptedException e) {
                        saw(Outcome.INTERRUPTED);
                        stats.interrupted.increment();
                    }
                }
                case 2 -> {
                    Optional<Permit> p = s.tryAcquire(n);
                    if (p.isPresent()) {
                        hold(granted(p.get()), n, random);
                    } else {
                        saw(Outcome.UNAVAILABLE);
                        stats.refused.increment();
                    }
                }
                case 3 -> hold(await(s.acquireAsync(n)), n, random);
                case 4 -> {
                    CompletableFuture<Permit> f = s.acquireAsync(n);
                    spin(random);
                    if (f.cancel(random.nextBoolean())) {
                        saw(Outcome.CANCELLED);
                        stats.cancelled.increment();
                    } else {
                        hold(await(f), n, random);
                    }
                }
                case 5 -> hold(await(s.acquireAsync(n).orTimeout(random.nextLong(1, 2_000), TimeUnit.MICROSECONDS)),
                        n, random);
                case 6 -> {
                    CompletableFuture<Permit> f = s.acquireAsync(n);
                    spin(random);
                    if (f.completeExceptionally(new GaveUp())) {
                        saw(Outcome.CANCELLED);
                        stats.cancelled.increment();
                    } else {
                        hold(await(f), n, random);
                    }
                }
                case 7 -> hold(await(s.acquireAsync(n, timeout(random))), n, random);
                case 8 -> {
                    try {
                        s.withPermits(n, () -> {
                            inside(n, random);
                            return null;
                        });
                    } catch (InterruptedException e) {
                        saw(Outcome.INTERRUPTED);
                        stats.interrupted.increment();
                    }
                }
                case 9 -> {
                    SplittableRandom forAction = random.split();
                    CompletableFuture<Object> result = s.withPermitsAsync(n, () -> {
                        inside(n, forAction);
                        return CompletableFuture.completedFuture(null);
                    });
                    // Not cancelled on interrupt: the action may be running on another thread, and must be
                    // done before this acquirer exits the watch. Only a failed race stops waiting.
                    for (;;) {
                        try {
                            result.get();
                            break;
                        } catch (InterruptedException e) {
                            if (!failures.isEmpty()) {
                                return;
                            }
                        } catch (ExecutionException e) {
                            throw new AssertionError("withPermitsAsync failed", e.getCause());
                        }
                    }
                }
                default -> {
                    try {
                        hold(granted(s.acquire()), 1, random);
                    } catch (InterruptedException e) {
                        saw(Outcome.INTERRUPTED);
                        stats.interrupted.increment();
                    }
                }
            }
        }

        /** The body of withPermits: holds n permits it cannot see. */
        private void inside(long n, SplittableRandom random) {
            saw(Outcome.GRANTED);
            watch.acquired(n);
            stats.granted.increment();
            spin(random);
            watch.released(n);
        }

        /** Uses a permit of n in a random way, then gives everything back. Null: nothing was granted. */
        private void hold(Permit p, long n, SplittableRandom random) {
            if (p == null) {
                return;
            }
            check(p.permits() == n, "granted Permit holds " + p.permits() + ", asked " + n);
            watch.acquired(n);
            stats.granted.increment();
            spin(random);
            switch (random.nextInt(8)) {
                case 0 -> {
                    long k = random.nextLong(n + 1);
                    watch.released(k);
                    p.release(k);
                    check(p.permits() == n - k, "release(" + k + ") of " + n + " left " + p.permits());
                }
                case 1 -> {
                    long k = random.nextLong(n + 1);
                    Permit part = p.split(k);
                    check(part.permits() == k && p.permits() == n - k, "split(" + k + ") of " + n);
                    spin(random);
                    watch.released(part.permits());
                    part.close();
                    part.close();
                }
                case 2 -> {
                    long m = 1 + random.nextLong(CEILING);
                    Optional<Permit> extra = s.tryAcquire(m);
                    saw(extra.isPresent() ? Outcome.GRANTED : Outcome.UNAVAILABLE);
                    if (extra.isPresent()) {
                        watch.acquired(m);
                        long before = p.permits();
                        p.merge(extra.get());
                        check(p.permits() == before + m && extra.get().permits() == 0, "merge of " + m);
                    }
                }
                case 3 -> {
                    long k = p.permits();
                    watch.released(k);
                    p.forget();
                    stats.forgotten.add(k);
                    check(p.permits() == 0, "forget left " + p.permits());
                }
                default -> {
                }
            }
            spin(random);
            long rest = p.permits();
            watch.released(rest);
            p.close();
            p.close();
            check(p.permits() == 0, "close left " + p.permits());
        }

        private Permit granted(Permit p) {
            saw(Outcome.GRANTED);
            return p;
        }

        /** The permit of a future, or null when it failed as the test provoked (timeout, cancel). */
        private Permit await(CompletableFuture<Permit> f) {
            for (;;) {
                try {
                    return granted(f.get());
                } catch (InterruptedException e) {
                    stats.interrupted.increment();
                    if (f.cancel(false)) {
                        saw(Outcome.CANCELLED);
                        return null;
                    }
                    // Lost to the outcome: read it.
                } catch (CancellationException e) {
                    saw(Outcome.CANCELLED);
                    stats.cancelled.increment();
                    return null;
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof TimeoutException) {
                        saw(Outcome.TIMEOUT);
                        stats.timedOut.increment();
                    } else if (cause instanceof GaveUp) {
                        saw(Outcome.CANCELLED);
                        stats.cancelled.increment();
                    } else {
                        throw new AssertionError("unexpected failure of an acquire", cause);
                    }
                    return null;
                }
            }
        }

        private static Duration timeout(SplittableRandom random) {
            return switch (random.nextInt(8)) {
                case 0 -> Duration.ZERO;
                case 1 -> Duration.ofMillis(-1);
                default -> Duration.ofNanos(random.nextLong(1_000, 2_000_000));
            };
        }

        private static void spin(SplittableRandom random) {
            for (int i = random.nextInt(4); i > 0; i--) {
                Thread.yield();
            }
        }

        private static void check(boolean ok, String message) {
            if (!ok) {
                throw new AssertionError(message);
            }
        }
    }

    // =====================================================================================================
    // FIFO order: waiters that were queued are granted in arrival order.
    // =====================================================================================================

    /** One acquireAsync of the arrival thread; {@code queued}: its future was not done when the call returned. */
    record Arrival(int index, long permits, CompletableFuture<Permit> future, boolean queued) {
    }

    /**
     * One thread arrives (acquireAsync with random weights) while this thread releases, cancels and resizes at
     * random. Every grant of a queued waiter happens in a call made by this thread and is completed before the
     * call returns, so after each call the state is exact: a queued waiter granted while an earlier one still
     * waits breaks FIFO, and a head waiter that fits but still waits breaks "granted as soon as it fits".
     */
    @ParameterizedTest
    @EnumSource(Fairness.class)
    @Timeout(60)
    void queuedWaitersAreGrantedInArrivalOrder(Fairness fairness) throws Exception {
        long seed = StressSeed.of("queuedWaitersAreGrantedInArrivalOrder(" + fairness + ")");
        SplittableRandom random = new SplittableRandom(seed + 17 * fairness.ordinal());
        Semaphore s = Semaphore.builder().permits(CEILING / 2).maxPermits(CEILING).fairness(fairness)
                .name("fifo-" + fairness).build();
        int arrivals = 100_000;
        Arrival[] log = new Arrival[arrivals];
        AtomicInteger published = new AtomicInteger();
        SplittableRandom arrivalRandom = random.split();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        Thread arriver = Thread.ofPlatform().name("fifo-arrivals").start(() -> {
            try {
                for (int i = 0; i < arrivals; i++) {
                    while (s.queueLength() >= 48) {
                        Thread.yield(); // keep the queue short enough that the releaser reaches every waiter
                    }
                    long n = 1 + arrivalRandom.nextLong(CEILING);
                    CompletableFuture<Permit> f = s.acquireAsync(n);
                    log[i] = new Arrival(i, n, f, !f.isDone());
                    published.set(i + 1);
                }
            } catch (Throwable e) {
                failures.add(e);
            }
        });

        List<Arrival> waiting = new ArrayList<>();
        List<Permit> holding = new ArrayList<>();
        int seen = 0;
        int queued = 0;
        long actions = 0;
        String context = "seed " + seed;
        while (failures.isEmpty()) {
            int upTo = Math.min(published.get(), arrivals);
            for (; seen < upTo; seen++) {
                Arrival a = log[seen];
                if (a.queued()) {
                    waiting.add(a);
                    queued++;
                } else {
                    // Took permits at once, or was queued and granted before its call returned. Under FIFO
                    // either way needs every earlier waiter decided first (they stay decided).
                    if (fairness == Fairness.FIFO) {
                        for (Arrival earlier : waiting) {
                            if (!earlier.future().isDone()) {
                                fail("arrival #" + a.index() + " (" + a.permits() + " permits) got permits while "
                                        + "the earlier waiter #" + earlier.index() + " (" + earlier.permits()
                                        + " permits) still waits; " + context + ", now " + s);
                            }
                        }
                    }
                    holding.add(a.future().join());
                }
            }
            Arrival head = collectAndCheckOrder(s, waiting, holding, context);
            if (waiting.isEmpty()) {
                if (seen == arrivals) {
                    break;
                }
                Thread.yield(); // nobody queued: let arrivals use up the permits and queue
                continue;
            }
            actions++;
            int roll = random.nextInt(100);
            if (head != null && holding.isEmpty() && head.permits() > s.availablePermits()) {
                s.setPermits(CEILING); // nothing left to release: make room for the head
            } else if (roll < 55 && !holding.isEmpty()) {
                Permit p = holding.get(random.nextInt(holding.size()));
                if (random.nextBoolean() && p.permits() > 1) {
                    p.release(1 + random.nextLong(p.permits() - 1));
                } else {
                    p.close();
                    holding.remove(p);
                }
            } else if (roll < 70 && !waiting.isEmpty()) {
                CompletableFuture<Permit> f = waiting.get(random.nextInt(waiting.size())).future();
                if (random.nextBoolean()) {
                    f.cancel(false);
                } else {
                    f.completeExceptionally(new GaveUp());
                }
            } else if (roll < 85) {
                s.setPermits(random.nextLong(CEILING / 2, CEILING + 1));
            } else if (roll < 92) {
                s.addPermits(1 + random.nextLong(4));
            } else {
                s.reducePermits(1 + random.nextLong(4));
            }
        }
        arriver.join(JOIN_WITHIN);
        context = "seed " + seed + ", " + s;
        assertThat(failures).as(context).isEmpty();
        assertThat(arriver.isAlive()).as(context).isFalse();
        holding.forEach(Permit::close);
        System.out.println("queuedWaitersAreGrantedInArrivalOrder(" + fairness + "): " + queued + " of " + arrivals
                + " arrivals queued, " + actions + " release/cancel/resize calls");
        assertThat(queued).as(context).isGreaterThan(arrivals / 4);
        assertThat(s.availablePermits()).as(context).isEqualTo(s.permits());
        assertThat(s.queueLength()).as(context).isZero();
        ((LocalSemaphore) s).checkInvariants();
    }

    /**
     * Drops decided waiters from {@code waiting} (their permits into {@code holding}), failing if one was granted
     * while an earlier one still waits, or if the first one still waiting fits; returns that one (or null).
     */
    private static Arrival collectAndCheckOrder(Semaphore s, List<Arrival> waiting, List<Permit> holding,
            String context) {
        Arrival head = null;
        for (var it = waiting.iterator(); it.hasNext(); ) {
            Arrival a = it.next();
            CompletableFuture<Permit> f = a.future();
            if (!f.isDone()) {
                if (head == null) {
                    head = a;
                }
                continue;
            }
            it.remove();
            if (f.isCompletedExceptionally()) {
                continue; // cancelled by this thread
            }
            holding.add(f.join());
            if (head != null) {
                fail("waiter #" + a.index() + " (" + a.permits() + " permits) was granted while the earlier waiter #"
                        + head.index() + " (" + head.permits() + " permits) still waits; " + context + ", now " + s);
            }
        }
        if (head != null) {
            long available = s.availablePermits(); // only this thread adds permits: exact after its calls
            if (available >= head.permits()) {
                fail("head waiter #" + head.index() + " (" + head.permits() + " permits) still waits with "
                        + available + " available; " + context + ", now " + s);
            }
        }
        return head;
    }

    // =====================================================================================================
    // Close under load.
    // =====================================================================================================

    /**
     * Thousands of virtual threads acquire in a loop (blocking, timed, async) while close() comes: each gets
     * permits or SemaphoreClosedException, every later acquire is refused, nothing hangs, and once the permits
     * held across the close are released everything is back.
     */
    @ParameterizedTest
    @EnumSource(Fairness.class)
    @Timeout(60)
    void closeUnderLoadGrantsOrRefusesEveryWaiter(Fairness fairness) throws Exception {
        long seed = StressSeed.of("closeUnderLoadGrantsOrRefusesEveryWaiter(" + fairness + ")");
        for (int round = 0; round < 5; round++) {
            closeUnderLoad(fairness, seed + 1_000_003L * round);
        }
    }

    private static void closeUnderLoad(Fairness fairness, long seed) throws Exception {
        long limit = 6;
        Semaphore s = Semaphore.builder().permits(limit).maxPermits(limit).fairness(fairness)
                .name("close-" + fairness).build();
        int threads = 3_000;
        LongAdder granted = new LongAdder();
        LongAdder refused = new LongAdder();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        Thread[] all = new Thread[threads];
        LongAdder grantEvents = new LongAdder();
        LongAdder closedEvents = new LongAdder();
        LongAdder closes = new LongAdder();
        s.addListener(new SemaphoreListener() {
            @Override
            public void acquired(Semaphore semaphore, long permits, long waitNanos) {
                grantEvents.increment();
            }

            @Override
            public void rejected(Semaphore semaphore, long permits, Rejection why, long waitNanos) {
                if (why == Rejection.CLOSED) {
                    closedEvents.increment();
                }
            }

            @Override
            public void closed(Semaphore semaphore) {
                closes.increment();
            }
        });
        Permit keptAcrossClose = s.acquire(2);
        for (int i = 0; i < threads; i++) {
            SplittableRandom random = new SplittableRandom(seed * 31 + i);
            all[i] = Thread.ofVirtual().name("close-v" + i).start(() -> {
                try {
                    for (;;) {
                        long n = 1 + random.nextLong(limit / 2);
                        Permit p;
                        try {
                            p = switch (random.nextInt(6)) {
                                case 0 -> s.acquire(n);
                                case 1 -> s.acquire(n, Duration.ofMinutes(5));
                                case 2 -> s.acquire(n, Duration.ofNanos(random.nextLong(1_000, 500_000)));
                                case 3 -> s.acquireAsync(n).join();
                                case 4 -> {
                                    CompletableFuture<Permit> f = s.acquireAsync(n);
                                    Thread.yield();
                                    yield f.cancel(false) ? null : f.join();
                                }
                                default -> s.tryAcquire(n).orElse(null);
                            };
                        } catch (SemaphoreClosedException e) {
                            break;
                        } catch (CompletionException e) {
                            if (e.getCause() instanceof SemaphoreClosedException) {
                                break;
                            }
                            throw e;
                        } catch (TimeoutException e) {
                            continue;
                        }
                        if (p != null) {
                            granted.increment();
                            Thread.yield();
                            p.close();
                        } else {
                            Thread.yield();
                        }
                    }
                    refused.increment();
                    // Every later acquire of any kind is refused too.
                    assertThatThrownBy(() -> s.acquire(1)).isInstanceOf(SemaphoreClosedException.class);
                    assertThatThrownBy(() -> s.tryAcquire(1)).isInstanceOf(SemaphoreClosedException.class);
                    assertThat(s.acquireAsync(1)).isCompletedExceptionally();
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
        }
        String context = "seed " + seed;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while ((s.queueLength() < threads / 2 || granted.sum() < 2 * threads) && System.nanoTime() < deadline
                && failures.isEmpty()) {
            Thread.yield();
        }
        int queuedAtClose = s.queueLength();
        long grantedBeforeClose = granted.sum();
        assertThat(queuedAtClose).as(context).isGreaterThanOrEqualTo(threads / 2);
        assertThat(grantedBeforeClose).as(context).isGreaterThanOrEqualTo(2 * threads);
        // Queued before close (arrivals from now on queue behind it); close() does not fail it: it ends once
        // every permit is back.
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        s.close();

        List<String> hung = new ArrayList<>();
        long joinDeadline = System.nanoTime() + JOIN_WITHIN.toNanos();
        for (Thread t : all) {
            if (!t.join(Duration.ofNanos(Math.max(1, joinDeadline - System.nanoTime())))) {
                hung.add(t.getName() + " " + t.getState() + " " + Arrays.toString(t.getStackTrace()));
            }
        }
        if (!hung.isEmpty()) {
            Arrays.stream(all).forEach(Thread::interrupt);
        }
        context = "seed " + seed + ", " + s;
        System.out.println("closeUnderLoadGrantsOrRefusesEveryWaiter(" + fairness + "): " + queuedAtClose
                + " queued and " + grantedBeforeClose + " grants at close, " + granted + " grants, " + refused
                + " refused");
        assertThat(hung).as(context).isEmpty();
        assertThat(failures).as(context).isEmpty();
        assertThat(refused.sum()).as(context).isEqualTo(threads);
        // One event per request: each thread ended with one refusal by close, then made three more.
        assertThat(closedEvents.sum()).as(context).isEqualTo(4L * threads);
        assertThat(grantEvents.sum()).as(context).isEqualTo(granted.sum() + 1);
        assertThat(closes.sum()).as(context).isEqualTo(1);

        assertThat(idle).as(context).isNotDone(); // two permits are still held
        assertThat(s.availablePermits()).as(context).isEqualTo(limit - 2);
        keptAcrossClose.close(); // releasing after close works, and ends the idle wait
        assertThat(idle).as(context).isCompleted();
        assertThat(s.availablePermits()).as(context).isEqualTo(s.permits()).isEqualTo(limit);
        assertThat(s.queueLength()).as(context).isZero();
        assertThat(s.isClosed()).isTrue();
        ((LocalSemaphore) s).checkInvariants();
    }
}
