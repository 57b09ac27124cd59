package dev.sema.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.Readme;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's "Reactor" section: its Java example is in {@link ReadmeReactorExamples}, verbatim, and runs
 * (sema-examples' ReadmeExamplesTest checks the other sections, without Reactor on its class path).
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReadmeReactorTest {
    @Test
    void theReactorSectionsExampleIsCompiledVerbatim() throws IOException {
        String source = Readme.normalized(Files.readString(
                Path.of("src/test/java/dev/sema/reactor/ReadmeReactorExamples.java")));
        List<String> examples = reactorExamples();
        assertThat(examples).isNotEmpty();
        for (String example : examples) {
            assertThat(source).as("README example not in ReadmeReactorExamples.java")
                    .contains(Readme.normalized(example));
        }
    }

    @Test
    void theExampleRuns() {
        ReadmeReactorExamples examples = new ReadmeReactorExamples();
        examples.example1();
        assertThat(examples.results).containsExactly("8 MiB resized", "48 MiB resized", "16 MiB resized");
        assertThat(examples.reply.block()).isEqualTo("pong");
        assertThat(examples.calls.availablePermits()).isEqualTo(4);
        assertThat(examples.memory.availablePermits()).isEqualTo(64);
    }

    private static List<String> reactorExamples() {
        return Readme.javaBlocks(Readme.section("Reactor"));
    }
}
