package dev.sema.testing.history;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.testing.history.Event.Invoke;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HistoryWriterTest {

    @TempDir
    Path dir;

    @Test
    void recorderWritesOneLinePerCallStampedByTheClock() {
        AtomicLong clock = new AtomicLong(100);
        HistoryWriter writer = HistoryWriter.inMemory(() -> clock.getAndAdd(10));
        Recorder w1 = new Recorder(writer, "w1");
        Recorder sched = new Recorder(writer, "sched");
        w1.start();
        w1.declare("s1", 3, Duration.ofSeconds(2));
        long a = w1.invoke("s1", 2, "acquire");
        long b = w1.invoke("s1", 1, "try");
        w1.ok(a, 77);
        w1.fail(b, "unavailable", "no permit free");
        sched.stop("w1");
        sched.cont("w1");
        w1.lost(a);
        w1.release(a);
        sched.faultBegin("partition", "w1");
        sched.faultEnd("partition", "w1");
        sched.sample("s1", 2, 0);
        sched.kill("w2");
        w1.exit();
        sched.finalCounts("s1", 0, 0);
        assertThat(a).isNotEqualTo(b);
        assertThat(writer.lines()).containsExactly(
                "100 w1 start",
                "110 w1 semaphore sem=s1 limit=3 lease=2000",
                "120 w1 invoke req=" + a + " sem=s1 permits=2 kind=acquire",
                "130 w1 invoke req=" + b + " sem=s1 permits=1 kind=try",
                "140 w1 ok req=" + a + " token=77",
                "150 w1 fail req=" + b + " outcome=unavailable reason=no_permit_free",
                "160 w1 stop",
                "170 w1 cont",
                "180 w1 lost req=" + a,
                "190 w1 release req=" + a,
                "200 sched fault kind=partition target=w1 phase=begin",
                "210 sched fault kind=partition target=w1 phase=end",
                "220 sched sample sem=s1 used=2 queued=0",
                "230 w2 kill",
                "240 w1 exit",
                "250 sched final sem=s1 used=0 queued=0");
    }

    @Test
    void fileWriterAppendsWholeLinesInTimeOrderFromManyThreads() throws Exception {
        Path file = dir.resolve("w1.history");
        int threads = 4;
        int each = 500;
        try (HistoryWriter writer = HistoryWriter.toFile(file)) {
            Recorder rec = new Recorder(writer, "w1");
            List<Thread> started = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                started.add(Thread.ofPlatform().start(() -> {
                    for (int j = 0; j < each; j++) {
                        rec.invoke("s1", j, "acquire-with-a-longer-kind-" + j);
                    }
                }));
            }
            for (Thread t : started) {
                t.join();
            }
        }
        String text = Files.readString(file);
        assertThat(text).endsWith("\n");
        List<Event> events = text.lines().map(HistoryFormat::parse).toList();
        assertThat(events).hasSize(threads * each);
        assertThat(events).extracting(e -> ((Invoke) e).req()).doesNotHaveDuplicates();
        assertThat(events).extracting(Event::nanos).isSorted();
    }

    @Test
    void writerKeepsWritingWhenTheWritingThreadIsInterrupted() throws Exception {
        Path file = dir.resolve("w1.history");
        try (HistoryWriter writer = HistoryWriter.toFile(file)) {
            Recorder rec = new Recorder(writer, "w1");
            long req = rec.invoke("s1", 1, "acquire");
            Thread.currentThread().interrupt();
            try {
                rec.fail(req, "interrupted", "interrupted while waiting");
            } finally {
                assertThat(Thread.interrupted()).as("the interrupt is left as it was").isTrue();
            }
            rec.exit();
        }
        assertThat(Files.readAllLines(file)).hasSize(3);
    }

    @Test
    void openingAFileThatEndsInATornLineCutsItOff() throws Exception {
        Path file = dir.resolve("w1.history");
        Files.writeString(file, "1 w1 start\n2 w1 invoke req=1 sem=s1 perm", StandardCharsets.UTF_8);
        try (HistoryWriter writer = HistoryWriter.toFile(file)) {
            new Recorder(writer, "w1").start();
        }
        List<String> lines = Files.readAllLines(file);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).isEqualTo("1 w1 start");
        assertThat(lines.get(1)).endsWith(" w1 start");

        Path whole = dir.resolve("torn-only.history");
        Files.writeString(whole, "3 w2 ok req=1 tok", StandardCharsets.UTF_8);
        HistoryWriter.toFile(whole).close();
        assertThat(Files.size(whole)).isZero();
    }

    @Test
    void writingAfterCloseFails() {
        HistoryWriter writer = HistoryWriter.inMemory();
        Recorder rec = new Recorder(writer, "w1");
        rec.start();
        writer.close();
        assertThatThrownBy(rec::exit).isInstanceOf(IllegalStateException.class);
        assertThat(writer.lines()).hasSize(1);
    }
}
