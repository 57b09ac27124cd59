package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.examples.SpringPart.Answers;
import dev.sema.examples.SpringPart.InFlight;
import dev.sema.examples.SpringPart.Measured;
import dev.sema.examples.SpringPart.Phase;
import dev.sema.examples.SpringPart.Probes;
import dev.sema.examples.SpringPart.Scraped;
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
 * The demo's Spring Boot part: a scaled-down run against the real example application (in a JVM of its own, as
 * {@code bin/demo} runs it) passes every check, each check fails when the numbers it is given break its promise,
 * and the demo reads JSON and the Prometheus format right.
 */
class SpringPartTest {

    @Test
    @Timeout(180)
    void scaledDownRunKeepsEveryPromise() throws Exception {
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        Terminal terminal = new Terminal(new PrintStream(output, true, StandardCharsets.UTF_8), false);
        SpringPart.Settings small = new SpringPart.Settings(400, Duration.ofMillis(300), 12, 20,
                Duration.ofSeconds(120));

        List<Check> checks = new SpringPart(small, terminal).run();

        String printed = output.toString(StandardCharsets.UTF_8);
        assertThat(checks).as(printed).hasSize(8)
                .allSatisfy(check -> assertThat(check.passed()).as(check + "\n" + printed).isTrue());
        assertThat(printed).contains("the example application (pid", "phase 2 done",
                "POST /actuator/semaphores/reports {\"permits\": 12} -> 200");
    }

    // ---------------------------------------------------------------- every check can fail

