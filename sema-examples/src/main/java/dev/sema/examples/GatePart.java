package dev.sema.examples;

import static dev.sema.examples.Text.format;
import static dev.sema.examples.Text.millisSince;

import dev.sema.Gate;
import dev.sema.GateClosedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link Gate} at work: a server handles requests that each append to a journal. On shutdown the
 * server closes its gate: requests already inside finish, new ones are refused, and only when the
 * gate's {@code close()} future completes (every pass closed) is the journal closed. No request writes
 * to a closed journal, and no admitted request is cut short.
 */
final class GatePart implements Part {

    /**
     * The knobs of a run.
     *
     * @param requests how many requests arrive
     * @param closeAt the request before which the server shuts down
     * @param every the time between arrivals
     * @param minWorkMillis the shortest request
     * @param maxWorkMillis the longest request
     * @param seed makes the request lengths repeatable
     */
    record Settings(int requests, int closeAt, Duration every, int minWorkMillis, int maxWorkMillis, long seed) {
        static Settings standard() {
            return new Settings(400, 250, Duration.ofMillis(2), 50, 150, 5);
        }
    }

    /** What a run measured. */
    record Measured(int requests, int admitted, int refused, int arrivedAfterClose, int refusedAfterClose,
            int admittedWhenDrained, int finishedWhenDrained, int journalLines, int lateWrites, long insideAtEnd,
            boolean closedAtEnd, int failures) {
        List<Check> checks() {
            return List.of(
                    new Check("close()'s future completed only once every admitted request had finished",
                            admittedWhenDrained == finishedWhenDrained && admittedWhenDrained == admitted,
                            format("%d admitted, %d finished when it completed", admittedWhenDrained,
                                    finishedWhenDrained)),
                    new Check("nothing was written to the journal after it was closed, and nothing was lost",
                            lateWrites == 0 && journalLines == admitted,
                            format("%d late writes; %d lines for %d admitted requests", lateWrites, journalLines,
                                    admitted)),
                    new Check("every request that arrived after close() was refused, and every request ended one way",
                            refusedAfterClose == arrivedAfterClose && admitted + refused == requests && failures == 0,
                            format("%d of %d refused after close(); %d admitted + %d refused = %d of %d requests;"
                                    + " %d failed", refusedAfterClose, arrivedAfterClose, admitted, refused,
                                    admitted + refused, requests, failures)),
                    new Check("the gate ended closed with nobody inside",
                            closedAtEnd && insideAtEnd == 0,
                            format("isClosed() %b, inside() %d", closedAtEnd, insideAtEnd)));
        }
    }

    /** Where requests write; writing after {@link #close()} is counted as a bug, not performed. */
    static final class Journal {
        private final ReentrantLock lock = new ReentrantLock();
        private final List<String> lines = new ArrayList<>();
        private boolean closed;
        private int lateWrites;

        void write(String line) {
            lock.lock();
            try {
                if (closed) {
                    lateWrites++;
                } else {
                    lines.add(line);
                }
            } finally {
                lock.unlock();
            }
        }

        void close() {
            lock.lock();
            try {
                closed = true;
            } finally {
                lock.unlock();
            }
        }

        int lines() {
            lock.lock();
            try {
                return lines.size();
            } finally {
                lock.unlock();
            }
        }

        int lateWrites() {
            lock.lock();
            try {
                return lateWrites;
            } finally {
                lock.unlock();
            }
        }
    }

    private final Settings settings;
    private final Terminal terminal;

    GatePart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "gate";
    }

    @Override
    public String title() {
        return "Gate: a server drains its in-flight requests on shutdown";
    }

    @Override
    public List<Check> run() throws Exception {
        return measure().checks();
    }

    Measured measure() throws Exception {
        Gate gate = new Gate("server");
        Journal journal = new Journal();
        AtomicInteger admitted = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        AtomicInteger refusedAfterClose = new AtomicInteger();
        AtomicInteger finished = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        AtomicInteger admittedWhenDrained = new AtomicInteger(-1);
        AtomicInteger finishedWhenDrained = new AtomicInteger(-1);
        AtomicReference<Throwable> firstFailure = new AtomicReference<>();
        terminal.println(format("%d requests arrive, one every %d ms; each enters the gate \"server\", works %d-%d ms"
                + " and appends", settings.requests(), settings.every().toMillis(), settings.minWorkMillis(),
                settings.maxWorkMillis()));
        terminal.println("a line to the journal. The journal is closed when the gate's close() future completes.");
        Random random = new Random(settings.seed());
        CompletableFuture<Void> drained = null;
        long closedAt = 0;
        int arrivedAfterClose = 0;
        long start = System.nanoTime();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int id = 0; id < settings.requests(); id++) {
                if (id == settings.closeAt()) {
                    long inside = gate.inside();
                    closedAt = System.nanoTime();
                    drained = gate.close().thenRun(() -> {
                        // Runs on the thread that closed the last pass: nobody is inside any more.
                        admittedWhenDrained.set(admitted.get());
                        finishedWhenDrained.set(finished.get());
                        journal.close();
                    });
                    terminal.println(format("%6d ms  gate.close() with %d requests inside: they finish, new ones"
                            + " are refused", millisSince(start), inside));
                }
                boolean afterClose = drained != null;
                arrivedAfterClose += afterClose ? 1 : 0;
                int id0 = id;
                int workMillis = settings.minWorkMillis()
                        + random.nextInt(settings.maxWorkMillis() - settings.minWorkMillis() + 1);
                threads.submit(() -> {
                    try (Gate.Pass pass = gate.enter()) {
                        admitted.incrementAndGet();
                        Thread.sleep(workMillis);
                        journal.write("request " + id0 + " done");
                        finished.incrementAndGet();
                    } catch (GateClosedException e) {
                        refused.incrementAndGet();
                        if (afterClose) {
                            refusedAfterClose.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        failures.incrementAndGet();
                        firstFailure.compareAndSet(null, e);
                    }
                });
                Thread.sleep(settings.every()); // the next arrival
            }
            if (drained == null) {
                throw new IllegalArgumentException("closeAt must be less than requests");
            }
            drained.get(30, TimeUnit.SECONDS);
            terminal.println(format("%6d ms  close() future completed, %d ms after close(): every pass was closed;"
                    + " the journal is closed", millisSince(start), millisSince(closedAt)));
        }
        terminal.println(format("  %d requests admitted and journaled, %d refused with GateClosedException",
                admitted.get(), refused.get()));
        if (firstFailure.get() != null) {
            terminal.println("  unexpected failure: " + firstFailure.get());
        }
        return new Measured(settings.requests(), admitted.get(), refused.get(), arrivedAfterClose,
                refusedAfterClose.get(), admittedWhenDrained.get(), finishedWhenDrained.get(), journal.lines(),
                journal.lateWrites(), gate.inside(), gate.isClosed(), failures.get());
    }
}
