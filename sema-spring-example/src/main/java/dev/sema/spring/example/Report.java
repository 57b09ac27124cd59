package dev.sema.spring.example;

/**
 * A rendered report.
 *
 * @param id the report
 * @param checksum what rendering it computed
 */
public record Report(String id, String checksum) {
}
