package dev.sema.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The project's README.md as the tests that compile its examples verbatim read it: its {@code java} code blocks, by
 * section, and a form of code that matches an example wherever it is nested. One reading for every such test, so
 * that what counts as an example of the README is decided in one place.
 */
public final class Readme {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

    private Readme() {
    }

    /**
     * The README's text.
     *
     * @return README.md at the root of the project (tests run in their module's directory)
     */
    public static String text() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.exists(dir.resolve("README.md"))) {
            dir = dir.getParent();
        }
        if (dir == null) {
            throw new IllegalStateException("no README.md above " + Path.of("").toAbsolutePath());
        }
        try {
            return Files.readString(dir.resolve("README.md"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * One section of the README, from its heading to the next of the same level.
     *
     * @param heading a level-2 heading, without the {@code ## }
     * @return the section
     * @throws IllegalStateException if the README has no such section
     */
    public static String section(String heading) {
        String readme = text();
        int start = readme.indexOf("\n## " + heading + "\n");
        if (start < 0) {
            throw new IllegalStateException("the README has no section '" + heading + "'");
        }
        int next = readme.indexOf("\n## ", start + 1);
        return next < 0 ? readme.substring(start) : readme.substring(start, next);
    }

    /**
     * The README without some of its sections (those whose examples another module checks).
     *
     * @param headings level-2 headings, without the {@code ## }; absent ones are ignored
     * @return the rest of the README
     */
    public static String without(List<String> headings) {
        String readme = text();
        for (String heading : headings) {
            int start = readme.indexOf("\n## " + heading + "\n");
            if (start >= 0) {
                int next = readme.indexOf("\n## ", start + 1);
                readme = readme.substring(0, start) + (next < 0 ? "" : readme.substring(next));
            }
        }
        return readme;
    }

    /**
     * The {@code java} code blocks of some README text, in order.
     *
     * @param text the README or part of it
     * @return each block's code
     */
    public static List<String> javaBlocks(String text) {
        Matcher m = JAVA_BLOCK.matcher(text);
        List<String> blocks = new ArrayList<>();
        while (m.find()) {
            blocks.add(m.group(1));
        }
        return blocks;
    }

    /**
     * Code with indentation, trailing space and blank lines removed, so that an example matches where it is nested.
     *
     * @param code some code
     * @return the code, normalized
     */
    public static String normalized(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
    }
}
