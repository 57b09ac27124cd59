package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.TooManyKeysException;
import dev.sema.micrometer.SemaphoreMetrics;
import dev.sema.spring.SemaphoreRegistry;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.env.Environment;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Grafana dashboard (docs/grafana/sema-dashboard.json) against a real scrape: every query and variable, with the
 * dashboard's variables set to a semaphore, has an alternative whose every series selector selects series of
 * {@code /actuator/prometheus} of the example application after some traffic, grouping by labels those series have;
 * the histogram buckets its p50/p99 panels need are there with samples, and the JSON has what an import needs. The
 * partitions row, and every other panel for a partitioned semaphore, are checked the same way against a scrape of a
 * partitioned semaphore bound in the application's mode, through the application's meter filters.
 */
@SpringBootTest(classes = ExampleApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Timeout(60)
class DashboardTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern SEMA_METRIC = Pattern.compile("\\bsema_[a-z0-9_]+\\b");
    private static final Pattern SAMPLE_NAME = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]");
    /** In a query: a series selector (name, matchers), one matcher, the labels of a grouping. */
    private static final Pattern SELECTOR = Pattern.compile("\\b(sema_[a-z0-9_]+)\\b(\\{([^}]*)\\})?");
    private static final Pattern MATCHER = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"([^\"]*)\"");
    private static final Pattern GROUPING = Pattern.compile("\\bby\\s*\\(([^)]*)\\)");
    /** In a scrape: a sample line (name, labels), one label. */
    private static final Pattern SERIES = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})? \\S+( \\S+)?$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    @LocalServerPort
    int port;
    @Autowired
    SemaphoreRegistry registry;
    @Autowired
    Environment environment;
    @Autowired
    MeterRegistry meters;
    @Autowired
    ObjectProvider<MeterFilter> meterFilters;
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

        List<String> queries = queries(dashboard(), Scraped.PLAIN);
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
        for (String name : List.of("inbound", "reports")) {
            assertSelected(queries, scrape, name);
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
            String none = "partition=\"\",";
            assertThat(value(scrape, "sema_acquire_seconds_bucket" + n + "outcome=\"granted\"," + none + "le=\"+Inf\"}"))
                    .isPositive();
            assertThat(value(scrape, "sema_permit_hold_seconds_bucket" + n + none + "le=\"+Inf\"}")).isPositive();
        }
        assertThat(count(scrape, "sema_acquire_seconds_bucket{name=\"reports\",outcome=\"timeout\","))
                .isGreaterThan(10);
        assertThat(value(scrape,
                "sema_acquire_seconds_bucket{name=\"reports\",outcome=\"timeout\",partition=\"\",le=\"+Inf\"}"))
                .isPositive();
        assertThat(value(scrape,
                "sema_acquire_seconds_bucket{name=\"inbound\",outcome=\"unavailable\",partition=\"\",le=\"+Inf\"}"))
                .isPositive();
        assertThat(scrape).doesNotContain("sema_permit_hold_percentile_seconds");
    }

    /**
     * The partitions row (and every other query) against a scrape of a partitioned semaphore: bound in the mode the
     * starter chose for the application's semaphores, to a Prometheus registry configured by the application's
     * meter filters (its distribution settings), after granted, refused, timed-out and queued requests.
     */
    @Test
    void everyQueryAnswersForAPartitionedSemaphore() throws Exception {
        boolean perSample = meters.get("sema.acquire").tag("name", "reports").meter() instanceof Timer;
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        meterFilters.orderedStream().forEach(prometheus.config()::meterFilter);
        Semaphore api = Semaphore.builder().name("api").permits(4).partition("checkout", 0.5).partition("batch", 0.25)
                .build();
        String scrape;
        try (SemaphoreMetrics metrics = SemaphoreMetrics.builder(api).perSampleTimers(perSample).build()) {
            metrics.bindTo(prometheus);
            scrape = partitionTraffic(api, prometheus);
        }

        List<String> queries = queries(dashboard(), Scraped.PARTITIONED);
        assertSelected(queries, scrape, "api");
        Set<String> named = new TreeSet<>();
        for (String query : queries) {
            Matcher m = SEMA_METRIC.matcher(query);
            while (m.find()) {
                named.add(m.group());
            }
        }
        assertThat(named).as("the dashboard queries every partition meter").contains("sema_partition_used",
                "sema_partition_guarantee", "sema_partition_waiters");
        assertThat(value(scrape, "sema_partition_used{name=\"api\",partition=\"checkout\"}")).isEqualTo(2);
        assertThat(value(scrape, "sema_partition_guarantee{name=\"api\",partition=\"checkout\"}")).isEqualTo(2);
        assertThat(value(scrape, "sema_partition_guarantee{name=\"api\",partition=\"batch\"}")).isEqualTo(1);
        assertThat(value(scrape, "sema_partition_waiters{name=\"api\",partition=\"batch\"}")).isEqualTo(1);
        for (String partition : List.of("checkout", "batch", "")) {
            assertThat(value(scrape, "sema_acquire_seconds_count{name=\"api\",outcome=\"granted\",partition=\""
                    + partition + "\"}")).as("granted in partition '" + partition + "'").isPositive();
        }
        assertThat(value(scrape, "sema_acquire_seconds_count{name=\"api\",outcome=\"unavailable\","
                + "partition=\"batch\"}")).isEqualTo(1);
        assertThat(value(scrape, "sema_acquire_seconds_count{name=\"api\",outcome=\"timeout\","
                + "partition=\"checkout\"}")).isEqualTo(1);
        partitionPercentilesHaveSamples(scrape);
    }

    /** The wait p99 panel of the partitions row reads buckets here (per-sample timers): one series per partition. */
    void partitionPercentilesHaveSamples(String scrape) {
        for (String partition : List.of("checkout", "batch", "")) {
            assertThat(value(scrape, "sema_acquire_seconds_bucket{name=\"api\",outcome=\"granted\",partition=\""
                    + partition + "\",le=\"+Inf\"}")).isPositive();
        }
    }

    /**
     * The keyed row against a scrape of a keyed family bound as the application's semaphores are: two keys held, a
     * third refused by maxKeys, a full key timed out and one queued, scraped while so.
     */
    @Test
    void everyQueryOfTheKeyedRowAnswersForAKeyedFamily() throws Exception {
        boolean perSample = meters.get("sema.acquire").tag("name", "reports").meter() instanceof Timer;
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        meterFilters.orderedStream().forEach(prometheus.config()::meterFilter);
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(2).maxKeys(2)
                .build();
        String scrape;
        try (SemaphoreMetrics metrics = SemaphoreMetrics.builder(exports).perSampleTimers(perSample).build()) {
            metrics.bindTo(prometheus);
            Permit acme = exports.get("acme").acquire(2);
            Permit globex = exports.get("globex").acquire(1);
            assertThatThrownBy(() -> exports.get("initech").acquire(1)).isInstanceOf(TooManyKeysException.class);
            assertThatThrownBy(() -> exports.get("acme").acquire(1, Duration.ofMillis(5)))
                    .isInstanceOf(TimeoutException.class);
            CompletableFuture<Permit> queued = exports.get("acme").acquireAsync(1);
            scrape = prometheus.scrape();
            acme.close();
            globex.close();
            queued.get(10, TimeUnit.SECONDS).close();
        }
        assertThat(exports.size()).isZero();

        List<String> queries = queries(dashboard(), Scraped.KEYED);
        assertSelected(queries, scrape, "exports");
        assertThat(String.join("\n", queries)).contains("sema_keys{", "sema_keys_max{");
        assertThat(value(scrape, "sema_keys{name=\"exports\"}")).isEqualTo(2);
        assertThat(value(scrape, "sema_keys_max{name=\"exports\"}")).isEqualTo(2);
        assertThat(value(scrape, "sema_acquire_seconds_count{name=\"exports\",outcome=\"unavailable\",partition=\"\"}"))
                .isEqualTo(1);
        assertThat(value(scrape, "sema_acquire_seconds_count{name=\"exports\",outcome=\"timeout\",partition=\"\"}"))
                .isEqualTo(1);
        assertThat(scrape).as("no key in any tag").doesNotContain("acme", "globex", "initech");
    }

    /**
     * Limit 4 (checkout guaranteed 2, batch 1): every partition and the parent granted, then full, batch refused at
     * once, checkout timed out and batch queued; scraped while so, then everything given back.
     */
    private static String partitionTraffic(Semaphore api, PrometheusMeterRegistry prometheus) throws Exception {
        Semaphore checkout = api.partition("checkout");
        Semaphore batch = api.partition("batch");
        Permit c = checkout.acquire(2);
        Permit b = batch.acquire(1);
        Permit own = api.acquire(1);
        assertThat(batch.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> checkout.acquire(1, Duration.ofMillis(5))).isInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> queued = batch.acquireAsync(1);
        String scrape = prometheus.scrape();
        c.close();
        b.close();
        own.close();
        queued.get(10, TimeUnit.SECONDS).close();
        return scrape;
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
        assertThat(variables).containsExactly("datasource", "job", "instance", "name", "partitioned", "keyed");

        Set<Integer> ids = new HashSet<>();
        boolean repeatsByName = false;
        boolean repeatsByPartitioned = false;
        boolean repeatsByKeyed = false;
        List<String> panelTitles = new ArrayList<>();
        for (JsonNode panel : dashboard.get("panels")) {
            assertThat(ids.add(panel.get("id").asInt())).as("panel ids are unique").isTrue();
            JsonNode grid = panel.get("gridPos");
            assertThat(grid.get("x").asInt() + grid.get("w").asInt()).isLessThanOrEqualTo(24);
            if (panel.get("type").asString().equals("row")) {
                repeatsByName |= panel.has("repeat") && panel.get("repeat").asString().equals("name");
                repeatsByPartitioned |= panel.has("repeat") && panel.get("repeat").asString().equals("partitioned");
                repeatsByKeyed |= panel.has("repeat") && panel.get("repeat").asString().equals("keyed");
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
        assertThat(repeatsByPartitioned).as("a row repeated for each partitioned semaphore").isTrue();
        assertThat(repeatsByKeyed).as("a row repeated for each keyed family").isTrue();
        assertThat(panelTitles).contains("Limit against used", "Queue", "Wait p50 and p99, by outcome",
                "Hold time p50, p99 and mean", "Leaks", "Used against guarantee, by partition", "Queue, by partition",
                "Acquire requests per second, by partition", "Wait p99 of granted requests, by partition",
                "Live keys against maxKeys", "Requests per second, by outcome", "Wait p99 of granted requests");

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

    /** Which semaphores a scrape has, and so which of the dashboard's queries it must answer. */
    enum Scraped {
        /** Semaphores without partitions: every query but those of the partitions and keyed rows. */
        PLAIN,
        /** A partitioned semaphore: every query but those of the keyed row. */
        PARTITIONED,
        /** A keyed family: the keyed row's and its variable's only (a family has no limit of its own). */
        KEYED
    }

    /**
     * Every PromQL expression of the panels' targets and of the variables' queries that a scrape of {@code what}
     * answers: the rows repeated by the partitioned and the keyed variable, and those variables, only for those.
     */
    private static List<String> queries(JsonNode dashboard, Scraped what) {
        List<String> queries = new ArrayList<>();
        String row = "";
        for (JsonNode panel : dashboard.get("panels")) {
            if (panel.get("type").asString().equals("row")) {
                row = panel.has("repeat") ? panel.get("repeat").asString() : "";
            }
            if (panel.has("targets") && answers(what, row)) {
                for (JsonNode target : panel.get("targets")) {
                    queries.add(target.get("expr").asString());
                }
            }
        }
        for (JsonNode variable : dashboard.get("templating").get("list")) {
            String name = variable.get("name").asString();
            if (variable.get("type").asString().equals("query")
                    && (what == Scraped.KEYED ? name.equals("keyed") : answers(what, name))) {
                queries.add(variable.get("definition").asString());
                queries.add(variable.get("query").get("query").asString());
            }
        }
        assertThat(queries).hasSizeGreaterThanOrEqualTo(what == Scraped.KEYED ? 4 : 10);
        return queries;
    }

    /** Whether a scrape of {@code what} answers the queries of the row repeated by {@code repeat} ("" for none). */
    private static boolean answers(Scraped what, String repeat) {
        return switch (what) {
            case PLAIN -> !repeat.equals("partitioned") && !repeat.equals("keyed");
            case PARTITIONED -> !repeat.equals("keyed");
            case KEYED -> repeat.equals("keyed");
        };
    }

    /**
     * Each query, with the dashboard's semaphore variables set to {@code semaphore}, has an alternative ("a or b")
     * whose every selector selects series of the scrape and whose every grouping label is on some of those series.
     * The job and instance matchers are left out: Prometheus adds those labels when it scrapes. A label that is
     * empty or missing is the same to Prometheus, as here.
     */
    static void assertSelected(List<String> queries, String scrape, String semaphore) {
        List<Map<String, String>> series = new ArrayList<>();
        for (String line : scrape.split("\n")) {
            Matcher m = SERIES.matcher(line);
            if (!line.startsWith("#") && m.matches()) {
                Map<String, String> labels = new HashMap<>();
                labels.put("__name__", m.group(1));
                Matcher l = LABEL.matcher(m.group(3) == null ? "" : m.group(3));
                while (l.find()) {
                    if (!l.group(2).isEmpty()) {
                        labels.put(l.group(1), l.group(2));
                    }
                }
                series.add(labels);
            }
        }
        for (String query : queries) {
            String set = query.replace("$name", semaphore).replace("$partitioned", semaphore)
                    .replace("$keyed", semaphore);
            List<String> failures = new ArrayList<>();
            for (String alternative : set.split(" or ")) {
                String failure = unselected(alternative, series);
                if (failure == null) {
                    failures.clear();
                    break;
                }
                failures.add(failure);
            }
            assertThat(failures).as("for semaphore " + semaphore + ", no alternative of " + query + " is answered")
                    .isEmpty();
        }
    }

    /** Why the alternative selects nothing, or groups by a label its series lack; null if it does neither. */
    private static String unselected(String alternative, List<Map<String, String>> series) {
        Matcher s = SELECTOR.matcher(alternative);
        List<Map<String, String>> selected = new ArrayList<>();
        boolean any = false;
        while (s.find()) {
            any = true;
            List<Map<String, String>> these = new ArrayList<>();
            for (Map<String, String> labels : series) {
                if (labels.get("__name__").equals(s.group(1)) && matches(s.group(3), labels)) {
                    these.add(labels);
                }
            }
            if (these.isEmpty()) {
                return "nothing selected by " + s.group();
            }
            selected.addAll(these);
        }
        if (!any) {
            return "no sema_ metric in " + alternative;
        }
        Matcher g = GROUPING.matcher(alternative);
        while (g.find()) {
            for (String label : g.group(1).split(",")) {
                String l = label.trim();
                if (selected.stream().noneMatch(labels -> labels.containsKey(l))) {
                    return "no series has the label '" + l + "' of " + g.group();
                }
            }
        }
        return null;
    }

    private static boolean matches(String matchers, Map<String, String> labels) {
        if (matchers == null) {
            return true;
        }
        Matcher m = MATCHER.matcher(matchers);
        while (m.find()) {
            String label = m.group(1);
            String want = m.group(3);
            if (label.equals("job") || label.equals("instance")) {
                continue;
            }
            String have = labels.getOrDefault(label, "");
            boolean ok = switch (m.group(2)) {
                case "=" -> have.equals(want);
                case "!=" -> !have.equals(want);
                case "=~" -> have.matches(want);
                default -> !have.matches(want);
            };
            if (!ok) {
                return false;
            }
        }
        return true;
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
