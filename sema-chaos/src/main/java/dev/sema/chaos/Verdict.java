package dev.sema.chaos;

import dev.sema.testing.history.Checker;
import dev.sema.testing.history.History;
import dev.sema.testing.history.HistoryReader;
import dev.sema.testing.history.Report;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** The end of a chaos run: checks every history of the run's directory and writes the report beside them. */
final class Verdict {

    /** Returns the run's exit status: 0 without violations, 1 with some. */
    static int check(ChaosRun.Options o, PrintStream out) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(o.out())) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".hist")).sorted().toList();
        }
        History history = HistoryReader.read(files);
        Report report = new Checker().check(history);
        String text = report.toText();
        Files.writeString(o.out().resolve("report.txt"), text, StandardCharsets.UTF_8);
        out.print(text);
        out.println("chaos: " + (report.passed() ? "no violation" : report.violations().size() + " violations")
                + "; report in " + o.out().resolve("report.txt").toAbsolutePath());
        return report.passed() ? 0 : 1;
    }

    private Verdict() {
    }
}
