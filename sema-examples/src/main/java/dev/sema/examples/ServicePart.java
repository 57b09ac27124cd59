package dev.sema.examples;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The demo's first part, a service under load: 10,000 requests, each on its own virtual thread, share a
 * pool of worker slots and a memory budget while an operator resizes the pool, clients give up, and the
 * service finally shuts down. Run it alone with {@code bin/demo service}.
 *
 * <p>Each request takes one permit of {@code workers} (the limit on requests running at once), then
 * its buffer's size in KiB from {@code memory} (a weighted budget), hashes the buffer and sleeps a few
 * milliseconds as if writing it out. Requests wait for their slot in four styles: blocking
 * {@code acquire()}, {@code acquire(1, timeout)}, blocking but interrupted when the client hangs up,
 * and {@code acquireAsync()} whose future is cancelled when the client hangs up.
 *
 * <p>Meanwhile the operator lowers and raises the limit with {@code setPermits} (lowering never revokes
 * held permits: the excess finishes first), and at the end calls {@code close()}, which fails every
 * queued request with {@link SemaphoreClosedException}, then {@code awaitIdle()}, which waits until
 * every held permit is back. The run ends with checks of what it promised (see {@link Report}).
 *
 * <p>The worker semaphore's meters ({@code SemaphoreMetrics}) are served in the Prometheus format on a
 * loopback port and scraped over HTTP while the load runs ({@link MetricsEndpoint}): the status line shows
 * the wait's median and 99th percentile and the timeouts from the scrape, and a last check compares the
 * scraped counts with the demo's own.
 */
final class ServicePart implements Part {

    // ---------------------------------------------------------------- the scenario

    /**
     * The knobs of a run; {@link #standard()} is what {@code bin/demo} runs.
     *
     * @param requests how many requests arrive
     * @param perSecond how many arrive per second, evenly spaced
     * @param limit the normal limit on requests running at once
     * @param slowLimit the limit while a dependency is slow
     * @param maxPermits the highest limit the operator may set
     * @param memoryBudgetKiB the memory budget, at least the largest buffer (256 KiB)
     * @param minIoMillis the shortest simulated write
     * @param maxIoMillis the longest simulated write
     * @param patience how long clients wait for a slot before they give up (those that do)
     * @param seed makes the mix of requests repeatable
     */
    record Settings(int requests, int perSecond, int limit, int slowLimit, int maxPermits, int memoryBudgetKiB,
            int minIoMillis, int maxIoMillis, Duration patience, long seed) {

        static Settings standard() {
            return new Settings(10_000, 1_000, 64, 16, 128, 8_192, 20, 60, Duration.ofMillis(300), 42);
        }
    }

    /** How a request waits for its worker slot: each style shows one way to acquire and to give up. */
    enum Style {
        PATIENT(65, "acquire(), waiting as long as it takes"),
        DEADLINE(15, "acquire(1, patience), which may throw TimeoutException"),
        HANGS_UP(10, "acquire(), but the client hangs up after its patience by interrupting the thread"),
        ASYNC(10, "acquireAsync(), but the client hangs up after its patience by cancelling the future");

        final int percent;
        final String how;

        Style(int percent, String how) {
            this.percent = percent;
            this.how = how;
        }

        static Style pick(Random random) {
            int roll = random.nextInt(100);
            for (Style style : values()) {
                roll -= style.percent;
                if (roll < 0) {
                    return style;
                }
            }
            throw new AssertionError("percentages do not add up to 100");
        }
    }

    /** How a request ended; every request ends exactly one way. */
    enum Outcome {
        COMPLETED("completed", "held a worker slot and its memory, and did the work"),
        TIMED_OUT("timed out", "acquire(1, patience) threw TimeoutException"),
        CANCELLED("cancelled", "the client hung up: thread interrupted or future cancelled"),
        CLOSED("closed", "SemaphoreClosedException: queued at close(), or arrived after it"),
        FAILED("failed", "any other exception (there should be none)");

