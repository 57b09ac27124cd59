package dev.sema.testing.history;

import static dev.sema.testing.history.Histories.history;
import static dev.sema.testing.history.Histories.ms;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.history.Report.Stretch;
import dev.sema.testing.history.Violation.Rule;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RecoveryRuleTest {

    @Test
    void finalCountsAboveZeroAreAViolation() {
        Report used = history().declare("s", 2, 1000).at(10).finalCounts("s", 1, 0).check();
        assertThat(used.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.FINAL_STATE);
            assertThat(v.message()).contains("used 1, queued 0");
        });
        Report queued = history().declare("s", 2, 1000).at(10).finalCounts("s", 0, 3).check();
        assertThat(queued.violations()).extracting(Violation::rule).containsExactly(Rule.FINAL_STATE);
    }

    @Test
    void emptyFinalCountsAreFine() {
        Report r = history().declare("s", 2, 1000).at(10).finalCounts("s", 0, 0).check();
        assertThat(r.violations()).isEmpty();
    }

    /**
     * w1 holds a permit of s (lease 1 s) and is killed at 400, during a partition from 0 to 500; Redis
     * counts the permit, sampled every 100 ms, until {@code backAt}.
     */
    private static Histories strandedByAKill(long backAt) {
        return history().declare("s", 2, 1000)
                .at(-100).grant("w1", 1, "s", 1, 10)
                .at(0).faultBegin("partition", "w1")
                .at(400).kill("w1")
                .at(500).faultEnd("partition", "w1")
                .samples("s", 1, -50, backAt - 50, 100)
                .samples("s", 0, backAt, backAt + 1000, 100)
                .at(backAt + 2000).finalCounts("s", 0, 0);
    }

    @Test
    void permitsStrandedLongerThanLeaseAndSlackAfterTheLastFaultAreAViolation() {
        Report r = strandedByAKill(3000).check(); // stranded at 450..2950: 2450 ms past the fault's end
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.RECOVERY);
            assertThat(v.semaphore()).isEqualTo("s");
            assertThat(v.nanos()).isEqualTo(ms(2950));
            assertThat(v.message()).contains("up to 1 permits stranded", "2.450s past the end of the last fault",
                    "partition w1");
        });
    }

    @Test
    void permitsBackWithinLeaseAndSlackAfterTheLastFaultAreFine() {
        Report r = strandedByAKill(1500).check(); // stranded at 450..1450: 950 ms past the fault's end
        assertThat(r.violations()).isEmpty();
        assertThat(r.longestStranded()).get().satisfies(s -> {
            assertThat(s.start()).isEqualTo(ms(450));
            assertThat(s.end()).isEqualTo(ms(1450));
            assertThat(s.length()).isEqualTo(Duration.ofMillis(1000));
        });
        assertThat(r.longestStrandedAfterFault()).get().satisfies(s -> {
            assertThat(s.fault()).contains("partition w1");
            assertThat(s.measuredFrom()).isEqualTo(ms(500));
            assertThat(s.pastFault()).isEqualTo(Duration.ofMillis(950));
        });
    }

    @Test
    void slackIsAParameter() {
        Report r = strandedByAKill(3000).check(Checker.Options.defaults().withSlack(Duration.ofMillis(1500)));
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void strandedStretchShorterThanTheNoiseIsDropped() {
        // The grant reached Redis before the ok line: one sample sees a permit nobody believes held yet.
        Report r = history().declare("s", 1, 1000)
                .at(0).sample("s", 0, 0)
                .at(100).sample("s", 1, 0)
                .hold("w1", 1, "s", 1, 10, 101, 250)
                .at(200).sample("s", 1, 0)
                .at(300).sample("s", 0, 0)
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.longestStranded()).isEmpty();
    }

    @Test
    void strandedStretchThatEndsBeforeTheLastFaultEndsIsNoViolation() {
        Report r = history().declare("s", 2, 1000)
                .at(0).faultBegin("redis-restart", "redis")
                .samples("s", 1, 0, 5000, 100)
                .samples("s", 0, 5100, 6000, 100)
                .at(5500).faultEnd("redis-restart", "redis")
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.longestStranded()).get().extracting(Stretch::length).isEqualTo(Duration.ofMillis(5000));
        assertThat(r.longestStrandedAfterFault()).isEmpty();
    }

    @Test
    void strandedStretchThatEndsDuringALaterFaultIsThatFaultsNotOneLeftAfterTheEarlierFault() {
        Report r = history().declare("s", 2, 1000)
                .at(0).faultBegin("redis-restart", "redis")
                .at(300).faultEnd("redis-restart", "redis")
                .at(1000).faultBegin("partition", "w3")
                .samples("s", 1, 1200, 3500, 100)
                .samples("s", 0, 3600, 6000, 100)
                .at(5000).faultEnd("partition", "w3")
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.longestStranded()).get().extracting(Stretch::length).isEqualTo(Duration.ofMillis(2300));
        assertThat(r.longestStrandedAfterFault()).isEmpty();
    }

    @Test
    void permitsStrandedInARunWithoutFaultsCountFromTheStretchStart() {
        Report r = history().declare("s", 2, 1000)
                .samples("s", 1, 0, 2100, 100)
                .samples("s", 0, 2200, 2300, 100)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.RECOVERY);
        assertThat(r.violations().getFirst().message()).contains("with no fault in the run");
    }

    @Test
    void permitsBelievedHeldAreNotStranded() {
        Report r = history().declare("s", 2, 1000)
                .at(0).faultBegin("latency", "w1")
                .at(10).faultEnd("latency", "w1")
                .hold("w1", 1, "s", 2, 10, 20, 5000)
                .samples("s", 2, 20, 4900, 100)
                .samples("s", 0, 5000, 5100, 100)
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.longestStranded()).isEmpty();
    }
}
