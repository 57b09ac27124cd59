package dev.sema.reactive.example;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** {@code /reports/{id}}: {@link ReportService#render}, not behind the filter: its own {@code @WithPermits} limits it. */
@RestController
class ReportController {
    private final ReportService reports;

    ReportController(ReportService reports) {
        this.reports = reports;
    }

    @GetMapping("/reports/{id}")
    Mono<ReportService.Report> report(@PathVariable long id) {
        return reports.render(id);
    }
}
