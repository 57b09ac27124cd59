package dev.sema.examples;

import static dev.sema.examples.Text.format;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;

/**
 * Sema in a Spring Boot application: the example application of {@code sema-spring-example}
 * ({@code dev.sema.spring.example.ExampleApplication}), started in a JVM of its own on a random loopback port with
 * that module's class path (Spring Boot is on no class path of the demo's own), under a load of requests sent
 * with {@code java.net.http}, each from its own virtual thread.
 *
 * <p>The application configures everything in its {@code application.yml}: {@code /api/quotes/{symbol}} is behind
 * the {@code sema.web} filter, one permit of {@code inbound} per request, whose {@code AdaptiveLimit.gradient()}
 * follows the capacity of the partner API behind it, refusing at once beyond the limit; {@code /reports/{id}}
 * calls a {@code @WithPermits(value = "reports", timeout = "100ms", fallback = "lastCopy")} method: a call that gets
 * no permit within 100 ms is answered with the copy of the report rendered last ({@code "stale": true}), or 503
 * for a report never rendered; the load asks for {@value #REPORT_IDS} reports again and again. The filter's paths list
 * {@code /actuator/**} too, and its exclude-paths are left at their default, the actuator's base path. Each phase
 * sends as many requests to both endpoints, spread over a short ramp, and meanwhile, one after another,
 * {@code /actuator/health} and its {@code liveness} and {@code readiness} probes. Between the two phases the demo
 * raises the limit of {@code reports} with {@code POST /actuator/semaphores/reports}.
 *
 * <p>Checked: every request was answered 200 or 503, every 503 with {@code Retry-After} and a body naming the
 * semaphore that refused it; every probe was answered 200, some of them while {@code inbound} refused requests
 * (the demo counts the 503s of {@code inbound} it received while each probe was in flight, so the check shows
 * that the probes and the refusals overlapped); under overload {@code /reports} served stale copies, only to calls
 * refused a permit (every call granted one was answered fresh) and never counted as holding a permit (the
 * application counts each rendering where the permit is held); neither endpoint ever ran more requests at once than its
 * semaphore's limit in force (the application counts them where the permit is held, {@code /actuator/inflight});
 * the raised limit took effect; {@code /actuator/prometheus} counted the grants and refusals the demo counted;
 * {@code /actuator/semaphores}, the gauges and the health agree, with every permit back.
 */
final class SpringPart implements Part {
    static final String QUOTES = "/api/quotes/";
    static final String REPORTS = "/reports/";
    /** How many distinct reports the load asks for, each again and again: the fallback serves their last copy. */
    static final int REPORT_IDS = 100;
    /** The probes sent, in turn, while the load runs. */
    private static final String MAIN_CLASS = "dev.sema.spring.example.ExampleApplication";
    static final List<String> PROBES = List.of("/actuator/health", "/actuator/health/liveness",
            "/actuator/health/readiness");

    /**
     * The knobs of a run.
     *
     * @param requests how many requests each phase sends, half to each endpoint
     * @param ramp how long each phase takes to send them (evenly spread)
     * @param raisedLimit the limit of {@code reports} the demo sets between the phases
     * @param warmUp requests sent to each endpoint before the measured phases, and not counted
     * @param startTimeout how long the application may take to start
     */
    record Settings(int requests, Duration ramp, long raisedLimit, int warmUp, Duration startTimeout) {
        static Settings standard() {
            return new Settings(2_000, Duration.ofMillis(1_500), 16, 200, Duration.ofSeconds(120));
        }
    }

    /**
     * How one endpoint answered one phase's requests, as the demo counted them.
     *
     * @param sent requests sent
     * @param ok answered 200
     * @param stale answered 200 with a copy rendered earlier ({@code "stale": true}, from the fallback of
     *     {@code ReportService.render}), counted in {@code ok} too
     * @param refused answered 503
     * @param withRetryAfter answered 503 with a {@code Retry-After} of whole seconds
     * @param refusedBy the 503s by the semaphore their body names ({@code "?"}: a body that names none)
     * @param other anything else (another status, or an exception), by kind
     */
    record Answers(long sent, long ok, long stale, long refused, long withRetryAfter, Map<String, Long> refusedBy,
            Map<String, Long> other) {
        long unexpected() {
            return other.values().stream().mapToLong(Long::longValue).sum();
        }

        /** The 503s whose body names {@code semaphore}. */
        long refusedBy(String semaphore) {
            return refusedBy.getOrDefault(semaphore, 0L);
        }

        @Override
        public String toString() {
            return format("%,d: %,d ok (%,d stale) + %,d refused (%,d with Retry-After; by %s)", sent, ok, stale,
                    refused, withRetryAfter, refusedBy) + (other.isEmpty() ? "" : " + other " + other);
        }
    }

