package dev.sema.spring.example;

/**
 * A rendered report.
 *
 * @param id the report
 * @param checksum what rendering it computed
 * @param stale {@code true} for a copy rendered earlier, served by {@link ReportService}'s fallback when no permit
 *     came in time
 */
public record Report(String id, String checksum, boolean stale) {

    /** @return this report as a copy rendered earlier */
    Report asStale() {
        return new Report(id, checksum, true);
    }
}
