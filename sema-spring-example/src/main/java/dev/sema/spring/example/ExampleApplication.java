package dev.sema.spring.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.context.WebServerPortFileWriter;

/**
 * A small web application that uses {@code sema-spring-boot-starter} the way the README teaches. Everything Sema does
 * here is configured in {@code application.yml}:
 * <ul>
 *   <li>{@code /api/**} ({@link QuoteController}) is behind the {@code sema.web} filter: each request holds one permit
 *       of {@code inbound}, whose {@code AdaptiveLimit.gradient()} follows the capacity of the partner API the
 *       quotes come from ({@link PartnerApi}); beyond the limit a request is refused at once with 503 and
 *       {@code Retry-After}. {@code sema.web.paths} lists {@code /actuator/**} too, yet the actuator is never
 *       limited: {@code sema.web.exclude-paths}, by default the actuator's base path, wins, so
 *       {@code /actuator/health} and its {@code liveness} and {@code readiness} probes are never refused.
 *   <li>{@code /reports/{id}} ({@link ReportController}) calls {@link ReportService#render}, a
 *       {@code @WithPermits("reports")} method: 8 at once, a caller waits at most 100 ms for a permit, then gets
 *       the copy rendered last, marked {@code "stale": true}, from the method's fallback, or 503 for a report never
 *       rendered.
 *   <li>With the {@code redis} profile and {@code SEMA_REDIS_URI}, {@code /exports/{id}} ({@link ExportController})
 *       holds a permit of {@code exports}, a {@code RedisSemaphore} shared by every instance of the application.
 *   <li>The actuator serves {@code /actuator/semaphores} (GET the state, POST {@code {"permits": 16}} to change a
 *       limit), {@code /actuator/health} (with the {@code semaphores} contributor), {@code /actuator/prometheus}
 *       (the {@code sema_*} meters, the waits and holds as histograms for the Grafana dashboard) and
 *       {@code /actuator/inflight} ({@link InFlightEndpoint}: how many requests each endpoint ran at once, which
 *       the demo checks against the limits).
 * </ul>
 * Requests run on virtual threads ({@code spring.threads.virtual.enabled}).
 *
 * <p>Started with {@code -DPORTFILE=path} (and {@code --server.port=0}), it writes the port it listens on to that
 * file, with Spring Boot's {@link WebServerPortFileWriter}: that is how the demo finds it.
 */
@SpringBootApplication
public class ExampleApplication {

    /**
     * Runs the application.
     *
     * @param args Spring Boot's arguments, e.g. {@code --server.port=0}
     */
    public static void main(String[] args) {
        SpringApplication application = new SpringApplication(ExampleApplication.class);
        if (System.getProperty("PORTFILE") != null) {
            application.addListeners(new WebServerPortFileWriter());
        }
        application.run(args);
    }
}
