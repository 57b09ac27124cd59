package dev.sema.spring.example;

import dev.sema.spring.PermitUnavailableException;
import dev.sema.spring.WithPermits;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Service;

/**
 * Renders reports, at most as many at once as semaphore {@code reports} allows
 * ({@code sema.semaphores.reports.permits}): {@link #render} holds one permit while it runs. A caller that gets no
 * permit within 100 ms gets the copy of the report rendered last, marked stale, from the fallback
 * {@link #lastCopy}, which runs without a permit; a report never rendered is refused with the
 * {@code PermitUnavailableException}, which Spring MVC answers with 503 and {@code Retry-After}. The copies are kept
 * in a map, which suits the example's few reports (an application with many would bound it, as a cache does). The
 * README shows this class as it is here (sema-spring-example's ReadmeSpringBootTest checks it).
 */
@Service
public class ReportService {
    private final ReportRenderer renderer;
    private final Map<String, Report> rendered = new ConcurrentHashMap<>();

    ReportService(ReportRenderer renderer) {
        this.renderer = renderer;
    }

    @WithPermits(value = "reports", timeout = "100ms", fallback = "lastCopy")  // no permit within 100 ms: lastCopy
    public Report render(String id) throws InterruptedException {
        Report report = renderer.render(id);             // at most sema.semaphores.reports.permits at once
        rendered.put(id, report);
        return report;
    }

    Report lastCopy(String id, PermitUnavailableException refusal) {
        Report copy = rendered.get(id);
        if (copy == null) {
            throw refusal;                               // never rendered: 503 with Retry-After
        }
        return copy.asStale();                           // {"id": ..., "checksum": ..., "stale": true}
    }
}
