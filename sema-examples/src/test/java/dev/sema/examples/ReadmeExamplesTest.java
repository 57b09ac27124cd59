package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.testing.Readme;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The README's Java examples compile (they are in {@link ReadmeExamples}, verbatim) and the local ones run. */
class ReadmeExamplesTest {
    @Test
    void everyJavaExampleOfTheReadmeIsCompiledVerbatim() throws IOException {
        String source = Readme.normalized(
                Files.readString(Path.of("src/test/java/dev/sema/examples/ReadmeExamples.java")));
        List<String> examples = javaExamples();

        assertThat(examples).hasSizeGreaterThanOrEqualTo(21);
        List<String> missing = new ArrayList<>();
        for (String example : examples) {
            if (!source.contains(Readme.normalized(example))) {
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
    private static List<String> javaExamples() {
        return Readme.javaBlocks(Readme.without(List.of("Spring Boot", "Reactor")));
    }
}
