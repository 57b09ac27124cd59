package dev.sema.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's "Reactor" section: its Java example is in {@link ReadmeReactorExamples}, verbatim, and runs
 * (sema-examples' ReadmeExamplesTest checks the other sections, without Reactor on its class path).
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReadmeReactorTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

    @Test
    void theReactorSectionsExampleIsCompiledVerbatim() throws IOException {
        String source = normalized(Files.readString(
                Path.of("src/test/java/dev/sema/reactor/ReadmeReactorExamples.java")));
        List<String> examples = reactorExamples();
        assertThat(examples).isNotEmpty();
        for (String example : examples) {
            assertThat(source).as("README example not in ReadmeReactorExamples.java").contains(normalized(example));
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

    private static List<String> reactorExamples() throws IOException {
        String readme = Files.readString(readme());
        int start = readme.indexOf("\n## Reactor\n");
        assertThat(start).as("the README has a Reactor section").isNotNegative();
        int next = readme.indexOf("\n## ", start + 1);
        Matcher m = JAVA_BLOCK.matcher(next < 0 ? readme.substring(start) : readme.substring(start, next));
        List<String> blocks = new ArrayList<>();
        while (m.find()) {
            blocks.add(m.group(1));
        }
        return blocks;
    }

    /** The README at the root of the project (tests run in the module's directory). */
    private static Path readme() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("README.md"))) {
            dir = dir.getParent();
        }
        assertThat(dir).as("no README.md above " + Path.of("").toAbsolutePath()).isNotNull();
        return dir.resolve("README.md");
    }

    /** Code with indentation, trailing space and blank lines removed, so an example matches where it is nested. */
    private static String normalized(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
    }
}