    /**
     * The health probes sent while a phase's load ran, one after another: {@code /actuator/health} and its
     * {@code liveness} and {@code readiness} groups in turn.
     *
     * @param sent probes sent
     * @param ok answered 200
     * @param other anything else (a 503, another status, an exception), by kind
     * @param duringRefusals probes in flight while the demo received at least one 503 of {@code inbound}
     * @param refusalsMeanwhile the 503s of {@code inbound} the demo received while those probes were in flight
     */
    record Probes(long sent, long ok, Map<String, Long> other, long duringRefusals, long refusalsMeanwhile) {
        @Override
        public String toString() {
            return format("%,d probes, %,d answered 200%s, %,d of them in flight while %,d requests were refused"
                    + " by inbound", sent, ok, other.isEmpty() ? "" : " (other " + other + ")", duringRefusals,
                    refusalsMeanwhile);
        }
    }

    /**
     * What the application counted for one endpoint in one phase ({@code /actuator/inflight}).
     *
     * @param peak the most requests it ran at once
     * @param highestLimit the highest limit its semaphore had meanwhile
     * @param requests how many it ran
     */
    record InFlight(long peak, long highestLimit, long requests) {
    }

    /**
     * One phase.
     *
     * @param reportsLimit the limit of {@code reports} the demo had set
     * @param quotes how {@code /api/quotes} answered
     * @param reports how {@code /reports} answered
     * @param quotesInFlight what the application counted for {@code /api/quotes} ({@code inbound})
     * @param reportsInFlight what it counted for {@code /reports} ({@code reports})
     * @param inboundLimit the adaptive limit of {@code inbound} at the end of the phase
     * @param outstanding the most requests the demo awaited answers to at once
     * @param probes how the health probes sent meanwhile were answered
     */
    record Phase(long reportsLimit, Answers quotes, Answers reports, InFlight quotesInFlight, InFlight reportsInFlight,
            long inboundLimit, long outstanding, Probes probes) {
    }

    /**
     * A semaphore's state as the endpoint ({@code /actuator/semaphores}) or the gauges ({@code sema_permits_*},
     * {@code sema_queue_waiters}) show it.
     *
     * @param permits the limit
     * @param available permits free
     * @param queued requests queued
     * @param used permits held ({@code -1} from the endpoint, which does not show it)
     */
    record State(long permits, long available, long queued, long used) {
        @Override
        public String toString() {
            return format("limit %d, available %d, queued %d", permits, available, queued)
                    + (used >= 0 ? format(", used %d", used) : "");
        }
    }

    /**
     * What {@code /actuator/prometheus} counted in {@code sema_acquire_seconds_count} over the measured phases
     * (after minus before).
     *
     * @param granted requests granted
     * @param refused requests refused: {@code unavailable} for {@code inbound} (refused at once), {@code timeout}
     *     for {@code reports} (no permit within 100 ms)
     * @param otherwise requests that ended any other way ({@code cancelled}, {@code interrupted}, {@code closed},
     *     and the refusal kind the semaphore does not use)
     */
    record Scraped(long granted, long refused, long otherwise) {
    }

