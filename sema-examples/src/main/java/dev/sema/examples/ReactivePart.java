package dev.sema.examples;

import static dev.sema.examples.Text.format;

import dev.sema.reactive.example.Quotes;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sema on the non-blocking stacks: the reactive example application of {@code sema-reactive-example}
 * ({@code dev.sema.reactive.example.ReactiveExampleApplication}, Spring WebFlux on Netty, with a gRPC server on Netty),
 * started in a JVM of its own with BlockHound installed ({@code -DBLOCKHOUND=report}: a blocking call on any event
 * loop or Reactor scheduler is counted, not thrown), under a load sent at once to its three limited endpoints:
 * <ul>
 *   <li>{@code /api/quotes/{symbol}}, behind {@code sema.web}, here a {@code WebFilter}: one permit of {@code inbound}
 *       per request, waiting at most 20 ms without a thread, then 503 with {@code Retry-After};
 *   <li>{@code /reports/{id}}, a {@code @WithPermits(value = "reports", timeout = "100ms", fallback = "lastCopy")}
 *       method returning a {@code Mono}: the permit held from subscription to termination, a refused call answered
 *       with the copy rendered last;
 *   <li>the gRPC method {@code example.Quotes/Get}, run on Netty's event loop behind {@code SemaServerInterceptor} on
 *       {@code grpc}: a call finding no permit is closed {@code UNAVAILABLE} with {@code grpc-retry-pushback-ms}.
 * </ul>
 * Before the load, the demo calls two endpoints that sleep a millisecond on the event loop on purpose, one over
 * HTTP and one over gRPC, to show that BlockHound watches both event loops and reports what it sees.
 *
 * <p>Checked: BlockHound caught both deliberate sleeps, and nothing else during the load (no thread of an event
 * loop blocked while thousands of requests waited for permits); every HTTP request was answered 200 or 503, every
 * 503 with {@code Retry-After} and a body naming its semaphore; every gRPC call ended OK or {@code UNAVAILABLE},
 * every {@code UNAVAILABLE} naming {@code grpc} and carrying the pushback; each endpoint refused some and served
 * some; no endpoint ever ran more requests at once than its semaphore's limit (the application counts them where
 * the permit is held, {@code /actuator/example}); at the end every permit is back.
 */
final class ReactivePart implements Part {
    static final String QUOTES = "/api/quotes/";
    static final String REPORTS = "/reports/";
    private static final String MAIN_CLASS = "dev.sema.reactive.example.ReactiveExampleApplication";
    private static final String PUSHBACK = "grpc-retry-pushback-ms";
    /**
     * The knobs of a run.
     *
     * @param requests how many requests go to each of the three endpoints
     * @param ramp how long the load takes to send them (evenly spread)
     * @param startTimeout how long the application may take to start
     */
    record Settings(int requests, Duration ramp, Duration startTimeout) {
        static Settings standard() {
            return new Settings(3_000, Duration.ofMillis(1_500), Duration.ofSeconds(120));
        }
    }

    /**
     * How the gRPC calls ended, as the demo counted them.
     *
     * @param sent calls made
     * @param ok ended OK with an answer
     * @param unavailable ended {@code UNAVAILABLE}
     * @param withPushback of those, with a {@code grpc-retry-pushback-ms} trailer
     * @param namingGrpc of those, with a description naming the semaphore {@code grpc}
     * @param other anything else, by status code
     */
    record Calls(long sent, long ok, long unavailable, long withPushback, long namingGrpc, Map<String, Long> other) {
        long unexpected() {
            return other.values().stream().mapToLong(Long::longValue).sum();
        }

        @Override
        public String toString() {
            return format("%,d: %,d OK + %,d UNAVAILABLE (%,d with %s, %,d naming grpc)", sent, ok, unavailable,
                    withPushback, PUSHBACK, namingGrpc) + (other.isEmpty() ? "" : " + other " + other);
        }
    }

    /**
     * What the application counted for one endpoint ({@code /actuator/example}).
     *
     * @param peak the most requests it ran at once
     * @param requests how many it ran
     */
    record InFlight(long peak, long requests) {
        static InFlight of(Map<String, Object> example, String endpoint) {
            Map<String, Object> counts = Json.object(example, endpoint);
            return new InFlight(Json.number(counts, "peak"), Json.number(counts, "requests"));
        }
    }

