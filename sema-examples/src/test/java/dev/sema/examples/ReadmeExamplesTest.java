package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The README's Java examples compile (they are in {@link ReadmeExamples}, verbatim) and the local ones run. */
class ReadmeExamplesTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

    @Test
    void everyJavaExampleOfTheReadmeIsCompiledVerbatim() throws IOException {
        String source = normalized(Files.readString(Path.of("src/test/java/dev/sema/examples/ReadmeExamples.java")));
        List<String> examples = javaExamples();

        assertThat(examples).hasSizeGreaterThanOrEqualTo(21);
        List<String> missing = new ArrayList<>();
        for (String example : examples) {
            if (!source.contains(normalized(example))) {
                missing.add(example);
            }
        }
        assertThat(missing).as("README examples not in ReadmeExamples.java (update it with the README)").isEmpty();
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25, 26})
    void localExampleRuns(int n) throws Exception {
        ReadmeExamples examples = new ReadmeExamples();
        Method example = ReadmeExamples.class.getDeclaredMethod("example" + n);
        example.invoke(examples);
        if (n == 13) {
            assertThat(examples.connection.closed).isTrue();
        }
        if (n == 6) {
            assertThat(examples.sent + examples.rejected).isEqualTo(1);
        }
    }

    /**
     * The README's Java blocks, but for those of its Spring Boot and Reactor sections: they need Spring Boot or
     * Reactor, which are on no class path of this module. sema-spring-example's ReadmeSpringBootTest checks the
     * first against that application's sources, sema-reactor's ReadmeReactorTest the second.
     */
    private static List<String> javaExamples() throws IOException {
        String readme = Files.readString(readme());
        for (String checkedElsewhere : List.of("\n## Spring Boot\n", "\n## Reactor\n")) {
            int start = readme.indexOf(checkedElsewhere);
            if (start >= 0) {
                int next = readme.indexOf("\n## ", start + 1);
                readme = readme.substring(0, start) + (next < 0 ? "" : readme.substring(next));
            }
        }
        Matcher m = JAVA_BLOCK.matcher(readme);
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
