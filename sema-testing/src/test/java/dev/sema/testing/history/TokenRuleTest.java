package dev.sema.testing.history;

import static dev.sema.testing.history.Histories.history;
import static dev.sema.testing.history.Histories.ms;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.history.Violation.Rule;
import org.junit.jupiter.api.Test;

class TokenRuleTest {

    @Test
    void twoGrantsWithOneTokenAreAViolation() {
        Report r = history().declare("s", 2, 1000)
                .hold("w1", 1, "s", 1, 7, 0, 10)
                .hold("w2", 1, "s", 1, 7, 20, 30)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.DUPLICATE_TOKEN);
            assertThat(v.process()).isEqualTo("w2");
            assertThat(v.nanos()).isEqualTo(ms(20));
            assertThat(v.message()).contains("token 7 given to 2 grants", "w1 req=1", "w2 req=1");
        });
    }

    @Test
    void distinctTokensInOrderAreFine() {
        Report r = history().declare("s", 2, 1000)
                .hold("w1", 1, "s", 1, 7, 0, 10)
                .hold("w2", 1, "s", 1, 8, 20, 30)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void tokensAreUniquePerSemaphore() {
        Report r = history().declare("s", 1, 1000).declare("t", 1, 1000)
                .hold("w1", 1, "s", 1, 7, 0, 10)
                .hold("w2", 1, "t", 1, 7, 0, 10)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void zeroPermitGrantsNeedDistinctTokensToo() {
        Report r = history().declare("s", 1, 1000)
                .at(0).invoke("w1", 1, "s", 0).invoke("w2", 1, "s", 0)
                .at(1).ok("w1", 1, 7).ok("w2", 1, 7)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.DUPLICATE_TOKEN);
    }

    @Test
    void grantStartedAfterAnotherCompletedWithALowerTokenIsAViolation() {
        Report r = history().declare("s", 2, 1000)
                .hold("w1", 1, "s", 1, 9, 0, 100)
                .at(20).invoke("w2", 1, "s", 1)
                .at(21).ok("w2", 1, 8)
                .at(30).release("w2", 1)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.TOKEN_ORDER);
            assertThat(v.process()).isEqualTo("w2");
            assertThat(v.message()).contains("w1 req=1 got token 9", "w2 req=1", "lower token 8");
        });
    }

    /**
     * A keyed family's idle key expires from Redis and its next request creates it afresh; sema-redis floors
     * its tokens by Redis's clock, so they keep increasing across that. A key created again whose tokens start
     * over is flagged: a resource that remembers the highest token it saw for the key would refuse its new
     * holders, and one that does not would let a stale holder of the old key through.
     */
    @Test
    void tokensOfAKeyCreatedAgainAfterItExpiredMustStillIncrease() {
        Report r = history().declare("k:key5", 2, 1000)
                .hold("w1", 1, "k:key5", 1, 1_764_000_000_000_000L, 0, 10)
                .at(10).sample("k:key5", 0, 0)
                .at(1_500).sample("k:key5", 0, 0) // gone from Redis: idle for longer than its expiry
                .hold("w2", 1, "k:key5", 1, 1, 2_000, 2_010)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.TOKEN_ORDER);
            assertThat(v.semaphore()).isEqualTo("k:key5");
            assertThat(v.message()).contains("w1 req=1 got token 1764000000000000", "w2 req=1", "lower token 1");
        });
    }

    @Test
    void grantStartedBeforeAnotherCompletedMayHaveALowerToken() {
        Report r = history().declare("s", 2, 1000)
                .at(-1).invoke("w2", 1, "s", 1)
                .hold("w1", 1, "s", 1, 9, 0, 100)
                .at(5).ok("w2", 1, 8)
                .at(30).release("w2", 1)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void grantStartedAtTheInstantAnotherCompletedIsConcurrent() {
        Report r = history().declare("s", 2, 1000)
                .hold("w1", 1, "s", 1, 9, 0, 100)
                .at(0).invoke("w2", 1, "s", 1)
                .at(5).ok("w2", 1, 8)
                .at(30).release("w2", 1)
                .check();
        assertThat(r.violations()).isEmpty();
    }

    @Test
    void zeroPermitGrantsAreInTheOrderCheck() {
        Report r = history().declare("s", 1, 1000)
                .at(0).grant("w1", 1, "s", 0, 9)
                .at(20).grant("w2", 1, "s", 0, 8)
                .check();
        assertThat(r.violations()).extracting(Violation::rule).containsExactly(Rule.TOKEN_ORDER);
    }

    @Test
    void breachesCausedByOneGrantAreReportedTogether() {
        Report r = history().declare("s", 1, 1000)
                .hold("w1", 1, "s", 1, 100, 0, 10)
                .hold("w2", 1, "s", 1, 50, 20, 30)
                .hold("w2", 2, "s", 1, 60, 40, 50)
                .hold("w2", 3, "s", 1, 101, 60, 70)
                .check();
        assertThat(r.violations()).singleElement().satisfies(v -> {
            assertThat(v.rule()).isEqualTo(Rule.TOKEN_ORDER);
            assertThat(v.message()).contains("w1 req=1 got token 100", "lower token 50", "1 more");
        });
    }
}
