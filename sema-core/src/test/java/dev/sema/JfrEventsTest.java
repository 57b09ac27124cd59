package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** API.md §7: the dev.sema.* flight recorder events, recorded with a real Recording and read back. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class JfrEventsTest {

    @Test
    void waitsLimitChangesLeaksAndClosesAreRecorded(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("sema.jfr");
        try (Recording recording = new Recording()) {
            recording.enable("dev.sema.Wait").withThreshold(Duration.ZERO);
            recording.enable("dev.sema.LimitChange");
            recording.enable("dev.sema.Leak");
            recording.enable("dev.sema.Close");
            recording.start();

            Semaphore s = Semaphore.builder().name("jfr").permits(1).maxPermits(4)
                    .leakDetection(LeakDetection.PARANOID).build();
            Permit held = s.acquire();
            CompletableFuture<Permit> granted = s.acquireAsync(1);
            CompletableFuture<Permit> timedOut = s.acquireAsync(1, Duration.ofMillis(1));
            try {
                timedOut.join();
            } catch (java.util.concurrent.CompletionException expected) {
                assertThat(expected).hasCauseInstanceOf(TimeoutException.class);
            }
            held.close();
            Waiting.result(granted).close();
            s.setPermits(3);
            leak(s);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (((LocalSemaphore) s).leakedPermits() == 0) {
                assertThat(System.nanoTime() - deadline).as("leak not found in time").isNegative();
                System.gc();
                Thread.sleep(10);
            }
            s.close();
            Semaphore.create(1).acquire().close(); // an uncontended grant records no Wait
            recording.stop();
            recording.dump(file);
        }
        assertThat(Files.size(file)).isPositive();
        List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().startsWith("dev.sema.")).toList();

        List<RecordedEvent> waits = named(events, "dev.sema.Wait");
        assertThat(waits).extracting(e -> e.getString("outcome")).containsExactlyInAnyOrder("granted", "timeout");
        assertThat(waits).allSatisfy(e -> {
            assertThat(e.getString("semaphore")).isEqualTo("jfr");
            assertThat(e.getLong("permits")).isEqualTo(1);
            assertThat(e.getDuration()).isPositive();
        });
        assertThat(waits).extracting(e -> e.getInt("queueLength")).containsExactlyInAnyOrder(0, 1);

        assertThat(named(events, "dev.sema.LimitChange")).singleElement().satisfies(e -> {
            assertThat(e.getLong("oldLimit")).isEqualTo(1);
            assertThat(e.getLong("newLimit")).isEqualTo(3);
        });
        assertThat(named(events, "dev.sema.Leak")).singleElement().satisfies(e -> {
            assertThat(e.getString("semaphore")).isEqualTo("jfr");
            assertThat(e.getLong("permits")).isEqualTo(2);
            assertThat(e.getString("acquiredBy")).isEqualTo(Thread.currentThread().getName());
        });
        assertThat(named(events, "dev.sema.Close")).singleElement()
                .satisfies(e -> assertThat(e.getString("semaphore")).isEqualTo("jfr"));
    }

    @Test
    void shortWaitsStayBelowTheDefaultThreshold(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("default.jfr");
        try (Recording recording = new Recording(jdk.jfr.Configuration.getConfiguration("default"))) {
            recording.start();
            Semaphore s = Semaphore.create(1);
            Permit held = s.acquire();
            CompletableFuture<Permit> waiter = s.acquireAsync(1);
            held.close();
            Waiting.result(waiter).close();
            recording.stop();
            recording.dump(file);
        }
        List<RecordedEvent> waits = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals("dev.sema.Wait")).toList();
        // The default threshold is 20 ms: a hand-off in microseconds is not recorded.
        assertThat(waits).allSatisfy(e -> assertThat(e.getDuration()).isGreaterThanOrEqualTo(Duration.ofMillis(20)));
    }

    private static void leak(Semaphore s) throws InterruptedException {
        s.acquire(2);
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }
}