    @Test
    void springChecksFailOnBrokenNumbers() {
        assertThat(failed(new Run().measured())).isEmpty();

        String answered = "every request was answered 200 or 503, every 503 with a Retry-After and a body naming the"
                + " semaphore that refused it";
        Run unexpected = new Run();
        unexpected.quotes2 = new Answers(11, 6, 0, 4, 4, Map.of("inbound", 4L), Map.of("HTTP 500", 1L));
        assertThat(failed(unexpected.measured())).containsExactly(answered);
        Run noRetryAfter = new Run();
        noRetryAfter.reports1 = new Answers(10, 6, 2, 4, 3, Map.of("reports", 4L), Map.of());
        assertThat(failed(noRetryAfter.measured())).containsExactly(answered);
        Run namesNone = new Run();
        namesNone.quotes1 = new Answers(10, 5, 0, 5, 5, Map.of("inbound", 4L, "?", 1L), Map.of());
        assertThat(failed(namesNone.measured())).containsExactly(answered);
        Run wrongName = new Run();
        wrongName.reports2 = new Answers(10, 6, 2, 4, 4, Map.of("inbound", 1L, "reports", 3L), Map.of());
        assertThat(failed(wrongName.measured())).containsExactly(answered);
        Run staleQuote = new Run();
        staleQuote.quotes1 = new Answers(10, 5, 1, 5, 5, Map.of("inbound", 5L), Map.of());
        assertThat(failed(staleQuote.measured())).containsExactly(answered);

        String probed = "/actuator/health and its liveness and readiness probes answered 200 while sema.web refused"
                + " requests (its paths list /actuator/**; the default exclude-paths wins)";
        Run probeRefused = new Run();
        probeRefused.probes2 = new Probes(30, 29, Map.of("HTTP 503", 1L), 12, 40);
        assertThat(failed(probeRefused.measured())).containsExactly(probed);
        Run noOverlap = new Run();
        noOverlap.probes1 = new Probes(30, 30, Map.of(), 0, 0);
        noOverlap.probes2 = new Probes(30, 30, Map.of(), 0, 0);
        assertThat(failed(noOverlap.measured())).containsExactly(probed);

        Run overQuotes = new Run();
        overQuotes.quotesInFlight2 = new InFlight(13, 12, 6);
        assertThat(failed(overQuotes.measured())).containsExactly("/api/quotes never ran more requests at once than"
                + " the limit of inbound in force (sema.web, adaptive)");

        Run overReports = new Run();
        overReports.reportsInFlight1 = new InFlight(9, 8, 4);
        assertThat(failed(overReports.measured())).containsExactly("/reports never ran more at once than the limit"
                + " of reports in force (@WithPermits)");

        Run notRaised = new Run();
        notRaised.reportsInFlight2 = new InFlight(8, 16, 4);
        assertThat(failed(notRaised.measured()))
                .containsExactly("POST /actuator/semaphores/reports {\"permits\": 16} took effect");
        Run refusedPost = new Run();
        refusedPost.postStatus = 400;
        assertThat(failed(refusedPost.measured()))
                .containsExactly("POST /actuator/semaphores/reports {\"permits\": 16} took effect");

        Run miscounted = new Run();
        miscounted.inbound = new Scraped(11, 6, 0);
        assertThat(failed(miscounted.measured()))
                .containsExactly("/actuator/prometheus counted the grants and refusals the demo counted");
        Run otherOutcome = new Run();
        otherOutcome.reports = new Scraped(8, 12, 1);
        assertThat(failed(otherOutcome.measured()))
                .containsExactly("/actuator/prometheus counted the grants and refusals the demo counted");

        String fallback = "under overload /reports served the copy rendered last (stale, from the fallback of"
                + " @WithPermits) to calls refused a permit, never to one granted, never holding a permit";
        Run noStale = new Run();
        noStale.reports1 = new Answers(10, 4, 0, 6, 6, Map.of("reports", 6L), Map.of());
        noStale.reports2 = new Answers(10, 4, 0, 6, 6, Map.of("reports", 6L), Map.of());
        assertThat(failed(noStale.measured())).containsExactly(fallback);
        Run staleToGranted = new Run(); // two calls granted a permit got the fallback's copy
        staleToGranted.reports = new Scraped(10, 10, 0);
        assertThat(failed(staleToGranted.measured())).containsExactly(
                "/actuator/prometheus counted the grants and refusals the demo counted", fallback);
        Run staleHeldAPermit = new Run(); // two stale copies were counted where the permit is held
        staleHeldAPermit.reportsInFlight1 = new InFlight(8, 8, 6);
        assertThat(failed(staleHeldAPermit.measured())).containsExactly(
                "/actuator/prometheus counted the grants and refusals the demo counted", fallback);

        Run held = new Run();
        held.reportsGauges = new State(16, 15, 0, 1);
        assertThat(failed(held.measured()))
                .containsExactly("/actuator/semaphores and the gauges agree, every permit is back, health is UP");
        Run down = new Run();
        down.health = "DOWN, semaphores DOWN";
        assertThat(failed(down.measured()))
                .containsExactly("/actuator/semaphores and the gauges agree, every permit is back, health is UP");
    }

    /** A run that kept every promise; the tests break one number at a time. */
    private static final class Run {
        Answers quotes1 = new Answers(10, 5, 0, 5, 5, Map.of("inbound", 5L), Map.of());
        // 4 fresh, 2 stale copies from the fallback, 4 refused: 6 calls refused a permit
        Answers reports1 = new Answers(10, 6, 2, 4, 4, Map.of("reports", 4L), Map.of());
        Answers quotes2 = new Answers(10, 6, 0, 4, 4, Map.of("inbound", 4L), Map.of());
        Answers reports2 = new Answers(10, 5, 1, 5, 5, Map.of("reports", 5L), Map.of());
        Probes probes1 = new Probes(30, 30, Map.of(), 12, 40);
        Probes probes2 = new Probes(20, 20, Map.of(), 0, 0);
        InFlight quotesInFlight1 = new InFlight(5, 20, 5);
        InFlight reportsInFlight1 = new InFlight(8, 8, 4);
        InFlight quotesInFlight2 = new InFlight(12, 12, 6);
        InFlight reportsInFlight2 = new InFlight(16, 16, 4);
        int postStatus = 200;
        Scraped inbound = new Scraped(11, 9, 0);
        Scraped reports = new Scraped(8, 12, 0);
        State reportsGauges = new State(16, 16, 0, 0);
        String health = "UP, semaphores UP";