    /**
     * What a run measured.
     *
     * @param phases the two phases
     * @param oldLimit the limit of {@code reports} before the POST
     * @param raisedLimit the limit the POST set
     * @param postStatus the POST's status
     * @param postPermits the limit the POST's answer showed
     * @param scraped {@code inbound} and {@code reports} as counted by {@code /actuator/prometheus}
     * @param endpoint their state at the end, by {@code /actuator/semaphores}
     * @param gauges their state at the end, by the gauges of {@code /actuator/prometheus}
     * @param health the status of {@code /actuator/health}, and of its {@code semaphores} component
     */
    record Measured(List<Phase> phases, long oldLimit, long raisedLimit, int postStatus, long postPermits,
            Map<String, Scraped> scraped, Map<String, State> endpoint, Map<String, State> gauges, String health) {

        List<Check> checks() {
            List<Check> checks = new ArrayList<>();
            checks.add(new Check("every request was answered 200 or 503, every 503 with a Retry-After and a body naming"
                    + " the semaphore that refused it",
                    phases.stream().allMatch(p -> answeredWell(p.quotes()) && answeredWell(p.reports())
                            && p.quotes().refusedBy("inbound") == p.quotes().refused() && p.quotes().stale() == 0
                            && p.reports().refusedBy("reports") == p.reports().refused()),
                    phases.stream().map(p -> "quotes " + p.quotes() + "; reports " + p.reports())
                            .collect(Collectors.joining(" | "))));
            long probes = phases.stream().mapToLong(p -> p.probes().sent()).sum();
            long probesOk = phases.stream().mapToLong(p -> p.probes().ok()).sum();
            long probesDuring = phases.stream().mapToLong(p -> p.probes().duringRefusals()).sum();
            checks.add(new Check("/actuator/health and its liveness and readiness probes answered 200 while sema.web"
                    + " refused requests (its paths list /actuator/**; the default exclude-paths wins)",
                    probes > 0 && probesOk == probes && probesDuring > 0,
                    phases.stream().map(p -> p.probes().toString()).collect(Collectors.joining("; "))));
            checks.add(new Check("/api/quotes never ran more requests at once than the limit of inbound in force"
                    + " (sema.web, adaptive)",
                    phases.stream().allMatch(p -> p.quotesInFlight().peak() > 0
                            && p.quotesInFlight().peak() <= p.quotesInFlight().highestLimit()),
                    phases.stream().map(p -> format("at most %d at once, highest limit %d", p.quotesInFlight().peak(),
                            p.quotesInFlight().highestLimit())).collect(Collectors.joining("; "))));
            checks.add(new Check("/reports never ran more at once than the limit of reports in force (@WithPermits)",
                    phases.stream().allMatch(p -> p.reportsInFlight().peak() > 0
                            && p.reportsInFlight().peak() <= p.reportsLimit()
                            && p.reportsInFlight().highestLimit() == p.reportsLimit()),
                    phases.stream().map(p -> format("at most %d at once, limit %d (the application saw %d)",
                            p.reportsInFlight().peak(), p.reportsLimit(), p.reportsInFlight().highestLimit()))
                            .collect(Collectors.joining("; "))));
            State reportsNow = endpoint.get("reports");
            State reportsGauged = gauges.get("reports");
            Phase after = phases.get(phases.size() - 1);
            checks.add(new Check(format("POST /actuator/semaphores/reports {\"permits\": %d} took effect", raisedLimit),
                    postStatus == 200 && postPermits == raisedLimit && reportsNow != null
                            && reportsNow.permits() == raisedLimit && reportsGauged != null
                            && reportsGauged.permits() == raisedLimit && after.reportsInFlight().peak() > oldLimit,
                    format("answered %d with limit %d; /actuator/semaphores says %d, sema_permits_limit %d; then %d ran"
                            + " at once (more than the old limit %d)", postStatus, postPermits,
                            reportsNow == null ? -1 : reportsNow.permits(),
                            reportsGauged == null ? -1 : reportsGauged.permits(), after.reportsInFlight().peak(),
                            oldLimit)));
            long quotesOk = phases.stream().mapToLong(p -> p.quotes().ok()).sum();
            long quotesRefused = phases.stream().mapToLong(p -> p.quotes().refused()).sum();
            // A stale report is a 200 of the fallback: its call was refused a permit.
            long reportsStale = phases.stream().mapToLong(p -> p.reports().stale()).sum();
            long reportsOk = phases.stream().mapToLong(p -> p.reports().ok()).sum() - reportsStale;
            long reportsRefused = phases.stream().mapToLong(p -> p.reports().refused()).sum() + reportsStale;
            long quotesRan = phases.stream().mapToLong(p -> p.quotesInFlight().requests()).sum();
            long reportsRan = phases.stream().mapToLong(p -> p.reportsInFlight().requests()).sum();
            Scraped inbound = scraped.get("inbound");
            Scraped reports = scraped.get("reports");
            checks.add(new Check("/actuator/prometheus counted the grants and refusals the demo counted",
                    inbound != null && reports != null
                            && inbound.granted() == quotesOk && inbound.refused() == quotesRefused
                            && inbound.otherwise() == 0 && quotesRan == quotesOk
                            && reports.granted() == reportsOk && reports.refused() == reportsRefused
                            && reports.otherwise() == 0 && reportsRan == reportsOk,
                    format("inbound granted %s, unavailable %s, other %s (the demo: %,d ok, %,d refused; the"
                            + " application ran %,d); reports granted %s, timeout %s, other %s (the demo: %,d fresh,"
                            + " %,d refused or stale; the application rendered %,d)",
                            inbound == null ? "?" : format("%,d", inbound.granted()),
                            inbound == null ? "?" : format("%,d", inbound.refused()),
                            inbound == null ? "?" : format("%,d", inbound.otherwise()), quotesOk, quotesRefused,
                            quotesRan,
                            reports == null ? "?" : format("%,d", reports.granted()),
                            reports == null ? "?" : format("%,d", reports.refused()),
                            reports == null ? "?" : format("%,d", reports.otherwise()), reportsOk, reportsRefused,
                            reportsRan)));
            checks.add(new Check("under overload /reports served the copy rendered last (stale, from the fallback of"
                    + " @WithPermits) to calls refused a permit, never to one granted, never holding a permit",
                    reports != null && reportsStale > 0 && reports.granted() == reportsOk && reportsRan == reportsOk
                            && reports.refused() >= reportsStale,
                    format("%,d stale and %,d refused with 503 of %,d refused a permit (reports timeout %s); %,d"
                            + " fresh answers, %s granted a permit, %,d rendered while holding one",
                            reportsStale, reportsRefused - reportsStale, reportsRefused,
                            reports == null ? "?" : format("%,d", reports.refused()), reportsOk,
                            reports == null ? "?" : format("%,d", reports.granted()), reportsRan)));
            boolean agree = !endpoint.isEmpty();
            List<String> states = new ArrayList<>();
            for (String name : List.of("inbound", "reports")) {
                State e = endpoint.get(name);
                State g = gauges.get(name);
                agree &= e != null && g != null && e.permits() == g.permits() && e.available() == e.permits()
                        && g.available() == g.permits() && e.queued() == 0 && g.queued() == 0 && g.used() == 0;
                states.add(name + ": endpoint " + e + " / gauges " + g);
            }
            checks.add(new Check("/actuator/semaphores and the gauges agree, every permit is back, health is UP",
                    agree && health.equals("UP, semaphores UP"), String.join("; ", states) + "; health " + health));
            return checks;
        }

        private static boolean answeredWell(Answers a) {
            return a.sent() > 0 && a.unexpected() == 0 && a.ok() + a.refused() == a.sent()
                    && a.withRetryAfter() == a.refused() && a.refusedBy("?") == 0
                    && a.refusedBy().values().stream().mapToLong(Long::longValue).sum() == a.refused();
        }
    }

