package dev.sema.testing.history;

import static dev.sema.testing.history.Histories.history;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.history.Event.Outcome;
import dev.sema.testing.history.Violation.Rule;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report, the command line, and histories recorded by real threads. */
class CheckerTest {

    @TempDir
    Path dir;

    @Test
    void violationComesWithTheEventsOfItsSemaphoreAroundIt() {
        Histories h = history().declare("s", 1, 1000).declare("t", 1, 1000);
        for (int i = 0; i < 30; i++) {
            h.hold("w1", i + 1, "s", 1, 100 + 2 * i, 10 * i, 10 * i + 5);
            h.hold("w9", i + 1, "t", 1, 100 + i, 10 * i, 10 * i + 5);
        }
        h.hold("w2", 1, "s", 1, 131, 152, 153); // over the limit with w1 req=16, held from 150 to 155
        Report r = h.check();
        Violation v = r.violations(Rule.LIMIT).getFirst();
        assertThat(r.violations()).hasSize(1);
        assertThat(v.context()).noneMatch(e -> e.process().equals("w9"));
        long before = v.context().stream().filter(e -> e.nanos() <= v.nanos()).count();
        long after = v.context().stream().filter(e -> e.nanos() > v.nanos()).count();
        assertThat(before).isBetween(10L, 15L); // 10 of s, and up to 5 of w2
        assertThat(after).isBetween(10L, 15L);
        assertThat(v.context()).extracting(HistoryFormat::format)
                .contains("7000150000000 w1 ok req=16 token=130", "7000155000000 w1 release req=16",
                        "7000152000000 w2 invoke req=1 sem=s permits=1 kind=acquire");

        String text = r.toText();
        assertThat(text).contains("VIOLATION 1 [LIMIT] at +0.152000s sem=s process=w2",
                "  +0.150000s  7000150000000 w1 ok req=16 token=130", "  ---- +0.152000s ----",
                "FAILED: 1 violations");
    }