    /**
     * What the application's BlockHound reported ({@code /actuator/example}).
     *
     * @param installed whether BlockHound was installed
     * @param count the blocking calls it saw on non-blocking threads since the start
     * @param first the first few, with their threads
     */
    record Blocking(boolean installed, long count, List<String> first) {
        static Blocking of(Map<String, Object> example) {
            List<String> first = new ArrayList<>();
            if (example.get("firstBlockingCalls") instanceof List<?> calls) {
                calls.forEach(call -> first.add(String.valueOf(call)));
            }
            return new Blocking(Boolean.TRUE.equals(example.get("blockhound")), Json.number(example, "blockingCalls"),
                    first);
        }
    }

    /** The limits in force: {@code inbound}, {@code reports} and {@code grpc}. */    record Limits(long inbound, long reports, long grpc) {
    }

    /** The most requests each endpoint ran at once, as the application counted them. */
    record Peaks(long quotes, long reports, long grpc) {
    }

    /**
     * Everything a run measured, and the checks of it.
     *
     * @param requests the requests sent to each endpoint
     * @param probed what BlockHound had reported after the two sleeps on purpose
     * @param blocking what it had reported after the load
     * @param end the semaphores at the end
     */
    record Measured(int requests, Limits limits, Blocking probed, Blocking blocking, SpringPart.Answers quotes,
            SpringPart.Answers reports, Calls grpc, Peaks peaks, Map<String, SpringPart.State> end) {

        List<Check> checks() {
            List<Check> checks = new ArrayList<>();
            checks.add(new Check("BlockHound watched both event loops: the two sleeps on purpose were reported",
                    probed.installed() && probed.count() == 2,
                    format("installed %s, %d reported: %s", probed.installed(), probed.count(), probed.first())));
            long duringLoad = blocking.count() - probed.count();
            checks.add(new Check("no event-loop or Reactor thread blocked while requests waited for permits",
                    blocking.installed() && duringLoad == 0,
                    format("%d blocking calls reported during the load (%,d requests, %,d refused)", duringLoad,
                            quotes.sent() + reports.sent() + grpc.sent(),
                            quotes.refused() + reports.refused() + grpc.unavailable())
                            + (duringLoad == 0 ? "" : ": " + blocking.first())));
            checks.add(new Check("/api/quotes: every request answered 200 or 503, every 503 with Retry-After and a body"
                    + " naming inbound", quotes.sent() == requests && quotes.unexpected() == 0
                            && quotes.withRetryAfter() == quotes.refused()
                            && quotes.refusedBy("inbound") == quotes.refused(), quotes.toString()));
            checks.add(new Check("/api/quotes: the WebFilter refused some requests and served some",
                    quotes.refused() > 0 && quotes.ok() > 0,
                    format("%,d served, %,d refused", quotes.ok(), quotes.refused())));
            checks.add(new Check("/reports: every call answered 200 (fresh, or stale from the fallback) or 503 with"
                    + " Retry-After", reports.sent() == requests && reports.unexpected() == 0
                            && reports.withRetryAfter() == reports.refused(), reports.toString()));
            checks.add(new Check("/reports: calls of the @WithPermits Mono method refused a permit were served by its"
                    + " fallback", reports.stale() > 0 && reports.ok() > reports.stale(),
                    format("%,d fresh, %,d stale, %,d refused", reports.ok() - reports.stale(), reports.stale(),
                            reports.refused())));
            checks.add(new Check("gRPC: every call ended OK or UNAVAILABLE naming grpc, with " + PUSHBACK,
                    grpc.sent() == requests && grpc.unexpected() == 0 && grpc.withPushback() == grpc.unavailable()
                            && grpc.namingGrpc() == grpc.unavailable(), grpc.toString()));
            checks.add(new Check("gRPC: the interceptor refused some calls and served some",
                    grpc.unavailable() > 0 && grpc.ok() > 0,
                    format("%,d OK, %,d UNAVAILABLE", grpc.ok(), grpc.unavailable())));
            checks.add(new Check("no endpoint ran more requests at once than its semaphore's limit",
                    peaks.quotes() <= limits.inbound() && peaks.reports() <= limits.reports()
                            && peaks.grpc() <= limits.grpc()
                            && peaks.quotes() > 0 && peaks.reports() > 0 && peaks.grpc() > 0,
                    format("at most %d of %d (quotes), %d of %d (reports), %d of %d (gRPC)", peaks.quotes(),
                            limits.inbound(), peaks.reports(), limits.reports(), peaks.grpc(), limits.grpc())));
            boolean allBack = !end.isEmpty()
                    && end.values().stream().allMatch(s -> s.available() == s.permits() && s.queued() == 0);
            checks.add(new Check("every permit back at the end, nothing queued", allBack, end.toString()));
            return checks;
        }
    }

