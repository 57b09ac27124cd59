package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

/** Files of the project beside this module: the tests run in the module's directory. */
final class ProjectFiles {
    private ProjectFiles() {
    }

    /** The file at {@code relative} from the project's root (the directory with README.md above this one). */
    static Path at(String relative) {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !java.nio.file.Files.isRegularFile(dir.resolve("README.md"))) {
            dir = dir.getParent();
        }
        assertThat(dir).as("no README.md above " + Path.of("").toAbsolutePath()).isNotNull();
        Path file = dir.resolve(relative);
        assertThat(file).isRegularFile();
        return file;
    }
}
