package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.SemaphoreRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.env.Environment;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Grafana dashboard (docs/grafana/sema-dashboard.json) against a real scrape: every metric its queries and
 * variables name is in {@code /actuator/prometheus} of the example application after some traffic, the histogram
 * buckets its p50/p99 panels need are there with samples, and the JSON has what an import needs.
 */
@SpringBootTest(classes = ExampleApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class DashboardTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern SEMA_METRIC = Pattern.compile("\\bsema_[a-z0-9_]+\\b");
    private static final Pattern SAMPLE_NAME = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]");

    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    @Autowired
    Environment environment;
    Http http;

    @BeforeEach
    void client() {
        http = new Http(port);
    }

    @AfterEach
    void closeClient() {
        http.close();
    }

    @Test
    void everyMetricTheDashboardQueriesIsInTheScrapeAfterTraffic() throws IOException {
        traffic();
        String scrape = http.get("/actuator/prometheus").body();
        Set<String> scraped = new TreeSet<>();
        for (String line : scrape.split("\n")) {
            Matcher m = SAMPLE_NAME.matcher(line);
            if (m.find()) {
                scraped.add(m.group(1));
            }
        }

        List<String> queries = queries(dashboard());
        Set<String> named = new LinkedHashSet<>();
        for (String query : queries) {
            // A query may offer alternatives ("a or b", the percentile panels: buckets or gauges); one must be there.
            boolean answered = false;
            for (String alternative : query.split(" or ")) {
                Set<String> names = new LinkedHashSet<>();
                Matcher m = SEMA_METRIC.matcher(alternative);
                while (m.find()) {
                    names.add(m.group());
                }
                named.addAll(names);
                answered |= !names.isEmpty() && scraped.containsAll(names);
            }
            assertThat(answered).as("a query none of whose alternatives names only sema_ metrics of the scrape "
                    + scraped + ": " + query).isTrue();
        }

        assertThat(named).as("the dashboard queries every meter of SemaphoreMetrics, in either mode").contains(
                "sema_permits_limit", "sema_permits_max", "sema_permits_used", "sema_permits_available",
                "sema_queue_waiters", "sema_acquire_seconds_count", "sema_acquire_seconds_bucket",
                "sema_permit_hold_seconds_bucket", "sema_permit_hold_seconds_sum", "sema_permit_hold_seconds_count",
                "sema_leaks_total", "sema_acquire_percentile_seconds", "sema_permit_hold_percentile_seconds");
        percentilePanelsHaveSamples(scrape);
    }

    /** The p50/p99 panels read buckets here (per-sample timers): with samples in them, more than one per series. */
    void percentilePanelsHaveSamples(String scrape) {
        for (String name : List.of("inbound", "reports")) {
            String n = "{name=\"" + name + "\",";
            assertThat(value(scrape, "sema_acquire_seconds_bucket" + n + "outcome=\"granted\",le=\"+Inf\"}"))
                    .isPositive();
            assertThat(value(scrape, "sema_permit_hold_seconds_bucket" + n + "le=\"+Inf\"}")).isPositive();
        }
        assertThat(count(scrape, "sema_acquire_seconds_bucket{name=\"reports\",outcome=\"timeout\","))
                .isGreaterThan(10);
        assertThat(value(scrape, "sema_acquire_seconds_bucket{name=\"reports\",outcome=\"timeout\",le=\"+Inf\"}"))
                .isPositive();
        assertThat(value(scrape, "sema_acquire_seconds_bucket{name=\"inbound\",outcome=\"unavailable\",le=\"+Inf\"}"))
                .isPositive();
        assertThat(scrape).doesNotContain("sema_permit_hold_percentile_seconds");
    }

    @Test
    void dashboardHasWhatAnImportNeeds() throws IOException {
        JsonNode dashboard = dashboard();
        assertThat(dashboard.get("uid").asString()).isEqualTo("sema-semaphores");
        assertThat(dashboard.get("title").asString()).isEqualTo("Sema semaphores");
        assertThat(dashboard.get("schemaVersion").asInt()).isGreaterThanOrEqualTo(36);

        List<String> variables = new ArrayList<>();
        for (JsonNode variable : dashboard.get("templating").get("list")) {
            variables.add(variable.get("name").asString());
        }
        assertThat(variables).containsExactly("datasource", "job", "instance", "name");

        Set<Integer> ids = new HashSet<>();
        boolean repeatsByName = false;
        List<String> panelTitles = new ArrayList<>();
        for (JsonNode panel : dashboard.get("panels")) {
            assertThat(ids.add(panel.get("id").asInt())).as("panel ids are unique").isTrue();
            JsonNode grid = panel.get("gridPos");
            assertThat(grid.get("x").asInt() + grid.get("w").asInt()).isLessThanOrEqualTo(24);
            if (panel.get("type").asString().equals("row")) {
                repeatsByName |= panel.has("repeat") && panel.get("repeat").asString().equals("name");
                continue;
            }
            panelTitles.add(panel.get("title").asString());
            assertThat(panel.get("datasource").get("uid").asString()).isEqualTo("${datasource}");
            for (JsonNode target : panel.get("targets")) {
                assertThat(target.get("refId").asString()).isNotEmpty();
                assertThat(target.get("datasource").get("uid").asString()).isEqualTo("${datasource}");
            }
        }
        assertThat(repeatsByName).as("a row repeated for each semaphore of the name variable").isTrue();
        assertThat(panelTitles).contains("Limit against used", "Queue", "Wait p50 and p99, by outcome",
                "Hold time p50, p99 and mean", "Leaks");

        // What the description says the percentile panels need is what this application configures.
        assertThat(dashboard.get("description").asString())
                .contains("management.metrics.distribution.percentiles-histogram.sema=true");
        assertThat(environment.getProperty("management.metrics.distribution.percentiles-histogram.sema"))
                .isEqualTo("true");
    }

    /** Granted, refused-at-once and timed-out requests on both semaphores, and permits held for a while. */
    private void traffic() {
        for (int i = 0; i < 20; i++) {
            assertThat(http.get("/api/quotes/S" + i).statusCode()).isEqualTo(200);
            assertThat(http.get("/reports/" + i).statusCode()).isEqualTo(200);
        }
        Semaphore inbound = registry.get("inbound");
        Semaphore reports = registry.get("reports");
        try (Permit a = inbound.tryAcquire(inbound.permits()).orElseThrow();
                Permit b = reports.tryAcquire(reports.permits()).orElseThrow()) {
            assertThat(http.get("/api/quotes/X").statusCode()).isEqualTo(503);
            assertThat(http.get("/reports/x").statusCode()).isEqualTo(503);
        }
    }

    private static JsonNode dashboard() throws IOException {
        return JSON.readTree(Files.readString(ProjectFiles.at("docs/grafana/sema-dashboard.json")));
    }

    /** Every PromQL expression of the panels' targets and of the variables' queries. */
    private static List<String> queries(JsonNode dashboard) {
        List<String> queries = new ArrayList<>();
        for (JsonNode panel : dashboard.get("panels")) {
            if (panel.has("targets")) {
                for (JsonNode target : panel.get("targets")) {
                    queries.add(target.get("expr").asString());
                }
            }
        }
        for (JsonNode variable : dashboard.get("templating").get("list")) {
            if (variable.get("type").asString().equals("query")) {
                queries.add(variable.get("definition").asString());
                queries.add(variable.get("query").get("query").asString());
            }
        }
        assertThat(queries).hasSizeGreaterThanOrEqualTo(10);
        return queries;
    }

    static long count(String scrape, String prefix) {
        return scrape.lines().filter(l -> l.startsWith(prefix)).count();
    }

    static double value(String scrape, String series) {
        return scrape.lines().filter(l -> l.startsWith(series + " "))
                .mapToDouble(l -> Double.parseDouble(l.substring(series.length() + 1).trim())).findFirst()
                .orElseThrow(() -> new AssertionError("no " + series + " in the scrape"));
    }
}
