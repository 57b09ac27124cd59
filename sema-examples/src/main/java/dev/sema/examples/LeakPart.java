package dev.sema.examples;

import static dev.sema.examples.Text.format;
import static dev.sema.examples.Text.millisSince;

import dev.sema.LeakDetection;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Leak detection at work: a connection pool built with {@link LeakDetection#PARANOID} serves queries
 * that close their {@link Permit}s, then a handler returns early on an error path and drops its
 * Permit without closing it. A maintenance job that needs every connection would now wait forever;
 * once the garbage collector finds the dropped Permit, the leak is logged (with the stack where the
 * Permit was acquired) and its permit comes back, and the job runs.
 */
final class LeakPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param connections the pool's permits
     * @param queries well-behaved queries run before the leak
     * @param patience how long to keep asking the garbage collector before giving up
     */
    record Settings(int connections, int queries, Duration patience) {
        static Settings standard() {
            return new Settings(4, 20, Duration.ofSeconds(20));
        }
    }

    /** What a run measured. */
    record Measured(int connections, int availableAfterLeak, boolean jobServed, List<String> warnings,
            boolean warningNamesTheLeakySite, long availableAtEnd, int queuedAtEnd) {
        List<Check> checks() {
            return List.of(
                    new Check("the dropped Permit was reported once, naming the semaphore and where it was acquired",
                            warnings.size() == 1 && warnings.get(0).contains("'connections'")
                                    && warningNamesTheLeakySite,
                            format("%d warning(s) from logger dev.sema; acquired in %s: %b", warnings.size(),
                                    LEAKY_METHOD, warningNamesTheLeakySite)),
                    new Check("its permit came back, and the job that needed every connection ran",
                            availableAfterLeak == connections - 1 && jobServed,
                            format("availablePermits() %d of %d after the leak; job served: %b",
                                    availableAfterLeak, connections, jobServed)),
                    new Check("every permit was back at the end, and the closed Permits were never reported",
                            availableAtEnd == connections && queuedAtEnd == 0 && warnings.size() == 1,
                            format("availablePermits() %d of %d, queueLength() %d, %d warning(s)", availableAtEnd,
                                    connections, queuedAtEnd, warnings.size())));
        }
    }

    static final String LEAKY_METHOD = "handleBadRequest";

    private final Settings settings;
    private final Terminal terminal;

    LeakPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "leak";
    }

    @Override
    public String title() {
        return "Leak detection: a Permit dropped without close() is reported and returned";
    }

    @Override
    public List<Check> run() throws Exception {
        return measure().checks();
    }

    Measured measure() throws Exception {
        // Keep the logger strongly reachable while our handler is attached: loggers are held weakly.
        Logger logger = Logger.getLogger("dev.sema");
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        boolean parents = logger.getUseParentHandlers();
        logger.addHandler(capture);
        logger.setUseParentHandlers(false); // the demo prints the warning itself, below
        try {
            return leakAndRecover(records);
        } finally {
            logger.removeHandler(capture);
            logger.setUseParentHandlers(parents);
        }
    }

    private Measured leakAndRecover(List<LogRecord> records) throws Exception {
        int n = settings.connections();
        Semaphore connections = Semaphore.builder()
                .name("connections")
                .permits(n)
                .leakDetection(LeakDetection.PARANOID)
                .build();
        terminal.println(format("A pool of %d connections built with .leakDetection(LeakDetection.PARANOID)"
                + " serves %d queries,", n, settings.queries()));
        terminal.println("each in try (Permit p = connections.acquire()) { ... }.");
        for (int i = 0; i < settings.queries(); i++) {
            try (Permit p = connections.acquire()) {
                query(i);
            }
        }
        handleBadRequest(connections);
        long availableAfterLeak = connections.availablePermits();
        terminal.println(format("Then %s() returns early on an error path without closing its Permit:"
                + " availablePermits() %d of %d.", LEAKY_METHOD, availableAfterLeak, n));
        CompletableFuture<Permit> job = connections.acquireAsync(n);
        terminal.println(format("A maintenance job asks for all %d connections and waits (queueLength() %d)."
                + " System.gc() until the leak is found...", n, connections.queueLength()));

        long start = System.nanoTime();
        long deadline = start + settings.patience().toNanos();
        int collections = 0;
        while (!job.isDone() && System.nanoTime() - deadline < 0) {
            System.gc();
            collections++;
            try {
                job.get(50, TimeUnit.MILLISECONDS); // the cleaner returns the permit, which serves the job
            } catch (TimeoutException notYet) {
                // collect again
            } catch (ExecutionException e) {
                break; // reported below
            }
        }
        boolean served = job.isDone() && !job.isCompletedExceptionally();
        // The cleaner gives the permits back first (which serves the job), then logs: wait for the log too.
        while (served && records.isEmpty() && System.nanoTime() - deadline < 0) {
            Thread.sleep(5); // polls an observable state, bounded by the deadline
        }
        terminal.println(format("  after %d System.gc() call(s) (%d ms) the job was %s; logged:", collections,
                millisSince(start), served ? "served" : "NOT served"));
        boolean namesSite = false;
        for (LogRecord record : records) {
            for (String line : Text.wrap(record.getLevel() + " " + record.getLoggerName() + ": " + record.getMessage(),
                    100)) {
                terminal.println("    " + line);
            }
            Optional<StackTraceElement> site = record.getThrown() == null ? Optional.empty()
                    : Arrays.stream(record.getThrown().getStackTrace())
                            .filter(e -> e.getMethodName().equals(LEAKY_METHOD))
                            .findFirst();
            site.ifPresent(e -> terminal.println("        at " + e));
            namesSite |= site.isPresent();
        }
        if (served) {
            job.join().close();
        } else {
            job.cancel(false);
        }
        List<String> warnings = records.stream().map(LogRecord::getMessage).toList();
        return new Measured(n, (int) availableAfterLeak, served, warnings, namesSite, connections.availablePermits(),
                connections.queueLength());
    }

    /** The bug: an error path that returns without closing the Permit, which becomes unreachable. */
    private static void handleBadRequest(Semaphore connections) throws InterruptedException {
        Permit p = connections.acquire();
        if (p.permits() > 0) {
            return; // "invalid request": returns early and forgets p.close()
        }
        p.close();
    }

    /** Real work for a query: a little arithmetic over its number. */
    private static long query(int i) {
        long h = i;
        for (int k = 0; k < 10_000; k++) {
            h = h * 31 + k;
        }
        return h;
    }
}
