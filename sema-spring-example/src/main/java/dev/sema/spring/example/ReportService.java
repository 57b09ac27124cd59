package dev.sema.spring.example;

import dev.sema.spring.WithPermits;
import org.springframework.stereotype.Service;

/** Renders reports, at most as many at once as semaphore {@code reports} allows. */
@Service
public class ReportService {
    private final ReportRenderer renderer;

    ReportService(ReportRenderer renderer) {
        this.renderer = renderer;
    }

    /**
     * Renders one report while holding a permit of {@code reports}.
     *
     * @param id the report
     * @return the report
     * @throws InterruptedException if interrupted while rendering
     */
    @WithPermits(value = "reports", timeout = "100ms")  // no permit within 100 ms: 503 with Retry-After
    public Report render(String id) throws InterruptedException {
        return renderer.render(id);                      // at most sema.semaphores.reports.permits at once
    }

    /**
     * A rendered report.
     *
     * @param id the report
     * @param checksum what rendering it computed
     */
    public record Report(String id, String checksum) {
    }
}
