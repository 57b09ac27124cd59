package dev.sema.reactive.example;

import dev.sema.spring.PermitUnavailableException;
import dev.sema.spring.WithPermits;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;
import reactor.core.publisher.Mono;

/**
 * Renders reports, {@code reports}' limit at once: the permit is held from the subscription of the {@code Mono}
 * {@link #render} returns until it ends. A call that gets no permit within 100 ms gets the copy rendered last, marked
 * stale, from {@link #lastCopy}; a report never rendered is refused (503).
 */
@Service
class ReportService {
    record Report(long id, String body, boolean stale) {
    }

    private final Map<Long, Report> rendered = new ConcurrentHashMap<>();
    private final InFlight inFlight;
    private final Duration work;

    ReportService(ExampleEndpoint example, @Value("${example.report-time}") Duration work) {
        this.inFlight = example.reports();
        this.work = work;
    }

    @WithPermits(value = "reports", timeout = "100ms", fallback = "lastCopy")
    Mono<Report> render(long id) {
        return inFlight.around(Mono.delay(work).map(tick -> {
            Report report = new Report(id, "report " + id, false);
            rendered.put(id, report);
            return report;
        }));
    }

    Mono<Report> lastCopy(long id, PermitUnavailableException refused) {
        Report last = rendered.get(id);
        return last == null ? Mono.error(refused) : Mono.just(new Report(id, last.body(), true));
    }
}
