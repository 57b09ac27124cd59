package dev.sema.spring.example;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /reports/{id}}: not behind the filter; its limit is {@link ReportService#render}'s {@code @WithPermits}.
 * Without a permit in time, the answer is the copy rendered last ({@code "stale": true}), or, for a report never
 * rendered, 503 with {@code Retry-After} (the starter's exception resolver answers the
 * {@code PermitUnavailableException}).
 */
@RestController
public class ReportController {
    private final ReportService reports;

    ReportController(ReportService reports) {
        this.reports = reports;
    }

    /**
     * One report.
     *
     * @param id the report
     * @return the report
     * @throws InterruptedException if interrupted while rendering
     */
    @GetMapping("/reports/{id}")
    public Report report(@PathVariable String id) throws InterruptedException {
        return reports.render(id);
    }
}