    @Test
    void summaryCountsTheRun() {
        Report r = history().declare("s", 2, 1000)
                .at(0).start("w1").start("w2").start(Histories.SCHED)
                .hold("w1", 1, "s", 1, 10, 1, 50)
                .at(2).invoke("w2", 1, "s", 2)
                .at(3).fail("w2", 1, Outcome.UNAVAILABLE)
                .at(4).invoke("w2", 2, "s", 2)
                .at(5).fail("w2", 2, Outcome.TIMEOUT)
                .at(6).invoke("w2", 3, "s", 1)
                .at(10).faultBegin("latency", "w2").faultBegin("partition", "w1")
                .at(20).faultEnd("latency", "w2").stop("w2")
                .at(40).faultEnd("partition", "w1").cont("w2")
                .at(45).faultBegin("latency", "w1")
                .at(46).faultEnd("latency", "w1")
                .at(60).exit("w1").kill("w2")
                .at(70).finalCounts("s", 0, 0).exit(Histories.SCHED)
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.processes()).isEqualTo(3);
        assertThat(r.runs()).isEqualTo(3);
        assertThat(r.semaphores()).isEqualTo(1);
        assertThat(r.requests()).isEqualTo(4);
        assertThat(r.grants()).isEqualTo(1);
        assertThat(r.excused()).isEqualTo(1);
        assertThat(r.failsByOutcome()).isEqualTo(Map.of("timeout", 1L, "unavailable", 1L));
        assertThat(r.faultsByKind()).isEqualTo(Map.of("latency", 2L, "partition", 1L));
        assertThat(r.pauseWindows()).isEqualTo(1);
        assertThat(r.longestPause()).isEqualTo(Duration.ofMillis(20));
        assertThat(r.toText()).contains("requests: 4, granted 1, failed 2 (timeout=1, unavailable=1), excused by a kill 1",
                "faults: 3 (latency=2, partition=1)", "pauses: 1, longest 20.000ms", "violations: 0", "PASSED");
    }

    private int run(ByteArrayOutputStream out, String... args) {
        return Checker.run(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(out, true, StandardCharsets.UTF_8), args);
    }

    /** Three processes writing their own files, as in a chaos run; w2 holds 2 permits of s, limit {@code limit}. */
    private List<Path> recordRun(int limit) throws IOException {
        List<Path> files = new ArrayList<>();
        for (String p : List.of("sched", "w1", "w2")) {
            files.add(dir.resolve(p + ".history"));
        }
        try (HistoryWriter sw = HistoryWriter.toFile(files.get(0));
             HistoryWriter w1w = HistoryWriter.toFile(files.get(1));
             HistoryWriter w2w = HistoryWriter.toFile(files.get(2))) {
            Recorder sched = new Recorder(sw, "sched");
            Recorder w1 = new Recorder(w1w, "w1");
            Recorder w2 = new Recorder(w2w, "w2");
            sched.start();
            sched.declare("s", limit, Duration.ofSeconds(1));
            w1.start();
            w2.start();
            long a = w1.invoke("s", 1, "acquire");
            w1.ok(a, 1);
            long b = w2.invoke("s", 2, "acquire");
            w2.ok(b, 2);
            w2.release(b);
            w1.release(a);
            w1.exit();
            sched.kill("w2");
            sched.finalCounts("s", 0, 0);
            sched.exit();
        }
        return files;
    }

    @Test
    void commandLineExitsWithZeroWhenNoRuleIsBroken() throws IOException {
        List<Path> files = recordRun(3);
        Files.writeString(files.get(1), "12345 w1 rel", StandardOpenOption.APPEND); // torn by a kill
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = run(out, files.get(2).toString(), files.get(0).toString(), files.get(1).toString());
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("PASSED", "skipped a torn last line");
        assertThat(code).isZero();
    }

    @Test
    void commandLineExitsWithOneOnViolations() throws IOException {
        List<Path> files = recordRun(2);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = run(out, files.stream().map(Path::toString).toArray(String[]::new));
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("[LIMIT]", "FAILED: 1 violations");
        assertThat(code).isEqualTo(1);
    }

    @Test
    void commandLineExitsWithTwoOnUnreadableInput() throws IOException {
        Path bad = Files.writeString(dir.resolve("bad.history"), "1 w1 start\n2 w1 flew\n");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertThat(run(out, bad.toString())).isEqualTo(2);
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("bad.history:2");
        assertThat(run(out, dir.resolve("missing.history").toString())).isEqualTo(2);
        assertThat(run(out)).isEqualTo(2);
        assertThat(run(out, "--patience=5", bad.toString())).isEqualTo(2);
    }

    @Test
    void commandLineTakesTheParameters() throws IOException {
        Path h = Files.writeString(dir.resolve("w.history"), """
                0 sched semaphore sem=s limit=1 lease=1000
                0 w1 invoke req=1 sem=s permits=1 kind=acquire
                0 w1 ok req=1 token=1
                100000000 w1 stop
                1500000000 w2 invoke req=1 sem=s permits=1 kind=acquire
                1500000000 w2 ok req=1 token=2
                1600000000 w2 release req=1
                3000000000 w1 cont
                3300000000 w1 lost req=1
                """);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertThat(run(out, h.toString())).isEqualTo(0);
        assertThat(run(out, "--grace=0", h.toString())).isEqualTo(0);
        Path late = Files.writeString(dir.resolve("late.history"), "3100000000 w2 invoke req=2 sem=s permits=1 kind=acquire\n"
                + "3100000000 w2 ok req=2 token=3\n3400000000 w2 release req=2\n");
        assertThat(run(out, h.toString(), late.toString())).isEqualTo(1);
        assertThat(run(out, "--grace=400", h.toString(), late.toString())).isEqualTo(0);
    }

    /**
     * Four threads as processes sharing a JDK semaphore of {@code permits}, recorded in memory; the history
     * declares a limit of 2. The first grants of the first {@code permits} threads are held at once.
     */
    private static Report recordThreads(int permits) throws InterruptedException {
        HistoryWriter writer = HistoryWriter.inMemory();
        Recorder sched = new Recorder(writer, "sched");
        sched.declare("s", 2, Duration.ofSeconds(1));
        Semaphore semaphore = new Semaphore(permits, true);
        AtomicLong tokens = new AtomicLong();
        CyclicBarrier holding = new CyclicBarrier(permits);
        List<Thread> threads = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            Recorder rec = new Recorder(writer, "w" + i);
            boolean meets = i <= permits;
            threads.add(Thread.ofPlatform().start(() -> {
                rec.start();
                for (int j = 0; j < 30; j++) {
                    long req = rec.invoke("s", 1, "acquire");
                    semaphore.acquireUninterruptibly();
                    rec.ok(req, tokens.incrementAndGet()); // a token taken with the grant, as Redis does
                    if (meets && j == 0) {
                        try {
                            holding.await();
                        } catch (InterruptedException | BrokenBarrierException e) {
                            throw new IllegalStateException(e);
                        }
                    }
                    rec.release(req);
                    semaphore.release();
                }
                rec.exit();
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        sched.finalCounts("s", 0, 0);
        return new Checker().check(writer.history());
    }

    @Test
    void recordedRunOfASemaphoreThatKeepsItsLimitPasses() throws InterruptedException {
        Report r = recordThreads(2);
        assertThat(r.violations()).isEmpty();
        assertThat(r.grants()).isEqualTo(120);
    }

    @Test
    void recordedRunOfASemaphoreThatGrantsTooMuchFails() throws InterruptedException {
        Report r = recordThreads(3);
        assertThat(r.violations(Rule.LIMIT)).isNotEmpty();
        assertThat(r.violations()).extracting(Violation::rule).containsOnly(Rule.LIMIT);
    }
}
