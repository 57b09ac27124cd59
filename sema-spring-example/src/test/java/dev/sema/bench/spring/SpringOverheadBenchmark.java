package dev.sema.bench.spring;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.SemaphoreRegistry;
import dev.sema.spring.WithPermits;
import dev.sema.spring.example.ExampleApplication;
import jakarta.servlet.Filter;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.boot.web.servlet.AbstractFilterRegistrationBean;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.boot.web.servlet.ServletContextInitializer;
import org.springframework.boot.web.servlet.ServletContextInitializerBeans;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Service;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.WebApplicationContext;

/**
 * What the {@code sema.web} filter and {@code @WithPermits} add per request: the example application
 * (sema-spring-example, its own application.yml: meters bound, waits and holds as histograms, an adaptive limit on
 * {@code inbound}) with one more endpoint, {@code /api/bench/...}, whose handler returns a small JSON object from a
 * bean, and nothing else. Four applications, one per {@code parts}, identical but for what guards that request:
 * <ul>
 *   <li>{@code none}: no filter (a disabled registration takes the place of the starter's) and a plain bean;
 *   <li>{@code filter}: the {@code sema.web} filter on {@code inbound} (it matches {@code /api/**}), a plain bean;
 *   <li>{@code annotation}: no filter, the bean method {@code @WithPermits(value = "reports", timeout = "100ms")},
 *       as {@code ReportService.render};
 *   <li>{@code both}: the filter and the annotated method.
 * </ul>
 * One thread sends the requests one after the other, so every permit is free: this is the cost of the parts on the
 * path every request takes, not of waiting. Two ways in:
 * <ul>
 *   <li>{@link #mvc}: Spring MVC in process ({@code MockMvc} with the application's servlet filters, in the order
 *       Spring Boot registers them): the whole request but the network and Tomcat, so the small difference is
 *       measurable;
 *   <li>{@link #http}: real HTTP over loopback to the application's Tomcat ({@code java.net.http}, HTTP/1.1,
 *       one kept-alive connection), client and server in this JVM: the scale of a whole request.
 * </ul>
 * Each application is checked at setup: with the filter, a request finds {@code inbound} exhausted and is refused
 * 503; with the annotation, one finds {@code reports} exhausted and is refused 503; without them, both succeed.
 *
 * {@link SpringPartsBenchmark} measures the parts alone.
 *
 * <p>Run with {@code bin/benchmarks spring [full|quick|smoke]} (section 13 of docs/BENCHMARKS.md), or by hand after
 * {@code mvn -pl sema-spring-example -am -DskipTests package}:
 * {@code java -cp sema-spring-example/target/test-classes:sema-spring-example/target/classes:$(cat
 * sema-spring-example/target/test-classpath.txt) org.openjdk.jmh.Main SpringOverheadBenchmark -prof gc}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 5, jvmArgsAppend = {"-Xms512m", "-Xmx512m"})
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
public class SpringOverheadBenchmark {
    /** What guards the request: {@code none}, {@code filter}, {@code annotation} or {@code both}. */
    @Param({"none", "filter", "annotation", "both"})
    public String parts;

    private ConfigurableApplicationContext context;
    private MockMvc mvc;
    private HttpClient client;
    private HttpRequest request;
    private String path;

    /** Starts the application with the parts asked for, and checks that they are (or are not) in play. */
    @Setup(Level.Trial)
    public void start() throws Exception {
        boolean filter = parts.equals("filter") || parts.equals("both");
        boolean annotation = parts.equals("annotation") || parts.equals("both");
        if (!filter && !annotation && !parts.equals("none")) {
            throw new IllegalArgumentException("parts must be none, filter, annotation or both, not " + parts);
        }
        List<String> args = new ArrayList<>(List.of("--server.port=0", "--server.address=127.0.0.1",
                "--logging.level.root=warn"));
        if (!filter) {
            args.add("--bench.no-filter=true");
        }
        context = new SpringApplicationBuilder(ExampleApplication.class, Bench.class).run(args.toArray(String[]::new));
        path = "/api/bench/" + (annotation ? "guarded" : "plain");
        mvc = MockMvcBuilders.webAppContextSetup((WebApplicationContext) context)
                .addFilters(filters(context).toArray(Filter[]::new)).build();
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5))
                .build();
        request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10))
                .GET().build();
        check(filter, annotation);
    }

    /** One request through Spring MVC in process. */
    @Benchmark
    public String mvc() throws Exception {
        MvcResult result = mvc.perform(get(path)).andReturn();
        return result.getResponse().getContentAsString();
    }

    /**
     * One request over loopback HTTP to the application's Tomcat. It takes longer to warm up (Tomcat, the client and
     * the network path all compile, on the cores the requests use), and the forks agree less: fewer forks, a longer
     * warm-up.
     */
    @Benchmark
    @Fork(value = 3, jvmArgsAppend = {"-Xms512m", "-Xmx512m"})
    @Warmup(iterations = 15, time = 2)
    public String http() throws IOException, InterruptedException {
        return client.send(request, HttpResponse.BodyHandlers.ofString()).body();
    }

    /** Stops the application. */
    @TearDown(Level.Trial)
    public void stop() {
        client.close();
        context.close();
    }

    /** The servlet filters Spring Boot registers with the container, in its order. */
    private static List<Filter> filters(ConfigurableApplicationContext context) {
        List<Filter> filters = new ArrayList<>();
        for (ServletContextInitializer initializer : new ServletContextInitializerBeans(context.getBeanFactory())) {
            if (initializer instanceof AbstractFilterRegistrationBean<?> registration && registration.isEnabled()) {
                filters.add(registration.getFilter());
            }
        }
        return filters;
    }

    private void check(boolean filter, boolean annotation) throws Exception {
        SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
        expect(200, "with every permit free");
        Semaphore inbound = registry.get("inbound");
        try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
            expect(filter ? 503 : 200, "with inbound exhausted");
        }
        Semaphore reports = registry.get("reports");
        try (Permit all = reports.tryAcquire(reports.permits()).orElseThrow()) {
            expect(annotation ? 503 : 200, "with reports exhausted");
        }
    }

    private void expect(int status, String when) throws Exception {
        int mvcStatus = mvc.perform(get(path)).andReturn().getResponse().getStatus();
        int httpStatus = client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
        if (mvcStatus != status || httpStatus != status) {
            throw new IllegalStateException("parts=" + parts + ": GET " + path + " " + when + " answered " + mvcStatus
                    + " in process and " + httpStatus + " over HTTP, not " + status);
        }
    }

    /**
     * The benchmark's endpoint and its two beans, added to the example application; with {@code bench.no-filter},
     * a disabled filter registration named {@code semaphoreFilter}, in whose presence the starter registers none
     * (everything else of its web part, the 503 of {@code PermitUnavailableException} included, stays).
     */
    @Configuration(proxyBeanMethods = false)
    @Import({Endpoint.class, PlainQuotes.class, GuardedQuotes.class})
    public static class Bench {
        @Bean
        @ConditionalOnProperty("bench.no-filter")
        FilterRegistrationBean<Filter> semaphoreFilter() {
            FilterRegistrationBean<Filter> none = new FilterRegistrationBean<>((request, response, chain) -> chain
                    .doFilter(request, response));
            none.setEnabled(false);
            return none;
        }
    }

    /** {@code /api/bench/plain} and {@code /api/bench/guarded}: the same work from either bean. */
    @RestController
    public static class Endpoint {
        private final PlainQuotes plain;
        private final GuardedQuotes guarded;

        Endpoint(PlainQuotes plain, GuardedQuotes guarded) {
            this.plain = plain;
            this.guarded = guarded;
        }

        @GetMapping("/api/bench/plain")
        public Quote plain() {
            return plain.quote();
        }

        @GetMapping("/api/bench/guarded")
        public Quote guarded() {
            return guarded.quote();
        }
    }

    /** A quote, without any limit. */
    @Service
    public static class PlainQuotes {
        public Quote quote() {
            return new Quote("ACME", 101.25);
        }
    }

    /** The same quote, holding a permit of {@code reports} as {@code ReportService.render} does. */
    @Service
    public static class GuardedQuotes {
        @WithPermits(value = "reports", timeout = "100ms")
        public Quote quote() {
            return new Quote("ACME", 101.25);
        }
    }

    /**
     * What the endpoint answers.
     *
     * @param symbol the symbol
     * @param price its price
     */
    public record Quote(String symbol, double price) {
    }
}
