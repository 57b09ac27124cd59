package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.examples.ReactivePart.Blocking;
import dev.sema.examples.ReactivePart.Calls;
import dev.sema.examples.ReactivePart.Limits;
import dev.sema.examples.ReactivePart.Measured;
import dev.sema.examples.ReactivePart.Peaks;
import dev.sema.examples.SpringPart.Answers;
import dev.sema.examples.SpringPart.State;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The demo's reactive part: a scaled-down run against the real reactive example application (in a JVM of its own with
 * BlockHound, as {@code bin/demo} runs it) passes every check, and each check fails when the numbers it is given
 * break its promise.
 */
class ReactivePartTest {

    @Test
    @Timeout(180)
    void scaledDownRunKeepsEveryPromise() throws Exception {
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        Terminal terminal = new Terminal(new PrintStream(output, true, StandardCharsets.UTF_8), false);
        ReactivePart.Settings small = new ReactivePart.Settings(1_000, Duration.ofMillis(400), Duration.ofSeconds(120));

        List<Check> checks = new ReactivePart(small, terminal).run();

        String printed = output.toString(StandardCharsets.UTF_8);
        assertThat(checks).as(printed).hasSize(10)
                .allSatisfy(check -> assertThat(check.passed()).as(check + "\n" + printed).isTrue());
        assertThat(printed).contains("the reactive example application (pid", "BlockHound reported 2 blocking calls");
    }

    // ---------------------------------------------------------------- every check can fail