        final String label;
        final String meaning;

        Outcome(String label, String meaning) {
            this.label = label;
            this.meaning = meaning;
        }
    }

    /** One request: how it waits, the KiB its buffer needs, and how long its simulated write takes. */
    record Request(int id, Style style, int kib, int ioMillis) {
    }

    /** The operator sets the worker limit once a fraction {@code at} of the requests has arrived. */
    record Act(double at, int limit, String why) {
    }

    private List<Act> timeline() {
        return List.of(
                new Act(0.25, settings.slowLimit(), "a dependency slows down: requests queue, clients give up"),
                new Act(0.45, settings.maxPermits(), "capacity added: the queue is served at once"),
                new Act(0.65, settings.limit(), "back to normal"),
                new Act(0.85, settings.slowLimit(), "the dependency slows down again, and then..."));
    }

    // ---------------------------------------------------------------- state

    private final Settings settings;
    private final Terminal terminal;
    private final Semaphore workers;
    private final Semaphore memory;
    private final ScheduledExecutorService timer =
            Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("demo-timer").daemon().factory());

    private final Gauge running = new Gauge();
    private final Gauge memoryInUse = new Gauge();
    private final Map<Outcome, LongAdder> outcomes = new EnumMap<>(Outcome.class);
    private final List<Window> windows = new ArrayList<>(); // every limit in force, in order
    private volatile Window window;                          // the limit in force now
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    private final LongAdder slotsGranted = new LongAdder();
    private final LongAdder cancelledWhileServed = new LongAdder();
    private MetricsEndpoint endpoint;
    private volatile MetricsEndpoint.Scrape lastScrape;
    private Check scraped;
    private long startNanos;
    private long runningAfterIdle = -1;

    ServicePart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
        this.workers = Semaphore.builder()
                .name("workers")
                .permits(settings.limit())
                .maxPermits(settings.maxPermits())
                .build();
        this.memory = Semaphore.builder()
                .name("memory")
                .permits(settings.memoryBudgetKiB())
                .build();
        for (Outcome outcome : Outcome.values()) {
            outcomes.put(outcome, new LongAdder());
        }
    }

    @Override
    public String name() {
        return "service";
    }

    @Override
    public String title() {
        return format("A service under load: %,d requests on virtual threads, a worker limit, a memory budget",
                settings.requests());
    }

    @Override
    public List<Check> run() throws InterruptedException {
        List<Check> checks = new ArrayList<>(play().checks());
        checks.add(scraped);
        return checks;
    }

    /** The check that the scraped counts equal the demo's own; set by {@link #play()}. */
    Check scrapeCheck() {
        return scraped;
    }

    /** Runs the whole scenario and returns what it measured. */
    Report play() throws InterruptedException {
        try (MetricsEndpoint metrics = new MetricsEndpoint(workers)) {
            endpoint = metrics;
            return playObserved();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot serve the metrics on a loopback port", e);
        }
    }

    private Report playObserved() throws InterruptedException {
        introduce();
        terminal.println("The workers' meters are served at " + endpoint.uri() + " and scraped while the load runs.");
        terminal.println("");
        startNanos = System.nanoTime();
        install(new Window(settings.limit()));
        event("limit " + settings.limit(), "steady load");
        ScheduledFuture<?> ticker = timer.scheduleAtFixedRate(this::showStatus, 100,
                terminal.isInteractive() ? 100 : 1_000, MILLISECONDS);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<CompletableFuture<Void>> requests = arrive(threads);
            shutDown();
            CompletableFuture.allOf(requests.toArray(new CompletableFuture<?>[0])).join();
        } finally {
            ticker.cancel(false);
            timer.shutdownNow();
            timer.awaitTermination(10, SECONDS);
        }
        showStatus();
        terminal.endStatus();
        Report report = report();
        report.summary().forEach(terminal::println);
        scraped = checkScrape(report);
        if (firstFailure.get() != null) {
            firstFailure.get().printStackTrace();
        }
        return report;
    }

    // ---------------------------------------------------------------- arrivals and the operator

    /** Starts every request on schedule, and plays the operator's acts on the way. */
    private List<CompletableFuture<Void>> arrive(ExecutorService threads) throws InterruptedException {
        Random random = new Random(settings.seed());
        Deque<Act> acts = new ArrayDeque<>(timeline());
        List<CompletableFuture<Void>> requests = new ArrayList<>(settings.requests());
        for (int id = 0; id < settings.requests(); id++) {
            while (!acts.isEmpty() && id >= acts.peek().at() * settings.requests()) {
                resize(acts.poll());
            }
            sleepUntilDue(id);
            Request request = new Request(id, Style.pick(random), 4 << random.nextInt(7),
                    settings.minIoMillis() + random.nextInt(settings.maxIoMillis() - settings.minIoMillis() + 1));
            requests.add(start(request, threads)
                    .exceptionally(this::unexpected)
                    .thenAccept(outcome -> outcomes.get(outcome).increment()));
        }
        return requests;
    }

    private void sleepUntilDue(int id) throws InterruptedException {
        long due = startNanos + id * 1_000_000_000L / settings.perSecond();
        long early = due - System.nanoTime();
        if (early > 1_000_000) {
            Thread.sleep(Duration.ofNanos(early));
        }
    }

    /**
     * Changes the limit while requests run. Raising it takes effect at once and serves queued requests.
     * Lowering it never revokes permits already held: requests running above the new limit finish
     * first, and only then does the lower limit bound what runs. (Arrivals pause while the operator
     * watches the excess drain, which takes a few milliseconds.)
     */
    private void resize(Act act) throws InterruptedException {
        int limit = act.limit();
        if (limit >= workers.permits()) {
            install(new Window(limit)); // raising: from now on at most `limit` may run
            workers.setPermits(limit);
            event("setPermits(" + limit + ")", act.why());
            return;
        }
        workers.setPermits(limit);
        event("setPermits(" + limit + ")", act.why());
        long held = workers.permits() - workers.availablePermits();
        long drainStart = System.nanoTime();
        while (workers.availablePermits() < 0) { // more permits held than the new limit
            Thread.sleep(1);
        }
        install(new Window(limit)); // lowering: the bound holds once the excess has drained
        if (held > limit) {
            event("", format("%d permits were held: none was revoked, the excess finished within %d ms",
                    held, (System.nanoTime() - drainStart) / 1_000_000));
        }
    }

    /** Refuses new work, fails the queued requests, then waits until every held permit is back. */
    private void shutDown() throws InterruptedException {
        int queued = workers.queueLength();
        workers.close();
        event("close()", format("%,d queued requests fail with SemaphoreClosedException", queued));
        long stillRunning = running.value();
        long idleStart = System.nanoTime();
        workers.awaitIdle();
        runningAfterIdle = running.value();
        event("awaitIdle()", format("returned %d ms later, once the %d running requests had finished",
                (System.nanoTime() - idleStart) / 1_000_000, stillRunning));
    }

    // ---------------------------------------------------------------- one request

    /** Starts a request; the future tells how it ended. */
    private CompletableFuture<Outcome> start(Request request, ExecutorService threads) {
        return switch (request.style()) {
            case PATIENT -> onVirtualThread(request, threads, () -> workers.acquire());
            case DEADLINE -> onVirtualThread(request, threads, () -> workers.acquire(1, settings.patience()));
            case HANGS_UP -> onVirtualThread(request, threads, this::acquireUntilHangUp);
            case ASYNC -> withoutThreadWhileQueued(request, threads);
        };
    }

    /** One way to get a worker slot, blocking the calling thread. */
    @FunctionalInterface
    private interface SlotAcquisition {
        Permit acquire() throws InterruptedException, TimeoutException;
    }

    /** Runs the request on a virtual thread of its own, which waits for the slot. */
    private CompletableFuture<Outcome> onVirtualThread(Request request, ExecutorService threads,
            SlotAcquisition acquisition) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return serve(request, acquisition.acquire());
            } catch (TimeoutException e) {
                return Outcome.TIMED_OUT;
            } catch (InterruptedException e) {
                return Outcome.CANCELLED; // the client hung up: this request ends here
            } catch (SemaphoreClosedException e) {
                return Outcome.CLOSED;
            }
        }, threads);
    }

    /** Waits in {@code acquire()} until served, or until the client hangs up and interrupts the wait. */
    private Permit acquireUntilHangUp() throws InterruptedException {
        Thread self = Thread.currentThread();
        ScheduledFuture<?> hangUp = timer.schedule(self::interrupt, settings.patience().toMillis(), MILLISECONDS);
        try {
            return workers.acquire();
        } finally {
            hangUp.cancel(false);
        }
    }

    /**
     * Queues for the slot without holding a thread; the virtual thread starts once the future is done.
     * Cancelling the future withdraws the request from the queue.
     */
    private CompletableFuture<Outcome> withoutThreadWhileQueued(Request request, ExecutorService threads) {
        CompletableFuture<Permit> slot = workers.acquireAsync();
        timer.schedule(() -> slot.cancel(false), settings.patience().toMillis(), MILLISECONDS);
        return slot.handleAsync((permit, failure) -> failure == null ? serve(request, permit) : outcomeOf(failure),
                threads);
    }

    private Outcome outcomeOf(Throwable failure) {
        Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
        if (cause instanceof CancellationException) {
            return Outcome.CANCELLED;
        }
        if (cause instanceof SemaphoreClosedException) {
            return Outcome.CLOSED;
        }
        return unexpected(cause);
    }

    private Outcome unexpected(Throwable failure) {
        firstFailure.compareAndSet(null, failure);
        return Outcome.FAILED;
    }

    /** Holds the worker slot while taking the buffer's size from the memory budget and doing the work. */
    private Outcome serve(Request request, Permit slot) {
        slotsGranted.increment();
        try (slot) {
            enterRunning();
            try (Permit buffer = memory.acquire(request.kib())) {
                memoryInUse.add(request.kib());
                try {
                    work(request);
                } finally {
                    memoryInUse.subtract(request.kib()); // before the permits go back
                }
            } finally {
                running.subtract(1); // before the slot goes back
            }
            return Outcome.COMPLETED;
        } catch (InterruptedException e) {
            cancelledWhileServed.increment();
            return Outcome.CANCELLED; // the client hung up while being served
        }
    }

    /** Real work: fill and hash the buffer, then "write" it out. */
    private static void work(Request request) throws InterruptedException {
        byte[] buffer = new byte[request.kib() * 1024];
        Arrays.fill(buffer, (byte) request.id());
        try {
            MessageDigest.getInstance("SHA-256").digest(buffer);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
        Thread.sleep(request.ioMillis());
    }

    // ---------------------------------------------------------------- measuring

    /** A limit in force, and the most requests seen running under it. */
    static final class Window {
        final int limit;
        final AtomicLong peak = new AtomicLong();

        Window(int limit) {
            this.limit = limit;
        }
    }

    private void install(Window next) {
        windows.add(next);
        window = next;
    }

    /**
     * Counts a request that now holds a slot, and charges the count to the limit in force. The count
     * goes up after a permit is granted and down before it is released, so it never exceeds the permits
     * held, which the semaphore keeps within the limit. A count taken while the limit changed is
     * evidence about neither limit, so it is charged only if the window stayed the same meanwhile.
     */
    private void enterRunning() {
        Window before = window;
        long now = running.add(1);
        if (window == before) {
            before.peak.accumulateAndGet(now, Math::max);
        }
    }

    private Report report() {
        Map<Outcome, Long> counts = new EnumMap<>(Outcome.class);
        outcomes.forEach((outcome, count) -> counts.put(outcome, count.sum()));
        return new Report(settings.requests(), counts,
                windows.stream().map(w -> new Report.LimitPeak(w.limit, w.peak.get())).toList(),
                running.peak(), workers.maxPermits(), memoryInUse.peak(), memory.permits(), runningAfterIdle,
                Report.Counts.of(workers), Report.Counts.of(memory));
    }

    // ---------------------------------------------------------------- printing

    private void introduce() {
        terminal.println(format("%,d requests arrive at %,d/s, each on its own virtual thread. A request"
                + " takes", settings.requests(), settings.perSecond()));
        terminal.println(format("a permit of \"workers\" (limit %d, may be raised to %d), then its buffer's size"
                + " in KiB (4 to", settings.limit(), settings.maxPermits()));
        terminal.println(format("256) from \"memory\" (a budget of %,d KiB), hashes the buffer and writes it out"
                + " (sleeps %d-%d ms).", settings.memoryBudgetKiB(), settings.minIoMillis(), settings.maxIoMillis()));
        terminal.println(format("How requests wait for their worker permit (patience: %d ms):",
                settings.patience().toMillis()));
        for (Style style : Style.values()) {
            terminal.println(format("  %3d%%  %s", style.percent, style.how));
        }
        terminal.println("");
    }

    private void event(String what, String why) {
        terminal.println(format("%6.1fs  %-16s %s", elapsedSeconds(), what, why));
    }

    private void showStatus() {
        long done = outcomes.values().stream().mapToLong(LongAdder::sum).sum();
        try {
            lastScrape = endpoint.scrape();
        } catch (java.io.IOException e) {
            // the next tick tries again; the last check scrapes once more and fails if it cannot
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        MetricsEndpoint.Scrape m = lastScrape;
        String scrape = m == null ? "" : format("  wait p50 %5.1f p99 %5.1f ms  timeouts %,5d", m.p50Millis(),
                m.p99Millis(), m.count("timeout"));
        terminal.status(format("%6.1fs  limit %3d  running %3d  queued %4d  memory %4.1f/%.1f MiB  done %,6d",
                elapsedSeconds(), workers.permits(), running.value(), workers.queueLength(),
                memoryInUse.value() / 1024.0, settings.memoryBudgetKiB() / 1024.0, done) + scrape);
    }

    /**
     * Scrapes the meters once more and checks them against the demo's own counts: every request that got a
     * worker slot is a {@code granted} sample (including those whose client hung up while served), the
     * timeouts and closes match, and the requests whose client hung up while queued are the
     * {@code cancelled} and {@code interrupted} ones.
     */
    private Check checkScrape(Report report) throws InterruptedException {
        MetricsEndpoint.Scrape m;
        try {
            m = endpoint.scrape();
        } catch (java.io.IOException e) {
            return new Check("the scraped meters agree with the demo's counts", false, "scrape failed: " + e);
        }
        long hungUpWhileQueued = report.count(Outcome.CANCELLED) - cancelledWhileServed.sum();
        boolean agree = m.count("granted") == slotsGranted.sum()
                && m.count("timeout") == report.count(Outcome.TIMED_OUT)
                && m.count("cancelled") + m.count("interrupted") == hungUpWhileQueued
                && m.count("closed") == report.count(Outcome.CLOSED)
                && m.count("unavailable") == 0;
        return new Check("the scraped meters agree with the demo's counts", agree,
                format("scraped granted %,d, timeout %,d, cancelled + interrupted %,d + %,d, closed %,d;"
                        + " counted %,d slots granted, %,d timed out, %,d hung up while queued, %,d closed",
                        m.count("granted"), m.count("timeout"), m.count("cancelled"), m.count("interrupted"),
                        m.count("closed"), slotsGranted.sum(), report.count(Outcome.TIMED_OUT), hungUpWhileQueued,
                        report.count(Outcome.CLOSED)));
    }

    private double elapsedSeconds() {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    private static String format(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }
}
