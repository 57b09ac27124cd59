package dev.sema.spring.example;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /reports/{id}}: not behind the filter; its limit is {@link ReportService#render}'s {@code @WithPermits}.
 * A {@code PermitUnavailableException} thrown there becomes 503 with {@code Retry-After} (the starter's exception
 * resolver).
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