    @Test
    void reactiveChecksFailOnBrokenNumbers() {
        assertThat(failed(new Run().measured())).isEmpty();

        Run notWatching = new Run();
        notWatching.probed = new Blocking(true, 1, List.of("sleep on reactor-http-nio-2"));
        notWatching.blocking = new Blocking(true, 1, List.of("sleep on reactor-http-nio-2"));
        assertThat(failed(notWatching.measured()))
                .containsExactly("BlockHound watched both event loops: the two sleeps on purpose were reported");
        Run notInstalled = new Run();
        notInstalled.probed = new Blocking(false, 0, List.of());
        notInstalled.blocking = new Blocking(false, 0, List.of());
        assertThat(failed(notInstalled.measured())).containsExactly(
                "BlockHound watched both event loops: the two sleeps on purpose were reported",
                "no event-loop or Reactor thread blocked while requests waited for permits");
        Run blocked = new Run();
        blocked.blocking = new Blocking(true, 3, List.of("a", "b", "park on grpc-default-worker-ELG-3-1"));
        assertThat(failed(blocked.measured()))
                .containsExactly("no event-loop or Reactor thread blocked while requests waited for permits");

        String quotesAnswered = "/api/quotes: every request answered 200 or 503, every 503 with Retry-After and a body"
                + " naming inbound";
        Run quotes500 = new Run();
        quotes500.quotes = new Answers(100, 60, 0, 39, 39, Map.of("inbound", 39L), Map.of("HTTP 500", 1L));
        assertThat(failed(quotes500.measured())).containsExactly(quotesAnswered);
        Run quotesNoRetryAfter = new Run();
        quotesNoRetryAfter.quotes = new Answers(100, 60, 0, 40, 39, Map.of("inbound", 40L), Map.of());
        assertThat(failed(quotesNoRetryAfter.measured())).containsExactly(quotesAnswered);
        Run quotesLost = new Run();
        quotesLost.quotes = new Answers(99, 59, 0, 40, 40, Map.of("inbound", 40L), Map.of());
        assertThat(failed(quotesLost.measured())).containsExactly(quotesAnswered);
        Run quotesNeverRefused = new Run();
        quotesNeverRefused.quotes = new Answers(100, 100, 0, 0, 0, Map.of(), Map.of());
        assertThat(failed(quotesNeverRefused.measured()))
                .containsExactly("/api/quotes: the WebFilter refused some requests and served some");

        Run reportsOther = new Run();
        reportsOther.reports = new Answers(100, 90, 30, 9, 9, Map.of("reports", 9L), Map.of("HttpTimeoutException", 1L));
        assertThat(failed(reportsOther.measured())).containsExactly("/reports: every call answered 200 (fresh, or"
                + " stale from the fallback) or 503 with Retry-After");
        Run noFallback = new Run();
        noFallback.reports = new Answers(100, 60, 0, 40, 40, Map.of("reports", 40L), Map.of());
        assertThat(failed(noFallback.measured())).containsExactly(
                "/reports: calls of the @WithPermits Mono method refused a permit were served by its fallback");

        String grpcEnded = "gRPC: every call ended OK or UNAVAILABLE naming grpc, with grpc-retry-pushback-ms";
        Run grpcInternal = new Run();
        grpcInternal.grpc = new Calls(100, 59, 40, 40, 40, Map.of("INTERNAL", 1L));
        assertThat(failed(grpcInternal.measured())).containsExactly(grpcEnded);
        Run noPushback = new Run();
        noPushback.grpc = new Calls(100, 60, 40, 39, 40, Map.of());
        assertThat(failed(noPushback.measured())).containsExactly(grpcEnded);
        Run namesNone = new Run();
        namesNone.grpc = new Calls(100, 60, 40, 40, 0, Map.of());
        assertThat(failed(namesNone.measured())).containsExactly(grpcEnded);
        Run grpcNeverRefused = new Run();
        grpcNeverRefused.grpc = new Calls(100, 100, 0, 0, 0, Map.of());
        assertThat(failed(grpcNeverRefused.measured()))
                .containsExactly("gRPC: the interceptor refused some calls and served some");

        String bound = "no endpoint ran more requests at once than its semaphore's limit";
        Run overQuotes = new Run();
        overQuotes.peaks = new Peaks(17, 8, 12);
        assertThat(failed(overQuotes.measured())).containsExactly(bound);
        Run overReports = new Run();
        overReports.peaks = new Peaks(16, 9, 12);
        assertThat(failed(overReports.measured())).containsExactly(bound);
        Run overGrpc = new Run();
        overGrpc.peaks = new Peaks(16, 8, 13);
        assertThat(failed(overGrpc.measured())).containsExactly(bound);
        Run uncounted = new Run();
        uncounted.peaks = new Peaks(16, 8, 0);
        assertThat(failed(uncounted.measured())).containsExactly(bound);

        String back = "every permit back at the end, nothing queued";
        Run held = new Run();
        held.end = Map.of("inbound", new State(16, 15, 0, -1));
        assertThat(failed(held.measured())).containsExactly(back);
        Run queued = new Run();
        queued.end = Map.of("grpc", new State(12, 12, 1, -1));
        assertThat(failed(queued.measured())).containsExactly(back);
        Run unread = new Run();
        unread.end = Map.of();
        assertThat(failed(unread.measured())).containsExactly(back);
    }

    private static List<String> failed(Measured measured) {
        return measured.checks().stream().filter(c -> !c.passed()).map(Check::promise).toList();
    }

    /** A run that keeps every promise; each test breaks one number. */
    private static final class Run {
        Blocking probed = new Blocking(true, 2, List.of("sleep on reactor-http-nio-2", "sleep on grpc-nio-worker"));
        Blocking blocking = probed;
        Answers quotes = new Answers(100, 60, 0, 40, 40, Map.of("inbound", 40L), Map.of());
        Answers reports = new Answers(100, 90, 30, 10, 10, Map.of("reports", 10L), Map.of());
        Calls grpc = new Calls(100, 60, 40, 40, 40, Map.of());
        Peaks peaks = new Peaks(16, 8, 12);
        Map<String, State> end = Map.of("inbound", new State(16, 16, 0, -1), "reports", new State(8, 8, 0, -1),
                "grpc", new State(12, 12, 0, -1));

        Measured measured() {
            return new Measured(100, new Limits(16, 8, 12), probed, blocking, quotes, reports, grpc, peaks, end);
        }
    }
}
