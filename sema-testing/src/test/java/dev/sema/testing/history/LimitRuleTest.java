package dev.sema.testing.history;

import static dev.sema.testing.history.Histories.history;
import static dev.sema.testing.history.Histories.ms;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.history.Report.PausedHolder;
import dev.sema.testing.history.Report.StaleOverlap;
import dev.sema.testing.history.Violation.Rule;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class LimitRuleTest {

    @Test
    void overTheLimitByOnePermitForOneMillisecondIsAViolation() {
        Report r = history().declare("s", 2, 1000)
                .hold("w1", 1, "s", 2, 10, 0, 10)
                .hold("w2", 1, "s", 1, 11, 9, 20)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.LIMIT);
            assertThat(v.semaphore()).isEqualTo("s");
            assertThat(v.process()).isEqualTo("w2");
            assertThat(v.nanos()).isEqualTo(ms(9));
            assertThat(v.message()).contains("3 permits believed held for 1.000ms", "w1 req=1", "w2 req=1");
        });
    }

    /**
     * The chaos run records a partition's request as one of its semaphore's, the partition in its kind: what
     * all partitions and the parent's own requests hold together is held to the one limit.
     */
    @Test
    void thePartitionsOfOneSemaphoreAreHeldToItsOneLimitTogether() {
        Report r = history().declare("p8", 8, 1000)
                .at(0).add(new Event.Invoke(ms(0), "w1", 1, "p8", 5, "blocking@gold")).ok("w1", 1, 10)
                .at(1).add(new Event.Invoke(ms(1), "w2", 1, "p8", 2, "timed@silver")).ok("w2", 1, 11)
                .at(2).add(new Event.Invoke(ms(2), "w3", 1, "p8", 2, "try")).ok("w3", 1, 12)
                .at(3).release("w1", 1).release("w2", 1).release("w3", 1)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.LIMIT);
            assertThat(v.semaphore()).isEqualTo("p8");
            assertThat(v.message()).contains("9 permits believed held", "w1 req=1", "w2 req=1", "w3 req=1");
        });
    }

    /**
     * The chaos run records a keyed family's request as one of its key's semaphore ({@code family:key}, as
     * sema-redis names it), each key declared with the family's per-key limit: grants on one key are held to
     * that limit, and the same grants spread over two keys are within each key's.
     */
    @Test
    void eachKeyOfAFamilyIsHeldToItsOwnLimit() {
        Report oneKey = threeGrantsOfOnePermit("k:key0", "k:key0", "k:key0");
        assertThat(oneKey.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.LIMIT);
            assertThat(v.semaphore()).isEqualTo("k:key0");
            assertThat(v.process()).isEqualTo("w3");
            assertThat(v.message()).contains("k:key0 (limit 2): 3 permits believed held", "w1 req=1", "w2 req=1",
                    "w3 req=1");
        });
        assertThat(threeGrantsOfOnePermit("k:key0", "k:key1", "k:key0").violations()).isEmpty();
    }

    /** Grants of one permit each on the given keys of a family whose limit per key is 2, held together. */
    private static Report threeGrantsOfOnePermit(String first, String second, String third) {
        return history().declare("k:key0", 2, 1000).declare("k:key1", 2, 1000)
                .at(0).grant("w1", 1, first, 1, 10)
                .at(1).grant("w2", 1, second, 1, 11)
                .at(2).grant("w3", 1, third, 1, 12)
                .at(5).release("w1", 1).release("w2", 1).release("w3", 1)
                .check();
    }

    @Test
    void permitsReleasedThenGrantedElsewhereAtTheSameInstantAreFine() {
        Report r = history().declare("s", 2, 1000)
                .hold("w1", 1, "s", 2, 10, 0, 10)
                .hold("w2", 1, "s", 1, 11, 10, 20)
                .hold("w3", 1, "s", 1, 12, 10, 20)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void lostOneMillisecondAfterAnotherGrantIsAViolation() {
        Report r = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .hold("w2", 1, "s", 1, 11, 2000, 2100)
                .at(2001).lost("w1", 1)
                .at(2002).release("w1", 1)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.LIMIT);
            assertThat(v.nanos()).isEqualTo(ms(2000));
            assertThat(v.message()).contains("for 1.000ms");
        });
    }

    @Test
    void lostBeforeAnotherGrantIsFine() {
        Report r = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(1999).lost("w1", 1)
                .hold("w2", 1, "s", 1, 11, 2000, 2100)
                .at(2101).release("w1", 1) // a release after the loss ends nothing more
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void killedHoldersBeliefEndsAtItsKill() {
        Report fine = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(100).kill("w1")
                .hold("w2", 1, "s", 1, 11, 1200, 1300)
                .check();
        assertThat(fine.violations()).isEmpty();

        Report late = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .hold("w2", 1, "s", 1, 11, 1200, 1300)
                .at(1201).kill("w1")
                .check();
        assertThat(late.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.LIMIT);
            assertThat(v.message()).contains("for 1.000ms");
        });
    }

    @Test
    void exitedHoldersBeliefEndsAtItsExit() {
        Report r = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(100).exit("w1")
                .hold("w2", 1, "s", 1, 11, 1200, 1300)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    /** w1 holds s (limit 1) and is stopped at 100; its lease runs out; w2 holds s from 1500 to 3500. */
    private static Histories pausedHolder(long w2Token, long w1LostAt) {
        return history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(100).stop("w1")
                .hold("w2", 1, "s", 1, w2Token, 1500, 3500)
                .at(3000).cont("w1")
                .at(w1LostAt).lost("w1", 1)
                .at(w1LostAt + 1).release("w1", 1);
    }

    @Test
    void pausedHolderThatLearnsOfItsLossWithinTheGraceIsAStaleOverlap() {
        Report r = pausedHolder(20, 3100).check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.stale()).singleElement().satisfies(s -> {
            assertThat(s.semaphore()).isEqualTo("s");
            assertThat(s.start()).isEqualTo(ms(1500));
            assertThat(s.length()).isEqualTo(Duration.ofMillis(1600));
            assertThat(s.held()).isEqualTo(2);
            assertThat(s.holders()).singleElement().satisfies(h -> {
                assertThat(h.process()).isEqualTo("w1");
                assertThat(h.stopped()).isEqualTo(ms(100));
                assertThat(h.resumed()).isEqualTo(ms(3000));
                assertThat(h.fenced()).isTrue();
                assertThat(h.laterGrants()).isEqualTo(1);
                assertThat(h.lowestLaterToken()).isEqualTo(20);
            });
        });
    }

    @Test
    void pausedHolderThatLearnsOfItsLossBeyondTheGraceIsAViolation() {
        Report r = pausedHolder(20, 3300).check(); // cont at 3000 + grace 250: counts again from 3250
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.LIMIT);
            assertThat(v.nanos()).isEqualTo(ms(3250));
            assertThat(v.process()).isEqualTo("w1");
            assertThat(v.message()).contains("for 50.000ms");
        });
        assertThat(r.stale()).singleElement().extracting(StaleOverlap::length).isEqualTo(Duration.ofMillis(1750));
    }

    @Test
    void graceIsAParameter() {
        Report r = pausedHolder(20, 3300).check(Checker.Options.defaults().withGrace(Duration.ofMillis(400)));
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void pausedHolderWithAHigherTokenThanALaterGrantIsNotFenced() {
        Report r = pausedHolder(5, 3100).check();
        assertThat(r.violations(Rule.STALE_FENCING)).singleElement().satisfies(v -> {
            assertThat(v.process()).isEqualTo("w1");
            assertThat(v.message()).contains("token 10", "w2 req=1", "got token 5");
        });
        assertThat(r.violations(Rule.LIMIT)).isEmpty();
        assertThat(r.stale()).singleElement().extracting(s -> s.holders().getFirst())
                .extracting(PausedHolder::fenced).isEqualTo(false);
    }

    @Test
    void grantConcurrentWithThePausedHoldersMayHaveALowerToken() {
        // w2 was invoked before w1's ok: Redis may have granted it first (token 5 < 10), and its ok came late.
        Report r = history().declare("s", 2, 1000)
                .at(-5).invoke("w2", 1, "s", 1)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(2).ok("w2", 1, 5)
                .at(100).stop("w1")
                .hold("w3", 1, "s", 1, 20, 1500, 1600)
                .at(2000).release("w2", 1)
                .at(3000).cont("w1")
                .at(3100).lost("w1", 1)
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.stale()).singleElement().satisfies(s -> assertThat(s.holders()).singleElement()
                .satisfies(h -> assertThat(h.fenced()).isTrue()));
    }

    @Test
    void secondPauseWithinTheGraceOfTheFirstKeepsTheBeliefPaused() {
        Report r = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(100).stop("w1")
                .at(200).cont("w1")
                .at(300).stop("w1") // before the first pause's grace ends at 450
                .hold("w2", 1, "s", 1, 20, 400, 3500)
                .at(3000).cont("w1")
                .at(3100).lost("w1", 1)
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.stale()).singleElement().satisfies(s -> {
            assertThat(s.length()).isEqualTo(Duration.ofMillis(2700));
            assertThat(s.holders()).extracting(PausedHolder::process).containsExactly("w1");
        });
        assertThat(r.pauseWindows()).isEqualTo(2);
    }

    @Test
    void pausedHolderKilledWhileStoppedHoldsNothingAfterTheKill() {
        Report r = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 1, 10)
                .at(100).stop("w1")
                .at(1200).kill("w1")
                .hold("w2", 1, "s", 1, 20, 1300, 1400)
                .check();
        assertThat(r.violations()).isEmpty();
        assertThat(r.stale()).isEmpty();
        assertThat(r.pauseWindows()).isEqualTo(1);
        assertThat(r.longestPause()).isEqualTo(Duration.ofMillis(1100));
    }

    @Test
    void zeroPermitGrantsHoldNothing() {
        Report r = history().declare("s", 1, 1000)
                .hold("w1", 1, "s", 1, 10, 0, 100)
                .hold("w2", 1, "s", 0, 11, 50, 60)
                .check();
        assertThat(r.violations()).isEmpty();
    }
}
