package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;

/** The demo as a whole: parts run in order, each part's checks are printed, and one failure fails the run. */
class DemoTest {
    private final ByteArrayOutputStream output = new ByteArrayOutputStream();
    private final Terminal terminal = new Terminal(new PrintStream(output, true, StandardCharsets.UTF_8), false);

    /** A part whose checks are given. */
    private record Fixed(String name, Callable<List<Check>> checks) implements Part {
        @Override
        public String title() {
            return "the " + name + " part";
        }

        @Override
        public List<Check> run() throws Exception {
            return checks.call();
        }
    }

    private static Part passing(String name) {
        return new Fixed(name, () -> List.of(new Check(name + " kept its promise", true, "1 of 1")));
    }

    @Test
    void runPassesWhenEveryCheckOfEveryPartPasses() throws Exception {
        boolean passed = new Demo(terminal).run(List.of(passing("one"), passing("two")));

        assertThat(passed).isTrue();
        assertThat(printed()).contains("== 1/2  the one part ==", "== 2/2  the two part ==",
                "  [ok]     one kept its promise: 1 of 1", "All 2 checks passed.");
    }

    @Test
    void oneFailedCheckFailsTheRunAndIsRepeatedAtTheEnd() throws Exception {
        Part failing = new Fixed("bad", () -> List.of(new Check("bad kept its promise", false, "0 of 1")));

        boolean passed = new Demo(terminal).run(List.of(passing("one"), failing, passing("two")));

        assertThat(passed).isFalse();
        String summary = printed().substring(printed().indexOf("== Summary"));
        assertThat(summary).contains("bad        0 of  1 checks passed", "SOME CHECKS FAILED: 1 of 3.",
                "  [FAILED] bad kept its promise: 0 of 1");
    }

    @Test
    void aPartThatThrowsIsAFailedCheckAndTheNextPartStillRuns() throws Exception {
        Part throwing = new Fixed("broken", () -> {
            throw new IllegalStateException("no Redis today");
        });

        boolean passed = new Demo(terminal).run(List.of(throwing, passing("after")));

        assertThat(passed).isFalse();
        assertThat(printed()).contains(
                "[FAILED] the part ran to the end: java.lang.IllegalStateException: no Redis today",
                "after kept its promise");
    }

    @Test
    void aPartWithoutChecksFails() throws Exception {
        assertThat(new Demo(terminal).run(List.of(new Fixed("empty", List::of)))).isFalse();
        assertThat(printed()).contains("[FAILED] the part checked something");
    }

    @Test
    void standardPartsRunInTheDocumentedOrder() {
        assertThat(Demo.standardParts(terminal).keySet())
                .containsExactly("service", "parallel", "budget", "gate", "leak", "refill", "adaptive", "priorities", "tenants", "redis",
                        "spring", "reactive");
    }

    private String printed() {
        return output.toString(StandardCharsets.UTF_8);
    }
}