        Measured measured() {
            List<Phase> phases = List.of(
                    new Phase(8, quotes1, reports1, quotesInFlight1, reportsInFlight1, 14, 10, probes1),
                    new Phase(16, quotes2, reports2, quotesInFlight2, reportsInFlight2, 9, 10, probes2));
            return new Measured(phases, 8, 16, postStatus, 16, Map.of("inbound", inbound, "reports", reports),
                    Map.of("inbound", new State(9, 9, 0, -1), "reports", new State(16, 16, 0, -1)),
                    Map.of("inbound", new State(9, 9, 0, 0), "reports", reportsGauges), health);
        }
    }

    private static List<String> failed(Measured measured) {
        return measured.checks().stream().filter(c -> !c.passed()).map(Check::promise).toList();
    }

    // ---------------------------------------------------------------- what the demo reads

    @Test
    void jsonReadsTheActuatorsAnswers() {
        Object root = Json.parse("{\"semaphores\":{\"reports\":{\"kind\":\"local\",\"permits\":16,\"available\":-2,"
                + "\"closed\":false,\"x\":null,\"list\":[1, 2.5e1, \"a\\\"b\\u00e9\"]}}}");

        Map<String, Object> reports = Json.object(root, "semaphores", "reports");
        assertThat(Json.string(reports, "kind")).isEqualTo("local");
        assertThat(Json.number(reports, "permits")).isEqualTo(16);
        assertThat(Json.number(reports, "available")).isEqualTo(-2);
        assertThat(reports.get("closed")).isEqualTo(false);
        assertThat(reports).containsEntry("x", null);
        assertThat(reports.get("list")).isEqualTo(List.of(1.0, 25.0, "a\"bé"));
        assertThat(List.copyOf(reports.keySet())).containsExactly("kind", "permits", "available", "closed", "x",
                "list");
        assertThatThrownBy(() -> Json.parse("{\"a\": 1,}")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("offset 8");
        assertThatThrownBy(() -> Json.parse("{\"a\": 1} x")).hasMessageContaining("end of input");
        assertThatThrownBy(() -> Json.object(root, "semaphores", "db")).hasMessageContaining("no member db");
    }

    @Test
    void prometheusReadsAScrape() {
        Prometheus scrape = Prometheus.parse("""
                # HELP sema_acquire_seconds How long acquire requests waited, by outcome
                # TYPE sema_acquire_seconds histogram
                sema_acquire_seconds_bucket{name="reports",outcome="granted",le="0.001"} 3
                sema_acquire_seconds_bucket{name="reports",outcome="granted",le="+Inf"} 7
                sema_acquire_seconds_count{name="reports",outcome="granted"} 7
                sema_acquire_seconds_count{name="reports",outcome="timeout"} 2
                sema_permits_limit{name="a \\"quoted\\" name"} 16.0
                process_uptime_seconds 12.5

                """);

        assertThat(scrape.value("sema_acquire_seconds_count", "name", "reports", "outcome", "timeout")).isEqualTo(2);
        assertThat(scrape.value("sema_acquire_seconds_bucket", "outcome", "granted", "le", "+Inf")).isEqualTo(7);
        assertThat(scrape.value("sema_permits_limit", "name", "a \\\"quoted\\\" name")).isEqualTo(16);
        assertThat(scrape.value("process_uptime_seconds")).isEqualTo(12.5);
        assertThat(scrape.value("sema_leaks_total", "name", "reports")).isNaN();
        assertThat(scrape.names()).containsExactly("sema_acquire_seconds_bucket", "sema_acquire_seconds_count",
                "sema_permits_limit", "process_uptime_seconds");
        assertThatThrownBy(() -> scrape.value("sema_acquire_seconds_count", "name", "reports"))
                .hasMessageContaining("2 samples");
        assertThatThrownBy(() -> Prometheus.parse("not a sample at all {")).isInstanceOf(
                IllegalArgumentException.class);
    }
}
