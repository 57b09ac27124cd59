package dev.sema.examples;

import com.sun.net.httpserver.HttpServer;
import dev.sema.Semaphore;
import dev.sema.micrometer.SemaphoreMetrics;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A semaphore's meters as an operator sees them: {@link SemaphoreMetrics} bound to a Prometheus registry,
 * served over HTTP on a loopback port (the JDK's {@code HttpServer}), and read back the way a Prometheus
 * server would, with {@code java.net.http.HttpClient}. The acquire timer publishes its median and 99th
 * percentile.
 */
final class MetricsEndpoint implements AutoCloseable {
    private static final Pattern SAMPLE = Pattern.compile(
            "^sema_acquire_seconds(_count)?\\{([^}]*)\\} ([0-9.eE+-]+|NaN)$");

    private final String semaphore;
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final SemaphoreMetrics metrics;
    private final HttpServer server;
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI uri;

    /** What one scrape said of the acquire requests: counts by outcome, and the granted ones' wait. */
    record Scrape(Map<String, Long> counts, double p50Millis, double p99Millis) {
        long count(String outcome) {
            return counts.getOrDefault(outcome, 0L);
        }
    }

    MetricsEndpoint(Semaphore semaphore) throws IOException {
        this.semaphore = semaphore.name();
        registry.config().meterFilter(new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                return id.getName().equals("sema.acquire")
                        ? DistributionStatisticConfig.builder().percentiles(0.5, 0.99).build().merge(config)
                        : config;
            }
        });
        metrics = new SemaphoreMetrics(semaphore);
        metrics.bindTo(registry);
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/metrics", exchange -> {
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        uri = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/metrics");
    }

    URI uri() {
        return uri;
    }

    /** Reads the meters over HTTP, as a Prometheus server would. */
    Scrape scrape() throws IOException, InterruptedException {
        HttpResponse<String> response = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException(uri + " answered " + response.statusCode());
        }
        Map<String, Long> counts = new HashMap<>();
        double p50 = Double.NaN;
        double p99 = Double.NaN;
        for (String line : response.body().split("\n")) {
            Matcher m = SAMPLE.matcher(line);
            if (!m.matches() || !m.group(2).contains("name=\"" + semaphore + "\"")) {
                continue;
            }
            String labels = m.group(2);
            String outcome = label(labels, "outcome");
            double value = Double.parseDouble(m.group(3));
            if (m.group(1) != null) {
                counts.put(outcome, (long) value);
            } else if ("granted".equals(outcome)) {
                String quantile = label(labels, "quantile");
                if ("0.5".equals(quantile)) {
                    p50 = value * 1_000;
                } else if ("0.99".equals(quantile)) {
                    p99 = value * 1_000;
                }
            }
        }
        return new Scrape(counts, p50, p99);
    }

    private static String label(String labels, String name) {
        Matcher m = Pattern.compile(name + "=\"([^\"]*)\"").matcher(labels);
        return m.find() ? m.group(1) : null;
    }

    @Override
    public void close() {
        metrics.close();
        server.stop(0);
        client.close();
    }
}
