package dev.sema.spring.example;

import dev.sema.spring.WithPermits;
import org.springframework.stereotype.Service;

/**
 * Renders reports, at most as many at once as semaphore {@code reports} allows
 * ({@code sema.semaphores.reports.permits}): {@link #render} holds one permit while it runs. A caller that gets no
 * permit within 100 ms gets a {@code PermitUnavailableException}, which Spring MVC answers with 503 and
 * {@code Retry-After}. The README shows this class as it is here (sema-spring-example's ReadmeSpringBootTest
 * checks it).
 */
@Service
public class ReportService {
    private final ReportRenderer renderer;

    ReportService(ReportRenderer renderer) {
        this.renderer = renderer;
    }

    @WithPermits(value = "reports", timeout = "100ms")  // no permit within 100 ms: 503 with Retry-After
    public Report render(String id) throws InterruptedException {
        return renderer.render(id);                      // at most sema.semaphores.reports.permits at once
    }
}
