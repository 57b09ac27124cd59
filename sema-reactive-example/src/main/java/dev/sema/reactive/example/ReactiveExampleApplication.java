package dev.sema.reactive.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.context.WebServerPortFileWriter;

/**
 * A WebFlux application on Netty that uses {@code sema-spring-boot-starter}, {@code sema-reactor} and
 * {@code sema-grpc} the way the README teaches, and never blocks a thread while a request waits for a permit.
 * What Sema does here is configured in {@code application.yml}:
 * <ul>
 *   <li>{@code /api/**} ({@link QuoteController}) is behind {@code sema.web}, here a {@code WebFilter}: each request
 *       holds one permit of {@code inbound} until its response is written; beyond the limit a request waits at most
 *       {@code max-wait} without a thread, then is refused with 503 and {@code Retry-After}.
 *   <li>{@code /reports/{id}} calls {@link ReportService#render}, a {@code @WithPermits("reports")} method returning a
 *       {@code Mono}: the permit is held from subscription to termination; a call refused one gets the copy
 *       rendered last from the method's fallback, or 503 for a report never rendered.
 *   <li>A gRPC server ({@link QuoteGrpcServer}) on Netty, its calls run on the event loop, behind
 *       {@code SemaServerInterceptor} on {@code grpc}: a call that finds no permit is closed {@code UNAVAILABLE} with
 *       {@code grpc-retry-pushback-ms}.
 *   <li>{@code /actuator/example} ({@link ExampleEndpoint}): the gRPC port, how many requests each endpoint ran at
 *       once, and the blocking calls BlockHound saw.
 * </ul>
 *
 * <p>Started with {@code -DBLOCKHOUND=report}, it installs BlockHound ({@link BlockingCalls}) so that a blocking call
 * on any non-blocking thread (Netty's event loops, Reactor's schedulers) is counted and reported at
 * {@code /actuator/example}. With {@code -DPORTFILE=path} (and {@code --server.port=0}) it writes its HTTP port to
 * that file: that is how the demo finds it.
 */
@SpringBootApplication
public class ReactiveExampleApplication {

    /**
     * Runs the application.
     *
     * @param args Spring Boot's arguments, e.g. {@code --server.port=0}
     */
    public static void main(String[] args) {
        if ("report".equals(System.getProperty("BLOCKHOUND"))) {
            BlockingCalls.install();
        }
        SpringApplication application = new SpringApplication(ReactiveExampleApplication.class);
        if (System.getProperty("PORTFILE") != null) {
            application.addListeners(new WebServerPortFileWriter());
        }
        application.run(args);
    }
}
