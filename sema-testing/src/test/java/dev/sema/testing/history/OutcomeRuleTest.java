package dev.sema.testing.history;

import static dev.sema.testing.history.Histories.history;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.history.Event.Outcome;
import dev.sema.testing.history.Violation.Rule;
import org.junit.jupiter.api.Test;

/** Rules 3 (one outcome per request) and 4 (no hung process), and the declarations. */
class OutcomeRuleTest {

    @Test
    void requestWithoutOutcomeBeforeExitIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .at(0).start("w1")
                .at(1).invoke("w1", 1, "s", 1)
                .at(2).exit("w1")
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.MISSING_OUTCOME);
            assertThat(v.process()).isEqualTo("w1");
            assertThat(v.message()).contains("w1 req=1", "exited");
        });
    }

    @Test
    void requestWithoutOutcomeIsExcusedByAKill() {
        Report r = history().declare("s", 1, 1000)
                .at(0).start("w1")
                .at(1).invoke("w1", 1, "s", 1)
                .at(2).kill("w1")
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.excused()).isEqualTo(1);
    }

    @Test
    void requestWithoutOutcomeWhileItsProcessRunsOnIsHung() {
        Report r = history().declare("s", 1, 1000)
                .at(1).invoke("w1", 1, "s", 1)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.MISSING_OUTCOME);
            assertThat(v.message()).contains("hung");
        });
    }

    @Test
    void outcomeAfterExitIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .at(0).start("w1")
                .at(1).invoke("w1", 1, "s", 1)
                .at(2).exit("w1")
                .at(3).fail("w1", 1, Outcome.TIMEOUT)
                .check();
        assertThat(r.violations()).extracting(Violation::rule)
                .containsExactly(Rule.MISSING_OUTCOME, Rule.AFTER_END);
    }

    @Test
    void secondOutcomeIsAViolation() {
        Report twoOks = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(1).ok("w1", 1, 11)
                .at(2).release("w1", 1)
                .check();
        assertThat(twoOks.violations()).extracting(Violation::rule).containsExactly(Rule.DOUBLE_OUTCOME);

        Report okThenFail = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(1).fail("w1", 1, Outcome.ERROR)
                .at(2).release("w1", 1)
                .check();
        assertThat(okThenFail.violations()).extracting(Violation::rule).containsExactly(Rule.DOUBLE_OUTCOME);
    }

    @Test
    void oneOutcomeEachIsFine() {
        Report r = history().declare("s", 1, 1000)
                .at(0).start("w1")
                .hold("w1", 1, "s", 1, 10, 1, 5)
                .at(6).invoke("w1", 2, "s", 1)
                .at(7).fail("w1", 2, Outcome.UNAVAILABLE)
                .at(8).exit("w1")
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.requests()).isEqualTo(2);
        assertThat(r.grants()).isEqualTo(1);
        assertThat(r.failsByOutcome()).containsExactlyEntriesOf(java.util.Map.of("unavailable", 1L));
    }

    @Test
    void eventForARequestNeverInvokedIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .at(0).ok("w1", 5, 10)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.UNKNOWN_REQUEST);
    }

    @Test
    void requestIdInvokedTwiceIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .hold("w1", 1, "s", 1, 10, 0, 5)
                .at(6).invoke("w1", 1, "s", 1)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.UNKNOWN_REQUEST);
    }

    @Test
    void releaseOrLossBeforeTheOkIsAViolation() {
        Report releasedEarly = history().declare("s", 1, 1000)
                .at(0).invoke("w1", 1, "s", 1)
                .at(1).release("w1", 1)
                .at(2).ok("w1", 1, 10)
                .at(3).release("w1", 1)
                .check();
        assertThat(releasedEarly.violations()).extracting(Violation::rule).containsExactly(Rule.END_BEFORE_OK);

        Report lostAfterFail = history().declare("s", 1, 1000)
                .at(0).invoke("w1", 1, "s", 1)
                .at(1).fail("w1", 1, Outcome.TIMEOUT)
                .at(2).lost("w1", 1)
                .check();
        assertThat(lostAfterFail.violations()).extracting(Violation::rule).containsExactly(Rule.END_BEFORE_OK);
    }

    @Test
    void secondReleaseIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .hold("w1", 1, "s", 1, 10, 0, 5)
                .at(6).release("w1", 1)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.DOUBLE_RELEASE);
    }

    @Test
    void releaseAfterLossAndLossAfterReleaseAreFine() {
        Report r = history().declare("s", 2, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(5).lost("w1", 1)
                .at(6).release("w1", 1)
                .hold("w1", 2, "s", 1, 11, 7, 8)
                .at(9).lost("w1", 2)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void processStartedButNeverEndedHung() {
        Report r = history().at(0).start("w1").check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.HUNG_PROCESS);
            assertThat(v.message()).contains("neither exited nor was killed");
        });
    }

    @Test
    void processStartedAgainWithoutAnEndCrashedOnItsOwn() {
        Report r = history().at(0).start("w1").at(5).start("w1").at(6).exit("w1").check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.HUNG_PROCESS);
            assertThat(v.message()).contains("crashed on its own");
        });
    }

    @Test
    void processThatExitsOrIsKilledDidNotHang() {
        Report r = history().at(0).start("w1").start("w2").at(5).exit("w1").kill("w2").check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.processes()).isEqualTo(2);
    }

    @Test
    void processStartedAgainAfterAKillMayReuseItsRequestIds() {
        Report r = history().declare("s", 1, 1000)
                .at(0).start("w1")
                .at(1).grant("w1", 1, "s", 1, 10)
                .at(2).kill("w1")
                .at(1500).start("w1")
                .hold("w1", 1, "s", 1, 11, 1501, 1502)
                .at(1503).exit("w1")
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.runs()).isEqualTo(2);
    }

    @Test
    void eventOfAKilledProcessIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .at(0).start("w1")
                .at(1).grant("w1", 1, "s", 1, 10)
                .at(2).kill("w1")
                .at(3).release("w1", 1)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.AFTER_END);
    }

    @Test
    void semaphoreUsedWithoutDeclarationIsAViolation() {
        Report r = history().hold("w1", 1, "s", 1, 10, 0, 5).check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.DECLARATION);
            assertThat(v.semaphore()).isEqualTo("s");
        });
    }

    @Test
    void semaphoreDeclaredTwiceDifferentlyIsAViolation() {
        Report r = history().at(0).declare("s", 1, 1000).declare("s", 1, 1000).declare("s", 2, 1000).check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.DECLARATION);
        assertThat(r.semaphores()).isEqualTo(1);
    }
}