    private final Settings settings;
    private final Terminal terminal;
    private long start;
    // What the status line shows, set as the run goes on.
    private volatile Load load;
    private volatile SpringApp app;

    SpringPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "spring";
    }

    @Override
    public String title() {
        return "Spring Boot: sema.web and @WithPermits in a web application, its endpoint and its meters";
    }

    @Override
    public List<Check> run() throws Exception {
        start = System.nanoTime();
        Path module = SpringApp.module("sema-spring-example");
        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("demo-spring-status").daemon().factory());
        try (SpringApp started = SpringApp.start(module, MAIN_CLASS, List.of(), settings.startTimeout())) {
            app = started;
            event(format("the example application (pid %d) answers on http://127.0.0.1:%d, started in %.1f s with"
                    + " sema-spring-example's class path", started.pid(), started.port(), started.startSeconds()));
            ticker.scheduleWithFixedDelay(this::status, 0, terminal.isInteractive() ? 200 : 1_000,
                    TimeUnit.MILLISECONDS);
            try {
                return measure(started).checks();
            } catch (RuntimeException | IOException e) {
                throw new IllegalStateException(e + started.problems(), e);
            }
        } finally {
            ticker.shutdownNow();
            ticker.awaitTermination(10, TimeUnit.SECONDS);
            terminal.endStatus();
            app = null;
        }
    }

    /** Warms up, runs the two phases around the POST, and reads what the application says at the end. */
    Measured measure(SpringApp app) throws IOException, InterruptedException {
        Map<String, State> initial = semaphores(app);
        long oldLimit = initial.get("reports").permits();
        terminal.println(format("  inbound  (sema.web, /api/** and /actuator/**, the actuator excluded by default):"
                + " limit %d, adaptive (gradient); beyond it 503 at once", initial.get("inbound").permits()));
        terminal.println(format("  reports  (@WithPermits on ReportService.render): limit %d; after 100 ms without a"
                + " permit, the copy rendered last (stale) from its fallback, or 503 for a report never rendered",
                oldLimit));
        terminal.println(format("  each phase: %,d requests, half to %s{symbol}, half to %s{id}, over %d ms, each"
                + " from its own virtual thread; meanwhile, one after another, the probes %s", settings.requests(),
                QUOTES, REPORTS, settings.ramp().toMillis(), String.join(", ", PROBES)));

        warmUp(app);
        app.delete("/actuator/inflight");
        Prometheus before = app.scrape();

        List<Phase> phases = new ArrayList<>();
        phases.add(phase(app, 1, oldLimit));

        HttpResponse<String> post = app.post("/actuator/semaphores/reports",
                format("{\"permits\": %d}", settings.raisedLimit()));
        long postPermits = post.statusCode() == 200 ? Json.number(Json.object(Json.parse(post.body())), "permits") : -1;
        event(format("POST /actuator/semaphores/reports {\"permits\": %d} -> %d %s", settings.raisedLimit(),
                post.statusCode(), post.body()));

        app.delete("/actuator/inflight");
        phases.add(phase(app, 2, settings.raisedLimit()));

        Map<String, State> endpoint = awaitAllBack(app);
        Prometheus after = app.scrape();
        Map<String, Scraped> scraped = new LinkedHashMap<>();
        scraped.put("inbound", scraped(before, after, "inbound", "unavailable"));
        scraped.put("reports", scraped(before, after, "reports", "timeout"));
        Map<String, State> gauges = new LinkedHashMap<>();
        for (String name : List.of("inbound", "reports")) {
            gauges.put(name, new State((long) after.value("sema_permits_limit", "name", name),
                    (long) after.value("sema_permits_available", "name", name),
                    (long) after.value("sema_queue_waiters", "name", name),
                    (long) after.value("sema_permits_used", "name", name)));
        }
        String health = health(app);
        summary(phases, oldLimit);
        return new Measured(phases, oldLimit, settings.raisedLimit(), post.statusCode(), postPermits, scraped,
                endpoint, gauges, health);
    }

    private void warmUp(SpringApp app) throws InterruptedException {
        event(format("warm-up: %d requests to each endpoint, not counted", settings.warmUp()));
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < settings.warmUp(); i++) {
                int id = i;
                threads.submit(() -> {
                    app.send(QUOTES + "W" + id % 10);
                    app.send(REPORTS + "w" + id);
                    return null;
                });
                if (i % 8 == 7) {
                    Thread.sleep(5); // a gentle warm-up: the adaptive limit should not learn from it
                }
            }
        }
    }

    private Phase phase(SpringApp app, int number, long reportsLimit) throws IOException, InterruptedException {
        event(format("phase %d: %,d requests; limit of reports %d", number, settings.requests(), reportsLimit));
        Load l = new Load(number, settings.requests());
        load = l;
        l.run(app, settings.ramp());
        load = null;
        Map<String, Object> inFlight = Json.object(Json.parse(app.get("/actuator/inflight").body()));
        long inboundLimit = semaphores(app).get("inbound").permits();
        Phase phase = new Phase(reportsLimit, l.quotes.answers(), l.reports.answers(), inFlight(inFlight, "quotes"),
                inFlight(inFlight, "reports"), inboundLimit, l.outstandingPeak.get(), l.probes.probes());
        event(format("phase %d done in %.1f s: /api/quotes %,d ok, %,d refused, at most %d at once (inbound's"
                + " limit now %d); /reports %,d ok (%,d stale), %,d refused, at most %d at once; %s", number,
                l.seconds(), phase.quotes().ok(), phase.quotes().refused(), phase.quotesInFlight().peak(),
                inboundLimit, phase.reports().ok(), phase.reports().stale(), phase.reports().refused(),
                phase.reportsInFlight().peak(), phase.probes()));
        return phase;
    }

    private static InFlight inFlight(Map<String, Object> all, String endpoint) {
        Map<String, Object> o = Json.object(all, endpoint);
        return new InFlight(Json.number(o, "peak"), Json.number(o, "highestLimit"), Json.number(o, "requests"));
    }

    private static Scraped scraped(Prometheus before, Prometheus after, String name, String refusal) {
        long granted = delta(before, after, name, "granted");
        long refused = delta(before, after, name, refusal);
        long otherwise = 0;
        for (String outcome : List.of("unavailable", "timeout", "cancelled", "interrupted", "closed")) {
            if (!outcome.equals(refusal)) {
                otherwise += delta(before, after, name, outcome);
            }
        }
        return new Scraped(granted, refused, otherwise);
    }

    private static long delta(Prometheus before, Prometheus after, String name, String outcome) {
        double b = before.value("sema_acquire_seconds_count", "name", name, "outcome", outcome);
        double a = after.value("sema_acquire_seconds_count", "name", name, "outcome", outcome);
        if (Double.isNaN(a) || Double.isNaN(b)) {
            throw new IllegalStateException("no sema_acquire_seconds_count{name=\"" + name + "\",outcome=\"" + outcome
                    + "\"} in the scrape");
        }
        return (long) (a - b);
    }

    /**
     * The semaphores' state once every permit is back: the last response of a request can reach the client a
     * moment before the filter that answered it releases its permit, so this waits (at most 10 s) for that.
     */
    static Map<String, State> awaitAllBack(SpringApp app) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (;;) {
            Map<String, State> states = semaphores(app);
            boolean back = states.values().stream().allMatch(s -> s.available() == s.permits() && s.queued() == 0);
            if (back || System.nanoTime() - deadline >= 0) {
                return states;
            }
            Thread.sleep(20);
        }
    }

    static Map<String, State> semaphores(SpringApp app) {
        Map<String, Object> all = Json.object(Json.parse(app.get("/actuator/semaphores").body()), "semaphores");
        Map<String, State> states = new LinkedHashMap<>();
        for (String name : all.keySet()) {
            Map<String, Object> s = Json.object(all, name);
            states.put(name, new State(Json.number(s, "permits"), Json.number(s, "available"),
                    Json.number(s, "queued"), -1));
        }
        return states;
    }

    private static String health(SpringApp app) {
        HttpResponse<String> r = app.get("/actuator/health");
        Map<String, Object> health = Json.object(Json.parse(r.body()));
        Object components = health.get("components");
        String semaphores = components instanceof Map<?, ?> c && c.get("semaphores") instanceof Map<?, ?> s
                ? String.valueOf(s.get("status")) : "missing";
        return health.get("status") + ", semaphores " + semaphores;
    }

    private void summary(List<Phase> phases, long oldLimit) {
        terminal.println("");
        terminal.println("                          sent      200  (stale)      503   most at once   limit in force");
        for (int i = 0; i < phases.size(); i++) {
            Phase p = phases.get(i);
            terminal.println(format("  phase %d  /api/quotes  %,6d   %,6d   %8s   %,6d   %12d   %s", i + 1,
                    p.quotes().sent(), p.quotes().ok(), "", p.quotes().refused(), p.quotesInFlight().peak(),
                    format("at most %d (inbound, adaptive; %d at the end)", p.quotesInFlight().highestLimit(),
                            p.inboundLimit())));
            terminal.println(format("           /reports     %,6d   %,6d   %8s   %,6d   %12d   %s", p.reports().sent(),
                    p.reports().ok(), format("(%,d)", p.reports().stale()), p.reports().refused(),
                    p.reportsInFlight().peak(),
                    format("%d (reports%s)", p.reportsLimit(), i == 0 ? "" : ", raised from " + oldLimit)));
            terminal.println(format("           probes       %,6d   %,6d   %8s   %,6d   %12s   %s", p.probes().sent(),
                    p.probes().ok(), "", p.probes().sent() - p.probes().ok(), "",
                    format("%,d in flight while inbound refused %,d requests", p.probes().duringRefusals(),
                            p.probes().refusalsMeanwhile())));
        }
        terminal.println("  (stale): answered 200 by the fallback of ReportService.render with the copy rendered last");
    }

    private void status() {
        try {
            Load l = load;
            SpringApp a = app;
            if (l == null || a == null) {
                return;
            }
            long inbound = semaphores(a).get("inbound").permits();
            terminal.status(format("%6.1fs  phase %d  sent %,5d of %,d, %,4d awaiting answers | /api/quotes %,5d ok"
                    + " %,5d refused | /reports %,5d ok (%,d stale) %,5d refused | inbound limit %d | probes %,d, %,d"
                    + " ok", (System.nanoTime() - start) / 1e9, l.number, l.sent.get(), l.requests,
                    l.outstanding.get(), l.quotes.ok.sum(), l.quotes.refused.sum(), l.reports.ok.sum(),
                    l.reports.stale.sum(), l.reports.refused.sum(), inbound,
                    l.probes.sent.sum(), l.probes.ok.sum()));
        } catch (RuntimeException e) {
            // a status line missed is no failure; the checks read the same numbers at the end
        }
    }

    private void event(String what) {
        terminal.event(start, what);
    }

    /**
     * One phase's requests: half to each endpoint, each from its own virtual thread, spread over the ramp; and the
     * health probes, one after another, until every answer is in.
     */
    private static final class Load {
        final int number;
        final int requests;
        final Tally quotes = new Tally();
        final Tally reports = new Tally();
        final ProbeTally probes = new ProbeTally();
        final AtomicInteger sent = new AtomicInteger();
        final AtomicInteger outstanding = new AtomicInteger();
        final AtomicInteger outstandingPeak = new AtomicInteger();
        private long startNanos;
        private long endNanos;

        Load(int number, int requests) {
            this.number = number;
            this.requests = requests;
        }

        void run(SpringApp app, Duration ramp) throws InterruptedException {
            startNanos = System.nanoTime();
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                threads.submit(() -> {
                    probe(app);
                    return null;
                });
                for (int i = 0; i < requests; i++) {
                    long due = startNanos + ramp.toNanos() * i / requests;
                    long early = due - System.nanoTime();
                    if (early > 1_000_000) {
                        Thread.sleep(Duration.ofNanos(early));
                    }
                    boolean quote = i % 2 == 0;
                    String path = quote ? QUOTES + "SYM" + (i / 2) % 50 : REPORTS + (i / 2) % REPORT_IDS;
                    Tally tally = quote ? quotes : reports;
                    outstandingPeak.accumulateAndGet(outstanding.incrementAndGet(), Math::max);
                    sent.incrementAndGet();
                    threads.submit(() -> {
                        try {
                            tally.count(app.send(path));
                        } catch (IOException | RuntimeException e) {
                            tally.failed(e);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            tally.failed(e);
                        } finally {
                            outstanding.decrementAndGet();
                        }
                    });
                }
            }
            endNanos = System.nanoTime();
        }

        double seconds() {
            return (endNanos - startNanos) / 1e9;
        }

        /** Sends the probes in turn, each after the last is answered, until every request has its answer. */
        private void probe(SpringApp app) throws InterruptedException {
            for (int i = 0; sent.get() < requests || outstanding.get() > 0; i++) {
                long refusedBefore = inboundRefusals();
                String path = PROBES.get(i % PROBES.size());
                try {
                    HttpResponse<String> r = app.probe(path);
                    probes.count(r.statusCode() == 200 ? null : "HTTP " + r.statusCode(),
                            inboundRefusals() - refusedBefore);
                } catch (IOException | RuntimeException e) {
                    probes.count(e.getClass().getSimpleName(), inboundRefusals() - refusedBefore);
                }
                Thread.sleep(5);
            }
        }

        /** The 503s of {@code inbound} received so far, from either endpoint. */
        private long inboundRefusals() {
            return quotes.refusedBy("inbound") + reports.refusedBy("inbound");
        }
    }

    /** The probes' answers, counted as they come. */
    private static final class ProbeTally {
        final LongAdder sent = new LongAdder();
        final LongAdder ok = new LongAdder();
        final LongAdder duringRefusals = new LongAdder();
        final LongAdder refusalsMeanwhile = new LongAdder();
        final Map<String, LongAdder> other = new ConcurrentHashMap<>();

        /**
         * Counts one probe.
         *
         * @param failure {@code null} for a 200, else what came instead
         * @param refusals the 503s of {@code inbound} the demo received while the probe was in flight
         */
        void count(String failure, long refusals) {
            sent.increment();
            if (failure == null) {
                ok.increment();
            } else {
                other.computeIfAbsent(failure, k -> new LongAdder()).increment();
            }
            if (refusals > 0) {
                duringRefusals.increment();
                refusalsMeanwhile.add(refusals);
            }
        }

        Probes probes() {
            Map<String, Long> others = new TreeMap<>();
            other.forEach((k, v) -> others.put(k, v.sum()));
            return new Probes(sent.sum(), ok.sum(), others, duringRefusals.sum(), refusalsMeanwhile.sum());
        }
    }

    /** One endpoint's answers, counted as they come. */
    static final class Tally {
        final LongAdder sent = new LongAdder();
        final LongAdder ok = new LongAdder();
        final LongAdder refused = new LongAdder();
        final LongAdder stale = new LongAdder();
        final LongAdder withRetryAfter = new LongAdder();
        final Map<String, LongAdder> refusedBy = new ConcurrentHashMap<>();
        final Map<String, LongAdder> other = new ConcurrentHashMap<>();

        void count(HttpResponse<String> response) {
            sent.increment();
            switch (response.statusCode()) {
                case 200 -> {
                    if (isStale(response.body())) {
                        stale.increment();
                    }
                    ok.increment();
                }
                case 503 -> {
                    if (response.headers().firstValue("Retry-After").filter(v -> v.matches("\\d+")).isPresent()) {
                        withRetryAfter.increment();
                    }
                    refusedBy.computeIfAbsent(refuser(response.body()), k -> new LongAdder()).increment();
                    refused.increment(); // last: inboundRefusals() never counts a refusal not yet in refusedBy
                }
                default -> other.computeIfAbsent("HTTP " + response.statusCode(), k -> new LongAdder()).increment();
            }
        }

        void failed(Exception e) {
            sent.increment();
            other.computeIfAbsent(e.getClass().getSimpleName(), k -> new LongAdder()).increment();
        }

        long refusedBy(String semaphore) {
            LongAdder count = refusedBy.get(semaphore);
            return count == null ? 0 : count.sum();
        }

        /** Whether a 200's body is a JSON object whose {@code stale} is {@code true}. */
        private static boolean isStale(String body) {
            try {
                return Boolean.TRUE.equals(Json.object(Json.parse(body)).get("stale"));
            } catch (IllegalArgumentException notAnObject) {
                return false;
            }
        }

        /** The semaphore a 503's JSON body names, or {@code "?"}. */
        private static String refuser(String body) {
            try {
                return Json.string(Json.object(Json.parse(body)), "semaphore");
            } catch (IllegalArgumentException notJson) {
                return "?";
            }
        }

        Answers answers() {
            Map<String, Long> others = new TreeMap<>();
            other.forEach((k, v) -> others.put(k, v.sum()));
            Map<String, Long> refusers = new TreeMap<>();
            refusedBy.forEach((k, v) -> refusers.put(k, v.sum()));
            return new Answers(sent.sum(), ok.sum(), stale.sum(), refused.sum(), withRetryAfter.sum(), refusers,
                    others);
        }
    }
}
