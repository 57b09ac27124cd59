package dev.sema.examples;

import static dev.sema.examples.Text.format;
import static dev.sema.examples.Text.millisSince;

import dev.sema.Parallel;
import dev.sema.Semaphore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.IntStream;

/**
 * {@link Parallel} at work, in three steps.
 * <ol>
 *   <li>{@code Parallel.map(pages, limit, fn)} renders pages that an iterator makes one by one as they
 *       are pulled: at most {@code limit} calls at once, results in input order, and never more than
 *       {@code limit + 1} pages taken and not yet finished.
 *   <li>Two runs of {@code Parallel.map(keys, shared, fn)} share one semaphore, like two requests fanning
 *       out to one database: together they stay within its permits.
 *   <li>{@code Parallel.forEach} over an endless input fails fast: one call fails while the others are
 *       stuck in slow downloads; they are interrupted at once, no new call starts, and the first failure
 *       is thrown.
 * </ol>
 */
final class ParallelPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param pages how many pages step 1 renders
     * @param limit the most calls at once in step 1
     * @param sharedPermits the permits of the semaphore two runs share in step 2
     * @param queriesPerRun the items of each run in step 2
     * @param failLimit the limit of the failing run of step 3; its call number {@code failLimit - 1} fails
     * @param stuckFor how long each other call of step 3 would take if it were not cancelled
     */
    record Settings(int pages, int limit, int sharedPermits, int queriesPerRun, int failLimit, Duration stuckFor) {
        static Settings standard() {
            return new Settings(2_000, 16, 12, 300, 8, Duration.ofSeconds(10));
        }
    }

    /** A rendered page: its number and the start of its digest. */
    record Rendered(int page, String digest) {
    }

    /** What step 1 measured. */
    record MapRun(int pages, int limit, List<Rendered> results, long peakCalls, long peakUnfinished) {
        List<Check> checks() {
            return List.of(
                    new Check(format("Parallel.map ran at most %d calls at once", limit),
                            peakCalls <= limit, format("peak %d of limit %d", peakCalls, limit)),
                    new Check("Parallel.map returned every result in input order",
                            results.size() == pages
                                    && IntStream.range(0, pages).allMatch(i -> results.get(i).page() == i),
                            format("%,d results for %,d pages", results.size(), pages)),
                    new Check("the input was pulled lazily: taken-but-unfinished items never exceeded limit + 1",
                            peakUnfinished <= limit + 1,
                            format("at most %d of %,d pages at once (limit + 1 = %d)", peakUnfinished, pages,
                                    limit + 1)));
        }
    }

    /** What step 2 measured. */
    record SharedRuns(int permits, int perRun, List<String> first, List<String> second, long peakTogether,
            long available, int queued) {
        List<Check> checks() {
            return List.of(
                    new Check(format("two runs sharing one semaphore of %d permits together stayed within it", permits),
                            peakTogether <= permits, format("peak %d of %d queries at once", peakTogether, permits)),
                    new Check("each run returned its own results, in input order",
                            inOrder(first, "a") && inOrder(second, "b"),
                            format("%d + %d results", first.size(), second.size())),
                    new Check("the shared semaphore got every permit back",
                            available == permits && queued == 0,
                            format("availablePermits() %d of %d, queueLength() %d", available, permits, queued)));
        }

        private boolean inOrder(List<String> results, String run) {
            return results.size() == perRun
                    && IntStream.range(0, perRun).allMatch(i -> results.get(i).equals(run + "-" + i));
        }
    }

    /** What step 3 measured. */
    record FailFastRun(int limit, Throwable thrown, long started, long pulled, long interrupted,
            long runningWhenThrown) {
        List<Check> checks() {
            Throwable cause = thrown == null ? null : thrown.getCause();
            return List.of(
                    new Check("the first failure was thrown, wrapped in a CompletionException as it is checked",
                            thrown instanceof CompletionException && cause instanceof IOException
                                    && cause.getMessage().equals(failureMessage(limit - 1)),
                            String.valueOf(thrown)),
                    new Check(format("the %d calls in flight were interrupted and had ended when forEach threw",
                            limit - 1),
                            interrupted == limit - 1 && runningWhenThrown == 0,
                            format("%d interrupted, %d still running", interrupted, runningWhenThrown)),
                    new Check("no call started after the failure, and the endless input was pulled lazily",
                            started == limit && pulled <= limit + 1,
                            format("%d calls started, %d items pulled", started, pulled)),
                    new Check("the cancelled calls' InterruptedExceptions were not attached as suppressed",
                            thrown != null && thrown.getSuppressed().length == 0,
                            format("%d suppressed", thrown == null ? -1 : thrown.getSuppressed().length)));
        }
    }

    private final Settings settings;
    private final Terminal terminal;

    ParallelPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "parallel";
    }

    @Override
    public String title() {
        return "Parallel.map and forEach: bounded, in order, lazy, fail-fast";
    }

    @Override
    public List<Check> run() throws Exception {
        List<Check> checks = new ArrayList<>();
        checks.addAll(mapOverLazyInput().checks());
        checks.addAll(sharedSemaphore().checks());
        checks.addAll(failFast().checks());
        return checks;
    }

    // ---------------------------------------------------------------- 1. map over a lazy input

    MapRun mapOverLazyInput() throws InterruptedException {
        int limit = settings.limit();
        terminal.println(format("Parallel.map(pages, %d, page -> render(page)) over %,d pages that an iterator makes"
                + " as they are pulled", limit, settings.pages()));
        Gauge calls = new Gauge();
        LongAdder finished = new LongAdder();
        AtomicLong peakUnfinished = new AtomicLong();
        Iterable<Integer> pages = () -> new Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < settings.pages();
            }

            @Override
            public Integer next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                // Pages taken so far minus calls finished: the pages this run holds right now.
                peakUnfinished.accumulateAndGet(next + 1 - finished.sum(), Math::max);
                return next++;
            }
        };
        long start = System.nanoTime();
        List<Rendered> results = Parallel.map(pages, limit, page -> {
            calls.add(1);
            try {
                return render(page);
            } finally {
                calls.subtract(1);
                finished.increment();
            }
        });
        terminal.println(format("  %,d pages rendered in %d ms; at most %d calls ran at once, and at most %d pages"
                + " were held at once", results.size(), millisSince(start), calls.peak(), peakUnfinished.get()));
        return new MapRun(settings.pages(), limit, results, calls.peak(), peakUnfinished.get());
    }

    /** Real work: builds the page's HTML, digests it, and "fetches" its images (a short sleep). */
    private static Rendered render(int page) throws InterruptedException {
        String html = ("<p>page " + page + "</p>\n").repeat(512);
        String digest = HexFormat.of().formatHex(sha256(html.getBytes(StandardCharsets.UTF_8)), 0, 4);
        Thread.sleep(1 + page % 4);
        return new Rendered(page, digest);
    }

    private static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    // ---------------------------------------------------------------- 2. runs sharing one semaphore

    SharedRuns sharedSemaphore() throws Exception {
        int permits = settings.sharedPermits();
        int perRun = settings.queriesPerRun();
        Semaphore database = Semaphore.builder().name("database").permits(permits).build();
        terminal.println(format("Two requests fan out at once through one shared Semaphore.create(%d) \"database\","
                + " %d queries each", permits, perRun));
        Gauge queries = new Gauge();
        List<Integer> keys = IntStream.range(0, perRun).boxed().toList();
        long start = System.nanoTime();
        List<String> first;
        List<String> second;
        try (ExecutorService requests = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<List<String>> a =
                    requests.submit(() -> Parallel.map(keys, database, key -> query(queries, "a", key)));
            Future<List<String>> b =
                    requests.submit(() -> Parallel.map(keys, database, key -> query(queries, "b", key)));
            first = a.get(60, TimeUnit.SECONDS);
            second = b.get(60, TimeUnit.SECONDS);
        }
        terminal.println(format("  both done in %d ms; at most %d queries ran at once across both runs",
                millisSince(start), queries.peak()));
        return new SharedRuns(permits, perRun, first, second, queries.peak(), database.availablePermits(),
                database.queueLength());
    }

    private static String query(Gauge queries, String run, int key) throws InterruptedException {
        queries.add(1);
        try {
            Thread.sleep(2 + key % 3); // the database's answer takes a moment
            return run + "-" + key;
        } finally {
            queries.subtract(1);
        }
    }

    // ---------------------------------------------------------------- 3. fail fast

    FailFastRun failFast() throws Exception {
        int limit = settings.failLimit();
        int failing = limit - 1;
        terminal.println(format("Parallel.forEach(reports, %d, ...) over an endless input: report %d fails while"
                + " the %d before it", limit, failing, failing));
        terminal.println(format("are stuck in slow downloads (%d s each unless cancelled)",
                settings.stuckFor().toSeconds()));
        AtomicLong pulled = new AtomicLong();
        LongAdder started = new LongAdder();
        LongAdder interrupted = new LongAdder();
        Gauge running = new Gauge();
        CountDownLatch othersUnderWay = new CountDownLatch(failing);
        Iterable<Integer> endless = () -> new Iterator<>() {
            @Override
            public boolean hasNext() {
                return true;
            }

            @Override
            public Integer next() {
                return (int) pulled.getAndIncrement();
            }
        };
        long start = System.nanoTime();
        Throwable thrown = null;
        long runningWhenThrown = -1;
        try (ExecutorService caller = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<?> run = caller.submit(() -> {
                Parallel.forEach(endless, limit, report -> {
                    started.increment();
                    running.add(1);
                    try {
                        if (report == failing) {
                            othersUnderWay.await(10, TimeUnit.SECONDS); // so that the others are surely in flight
                            throw new IOException(failureMessage(report));
                        }
                        othersUnderWay.countDown();
                        download(settings.stuckFor(), interrupted);
                    } finally {
                        running.subtract(1);
                    }
                });
                return null;
            });
            try {
                run.get(settings.stuckFor().toSeconds() + 20, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                thrown = e.getCause();
                runningWhenThrown = running.value();
            } catch (TimeoutException e) {
                run.cancel(true); // interrupts forEach, which then cancels its calls
                throw new IllegalStateException("Parallel.forEach did not stop after the failure", e);
            }
        }
        terminal.println(format("  forEach threw after %d ms: %s", millisSince(start), thrown));
        terminal.println(format("  %d downloads were interrupted; %d calls started; %d items pulled from the endless"
                + " input", interrupted.sum(), started.sum(), pulled.get()));
        return new FailFastRun(limit, thrown, started.sum(), pulled.get(), interrupted.sum(), runningWhenThrown);
    }

    private static String failureMessage(int report) {
        return "report " + report + ": connection reset";
    }

    private static void download(Duration takes, LongAdder interrupted) throws InterruptedException {
        try {
            Thread.sleep(takes);
        } catch (InterruptedException e) {
            interrupted.increment(); // cancelled by Parallel: give up, as an interruptible download would
            throw e;
        }
    }
}
