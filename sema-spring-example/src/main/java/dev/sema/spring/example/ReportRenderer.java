package dev.sema.spring.example;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * The work of a report: a digest, then a wait as if for a slow store ({@code example.reports.work}). Counted in
 * {@code /actuator/inflight} as {@code reports}: it runs only while {@link ReportService#render} holds a permit.
 */
@Component
public class ReportRenderer {
    private final InFlight.Counter inFlight;
    private final Duration work;

    ReportRenderer(InFlight inFlight, @Value("${example.reports.work:20ms}") Duration work) {
        this.inFlight = inFlight.counter("reports", "reports");
        this.work = work;
    }

    Report render(String id) throws InterruptedException {
        try (InFlight.Entry entry = inFlight.enter()) {
            byte[] digest;
            try {
                digest = MessageDigest.getInstance("SHA-256").digest(("report " + id).repeat(200)
                        .getBytes(StandardCharsets.UTF_8));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("every JDK has SHA-256", e);
            }
            TimeUnit.NANOSECONDS.sleep(work.toNanos());
            return new Report(id, HexFormat.of().formatHex(digest, 0, 8), false);
        }
    }
}
