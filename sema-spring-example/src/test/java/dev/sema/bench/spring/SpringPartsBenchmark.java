package dev.sema.bench.spring;

import dev.sema.bench.spring.SpringOverheadBenchmark.GuardedQuotes;
import dev.sema.bench.spring.SpringOverheadBenchmark.PlainQuotes;
import dev.sema.bench.spring.SpringOverheadBenchmark.Quote;
import dev.sema.spring.example.ExampleApplication;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * The parts of {@link SpringOverheadBenchmark} alone, in the same example application (filter on, meters bound with
 * histograms, the adaptive limit of {@code inbound}): the {@code sema.web} filter around a chain that does nothing,
 * against that chain called directly; the {@code @WithPermits} method through its proxy, against the same work from a
 * plain bean. One thread, every permit free. The differences are what each part adds to every request it guards,
 * without the rest of the request's noise.
 *
 * <p>Run with {@code bin/benchmarks spring} (section 13 of docs/BENCHMARKS.md), or by hand as
 * {@link SpringOverheadBenchmark} says, naming {@code SpringPartsBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 3, jvmArgsAppend = {"-Xms512m", "-Xmx512m"})
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 1)
public class SpringPartsBenchmark {
    private ConfigurableApplicationContext context;
    private Filter filter;
    private final FilterChain chain = (request, response) -> { };
    private final MockHttpServletRequest request = new MockHttpServletRequest("GET", "/api/bench/plain");
    private final MockHttpServletResponse response = new MockHttpServletResponse();
    private PlainQuotes plain;
    private GuardedQuotes guarded;

    /** Starts the example application with the benchmark's beans, and checks that the parts are in play. */
    @Setup(Level.Trial)
    public void start() throws Exception {
        context = new SpringApplicationBuilder(ExampleApplication.class, SpringOverheadBenchmark.Bench.class)
                .run("--server.port=0", "--server.address=127.0.0.1", "--logging.level.root=warn");
        filter = context.getBean("semaphoreFilter", FilterRegistrationBean.class).getFilter();
        plain = context.getBean(PlainQuotes.class);
        guarded = context.getBean(GuardedQuotes.class);
        if (!guarded.getClass().getName().contains("$$")) {
            throw new IllegalStateException("GuardedQuotes is not proxied: " + guarded.getClass());
        }
        filtered();
        if (response.getStatus() != 200 || request.getAttribute("semaphoreFilter.FILTERED") != null) {
            throw new IllegalStateException("the filter answered " + response.getStatus());
        }
    }

    /** The chain the filter calls, called directly: the baseline of {@link #filtered}. */
    @Benchmark
    public void unfiltered() throws IOException, ServletException {
        chain.doFilter(request, response);
    }

    /** The {@code sema.web} filter: path match, a permit of {@code inbound} taken and given back, the meters. */
    @Benchmark
    public void filtered() throws IOException, ServletException {
        filter.doFilter(request, response, chain);
    }

    /** The work, from a plain bean: the baseline of {@link #guarded}. */
    @Benchmark
    public Quote plain() {
        return plain.quote();
    }

    /** The same work through the {@code @WithPermits} proxy: a permit of {@code reports} held around it. */
    @Benchmark
    public Quote guarded() {
        return guarded.quote();
    }

    /** Stops the application. */
    @TearDown(Level.Trial)
    public void stop() {
        context.close();
    }
}
