package dev.sema.testing.history;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HistoryReaderTest {

    @TempDir
    Path dir;

    private Path file(String name, String content) throws IOException {
        return Files.writeString(dir.resolve(name), content);
    }

    @Test
    void tornLastLineIsSkippedEvenWhenItParses() throws IOException {
        Path w1 = file("w1.history", """
                1 w1 start
                2 w1 invoke req=1 sem=s1 permits=1 kind=acquire
                3 w1 ok req=1 token=12""");
        History h = HistoryReader.read(w1);
        assertThat(h.events()).extracting(HistoryFormat::format)
                .containsExactly("1 w1 start", "2 w1 invoke req=1 sem=s1 permits=1 kind=acquire");
        assertThat(h.notes()).singleElement().asString().contains("w1.history:3", "torn", "3 w1 ok req=1 token=12");
    }

    @Test
    void tornLastLineThatDoesNotParseIsSkippedToo() throws IOException {
        History h = HistoryReader.read(file("w1.history", "1 w1 start\n2 w1 inv"));
        assertThat(h.events()).hasSize(1);
        assertThat(h.notes()).hasSize(1);
    }

    @Test
    void completeFileHasNoNotes() throws IOException {
        History h = HistoryReader.read(file("w1.history", "1 w1 start\n2 w1 exit\n"), file("empty.history", ""));
        assertThat(h.events()).hasSize(2);
        assertThat(h.notes()).isEmpty();
    }

    @Test
    void filesGivenOutOfOrderAreMergedInTimeOrder() throws IOException {
        Path w1 = file("w1.history", "10 w1 start\n40 w1 invoke req=1 sem=s1 permits=1 kind=acquire\n70 w1 exit\n");
        Path w2 = file("w2.history", "20 w2 start\n40 w2 invoke req=1 sem=s1 permits=1 kind=try\n60 w2 exit\n");
        Path sched = file("sched.history", "5 sched start\n30 sched sample sem=s1 used=0 queued=0\n80 sched exit\n");
        History h = HistoryReader.read(w2, sched, w1);
        assertThat(h.events()).extracting(HistoryFormat::format).containsExactly(
                "5 sched start",
                "10 w1 start",
                "20 w2 start",
                "30 sched sample sem=s1 used=0 queued=0",
                "40 w2 invoke req=1 sem=s1 permits=1 kind=try",       // a tie keeps the order of the files
                "40 w1 invoke req=1 sem=s1 permits=1 kind=acquire",
                "60 w2 exit",
                "70 w1 exit",
                "80 sched exit");
    }

    @Test
    void invalidLineBeforeTheLastMakesTheInputUnreadable() throws IOException {
        Path w1 = file("w1.history", "1 w1 start\n2 w1 ok req=1\n3 w1 exit\n");
        assertThatThrownBy(() -> HistoryReader.read(w1)).isInstanceOf(IOException.class)
                .hasMessageContaining("w1.history:2").hasMessageContaining("missing token=");
    }
}
