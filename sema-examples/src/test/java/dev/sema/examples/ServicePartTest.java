package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.examples.ServicePart.Outcome;
import dev.sema.examples.ServicePart.Settings;
import dev.sema.examples.Report.Counts;
import dev.sema.examples.Report.LimitPeak;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Keeps the service part honest: a scaled-down run passes every check, and every check can fail. */
class ServicePartTest {

    @Test
    @Timeout(60)
    void scaledDownRunKeepsEveryPromise() throws Exception {
        Settings small = new Settings(1_000, 1_000, 16, 4, 32, 1_024, 5, 15, Duration.ofMillis(30), 7);
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        Terminal terminal = new Terminal(new PrintStream(output, true, StandardCharsets.UTF_8), false);

        ServicePart part = new ServicePart(small, terminal);
        Report report = part.play();

        String printed = output.toString(StandardCharsets.UTF_8);
        assertThat(report.checks()).allSatisfy(check -> assertThat(check.passed()).as(check.toString()).isTrue());
        assertThat(part.scrapeCheck().passed()).as(part.scrapeCheck().toString()).isTrue();
        assertThat(printed).contains("/metrics").contains("wait p50");
        assertThat(report.ended()).isEqualTo(1_000);
        assertThat(report.count(Outcome.FAILED)).isZero();
        assertThat(report.peaks()).extracting(LimitPeak::limit).containsExactly(16L, 4L, 32L, 16L, 4L);
        assertThat(printed).contains("close()", "awaitIdle()", "How the 1,000 requests ended").doesNotContain("\r");
    }

    @Test
    void passingReportPassesEveryCheck() {
        assertThat(passing().checks()).allMatch(Check::passed);
        assertThat(passing().passed()).isTrue();
    }

    @Test
    void peakAboveTheLimitInForceFails() {
        assertFails(r -> with(r, List.of(new LimitPeak(64, 64), new LimitPeak(16, 17)), r.peakRunning()),
                "running requests never exceeded the limit in force");
    }

    @Test
    void peakAboveMaxPermitsFails() {
        assertFails(r -> with(r, r.peaks(), r.maxPermits() + 1), "running requests never exceeded the limit in force");
    }

    @Test
    void memoryAboveTheBudgetFails() {
        assertFails(r -> new Report(r.requests(), r.outcomes(), r.peaks(), r.peakRunning(), r.maxPermits(),
                r.memoryBudgetKiB() + 1, r.memoryBudgetKiB(), r.runningAfterIdle(), r.workers(), r.memory()),
                "memory in use never exceeded the budget");
    }

    @Test
    void requestRunningAfterAwaitIdleFails() {
        assertFails(r -> new Report(r.requests(), r.outcomes(), r.peaks(), r.peakRunning(), r.maxPermits(),
                r.peakMemoryKiB(), r.memoryBudgetKiB(), 1, r.workers(), r.memory()),
                "awaitIdle() returned only when nothing was running");
    }

    @Test
    void permitNotReturnedFails() {
        assertFails(r -> withCounts(r, new Counts(16, 15, 0), r.memory()), "every worker permit came back");
        assertFails(r -> withCounts(r, r.workers(), new Counts(8_192, 8_000, 0)),
                "every KiB of the memory budget came back");
    }

    @Test
    void waiterLeftQueuedFails() {
        assertFails(r -> withCounts(r, new Counts(16, 16, 1), r.memory()), "every worker permit came back");
    }

    @Test
    void outcomesThatDoNotAddUpFail() {
        assertFails(r -> withOutcomes(r, Outcome.CLOSED, r.count(Outcome.CLOSED) - 1),
                "every request ended exactly one way");
        assertFails(r -> withOutcomes(r, Outcome.FAILED, 1), "every request ended exactly one way");
    }

    // ---------------------------------------------------------------- helpers

    private static Report passing() {
        Map<Outcome, Long> outcomes = new EnumMap<>(Outcome.class);
        outcomes.put(Outcome.COMPLETED, 8_000L);
        outcomes.put(Outcome.TIMED_OUT, 500L);
        outcomes.put(Outcome.CANCELLED, 500L);
        outcomes.put(Outcome.CLOSED, 1_000L);
        outcomes.put(Outcome.FAILED, 0L);
        return new Report(10_000, outcomes, List.of(new LimitPeak(64, 64), new LimitPeak(16, 16)), 64, 128,
                8_192, 8_192, 0, new Counts(16, 16, 0), new Counts(8_192, 8_192, 0));
    }

    private static void assertFails(UnaryOperator<Report> breakIt, String promise) {
        Report broken = breakIt.apply(passing());
        assertThat(broken.passed()).isFalse();
        assertThat(broken.checks()).filteredOn(check -> !check.passed())
                .extracting(Check::promise).containsExactly(promise);
    }

    private static Report with(Report r, List<LimitPeak> peaks, long peakRunning) {
        return new Report(r.requests(), r.outcomes(), peaks, peakRunning, r.maxPermits(), r.peakMemoryKiB(),
                r.memoryBudgetKiB(), r.runningAfterIdle(), r.workers(), r.memory());
    }

    private static Report withCounts(Report r, Counts workers, Counts memory) {
        return new Report(r.requests(), r.outcomes(), r.peaks(), r.peakRunning(), r.maxPermits(), r.peakMemoryKiB(),
                r.memoryBudgetKiB(), r.runningAfterIdle(), workers, memory);
    }

    private static Report withOutcomes(Report r, Outcome outcome, long count) {
        Map<Outcome, Long> outcomes = new EnumMap<>(r.outcomes());
        outcomes.put(outcome, count);
        return new Report(r.requests(), outcomes, r.peaks(), r.peakRunning(), r.maxPermits(), r.peakMemoryKiB(),
                r.memoryBudgetKiB(), r.runningAfterIdle(), r.workers(), r.memory());
    }
}