    private final Settings settings;
    private final Terminal terminal;
    private long start;

    ReactivePart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "reactive";
    }

    @Override
    public String title() {
        return "Non-blocking: WebFlux and gRPC on Netty, requests waiting for permits without a thread";
    }

    @Override
    public List<Check> run() throws Exception {
        start = System.nanoTime();
        Path module = SpringApp.module("sema-reactive-example");
        List<String> jvm = List.of("-DBLOCKHOUND=report", "-XX:+AllowRedefinitionToAddDeleteMethods",
                "-XX:+EnableDynamicAgentLoading");
        try (SpringApp app = SpringApp.start(module, MAIN_CLASS, jvm, settings.startTimeout())) {
            Map<String, Object> example = example(app);
            int grpcPort = (int) Json.number(example, "grpcPort");
            event(format("the reactive example application (pid %d) answers HTTP on http://127.0.0.1:%d and gRPC on"
                    + " 127.0.0.1:%d, started in %.1f s with BlockHound installed", app.pid(), app.port(), grpcPort,
                    app.startSeconds()));
            ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", grpcPort).usePlaintext().build();
            try {
                return measure(app, channel);
            } catch (RuntimeException | IOException e) {
                throw new IllegalStateException(e + app.problems(), e);
            } finally {
                channel.shutdownNow();
                channel.awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }

    private List<Check> measure(SpringApp app, ManagedChannel channel) throws IOException, InterruptedException {
        Map<String, SpringPart.State> initial = SpringPart.semaphores(app);
        long inboundLimit = initial.get("inbound").permits();
        long reportsLimit = initial.get("reports").permits();
        long grpcLimit = initial.get("grpc").permits();
        terminal.println(format("  inbound  (sema.web, a WebFilter on /api/**): limit %d; a request waits at most 20 ms"
                + " without a thread, then 503", inboundLimit));
        terminal.println(format("  reports  (@WithPermits on ReportService.render, a Mono): limit %d; after 100 ms"
                + " without a permit, the copy rendered last, from its fallback", reportsLimit));
        terminal.println(format("  grpc     (SemaServerInterceptor, calls on Netty's event loop): limit %d; beyond it"
                + " UNAVAILABLE at once", grpcLimit));

        // BlockHound is watching: a sleep on each event loop, on purpose, is reported.
        HttpResponse<String> httpProbe = app.get("/probe/block");
        String grpcProbe = ClientCalls.blockingUnaryCall(channel, Quotes.BLOCK, CallOptions.DEFAULT
                .withDeadlineAfter(10, TimeUnit.SECONDS), "probe");
        Blocking probed = Blocking.of(example(app));
        event(format("a 1 ms sleep on purpose on the HTTP event loop (%s) and on the gRPC event loop (%s): BlockHound"
                + " reported %d blocking call%s", httpProbe.body(), grpcProbe, probed.count(),
                probed.count() == 1 ? "" : "s"));
        example(app); // sets the peaks back to what runs now: none

        event(format("load: %,d requests to each of %s{symbol}, %s{id} and gRPC example.Quotes/Get, over %d ms,"
                + " each from a virtual thread", settings.requests(), QUOTES, REPORTS, settings.ramp().toMillis()));
        Load load = new Load(settings.requests());
        load.run(app, channel, settings.ramp());
        SpringPart.Answers quotes = load.quotes.answers();
        SpringPart.Answers reports = load.reports.answers();
        Calls grpc = load.calls();
        Map<String, Object> after = example(app);
        InFlight quotesPeak = InFlight.of(after, "quotes");
        InFlight reportsPeak = InFlight.of(after, "reports");
        InFlight grpcPeak = InFlight.of(after, "grpc");
        Blocking blocking = Blocking.of(after);
        Map<String, SpringPart.State> end = SpringPart.awaitAllBack(app);
        event(format("the load took %.1f s", load.seconds()));

        terminal.println("");
        terminal.println("                     sent    served   (stale)   refused   most at once   limit");
        terminal.println(format("  /api/quotes     %,6d    %,6d   %7s    %,6d   %12d   %5d", quotes.sent(), quotes.ok(),
                "", quotes.refused(), quotesPeak.peak(), inboundLimit));
        terminal.println(format("  /reports        %,6d    %,6d   %7s    %,6d   %12d   %5d", reports.sent(),
                reports.ok(), format("(%,d)", reports.stale()), reports.refused(), reportsPeak.peak(), reportsLimit));
        terminal.println(format("  gRPC Quotes/Get %,6d    %,6d   %7s    %,6d   %12d   %5d", grpc.sent(), grpc.ok(), "",
                grpc.unavailable(), grpcPeak.peak(), grpcLimit));
        terminal.println("  refused: 503 over HTTP, UNAVAILABLE over gRPC; (stale): served by the fallback");

        return new Measured(settings.requests(), new Limits(inboundLimit, reportsLimit, grpcLimit), probed, blocking,
                quotes, reports, grpc, new Peaks(quotesPeak.peak(), reportsPeak.peak(), grpcPeak.peak()), end).checks();
    }

    private static Map<String, Object> example(SpringApp app) {
        HttpResponse<String> r = app.get("/actuator/example");
        if (r.statusCode() != 200) {
            throw new IllegalStateException("/actuator/example answered " + r.statusCode() + ": " + r.body());
        }
        return Json.object(Json.parse(r.body()));
    }

    private void event(String what) {
        terminal.event(start, what);
    }

    /** The load: requests to the three endpoints in turn, each from its own virtual thread, spread over the ramp. */
    private static final class Load {
        final int requests;
        final SpringPart.Tally quotes = new SpringPart.Tally();
        final SpringPart.Tally reports = new SpringPart.Tally();
        final LongAdder sent = new LongAdder();
        final LongAdder ok = new LongAdder();
        final LongAdder unavailable = new LongAdder();
        final LongAdder withPushback = new LongAdder();
        final LongAdder namingGrpc = new LongAdder();
        final Map<String, LongAdder> other = new ConcurrentHashMap<>();
        private long startNanos;
        private long endNanos;

        Load(int requests) {
            this.requests = requests;
        }

        void run(SpringApp app, ManagedChannel channel, Duration ramp) throws InterruptedException {
            startNanos = System.nanoTime();
            int total = 3 * requests;
            CountDownLatch calls = new CountDownLatch(requests);
            AtomicInteger next = new AtomicInteger();
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < total; i++) {
                    long due = startNanos + ramp.toNanos() * i / total;
                    long early = due - System.nanoTime();
                    if (early > 1_000_000) {
                        Thread.sleep(Duration.ofNanos(early));
                    }
                    int n = i / 3;
                    switch (i % 3) {
                        case 0 -> threads.submit(() -> http(app, QUOTES + "SYM" + n % 50, quotes));
                        case 1 -> threads.submit(() -> http(app, REPORTS + n % 50, reports));
                        default -> call(channel, "SYM" + next.getAndIncrement() % 50, calls);
                    }
                }
                if (!calls.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(calls.getCount() + " gRPC calls had no end after 60 s");
                }
            }
            endNanos = System.nanoTime();
        }

        private static void http(SpringApp app, String path, SpringPart.Tally tally) {
            try {
                tally.count(app.send(path));
            } catch (IOException | RuntimeException e) {
                tally.failed(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                tally.failed(e);
            }
        }

        /** One gRPC call, made without a thread of its own: the observer counts how it ends. */
        private void call(ManagedChannel channel, String symbol, CountDownLatch calls) {
            sent.increment();
            ClientCalls.asyncUnaryCall(channel.newCall(Quotes.GET, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS)),
                    symbol, new StreamObserver<>() {
                        @Override
                        public void onNext(String quote) {
                        }

                        @Override
                        public void onError(Throwable t) {
                            Status status = Status.fromThrowable(t);
                            if (status.getCode() == Status.Code.UNAVAILABLE) {
                                unavailable.increment();
                                Metadata trailers = Status.trailersFromThrowable(t);
                                if (trailers != null && trailers.get(Metadata.Key.of(PUSHBACK,
                                        Metadata.ASCII_STRING_MARSHALLER)) != null) {
                                    withPushback.increment();
                                }
                                if (status.getDescription() != null && status.getDescription().contains("semaphore 'grpc'")) {
                                    namingGrpc.increment();
                                }
                            } else {
                                other.computeIfAbsent(status.getCode().toString(), k -> new LongAdder()).increment();
                            }
                            calls.countDown();
                        }

                        @Override
                        public void onCompleted() {
                            ok.increment();
                            calls.countDown();
                        }
                    });
        }

        Calls calls() {
            Map<String, Long> others = new TreeMap<>();
            other.forEach((k, v) -> others.put(k, v.sum()));
            return new Calls(sent.sum(), ok.sum(), unavailable.sum(), withPushback.sum(), namingGrpc.sum(), others);
        }

        double seconds() {
            return (endNanos - startNanos) / 1e9;
        }
    }
}
