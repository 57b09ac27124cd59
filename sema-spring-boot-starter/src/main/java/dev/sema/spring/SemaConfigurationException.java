package dev.sema.spring;

import java.io.Serial;

/**
 * A configuration mistake found at startup: which setting ({@code sema.semaphores.db.permits}, or an
 * annotation attribute), its value, where it came from, what is wrong and what to do. {@link SemaFailureAnalyzer}
 * turns it into Spring Boot's failure report.
 */
final class SemaConfigurationException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /** What the setting is: a property, or an annotation attribute. */
    enum Kind {
        PROPERTY("Property"), ANNOTATION("Annotation");

        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    private final Kind kind;
    private final String setting;
    private final String value;
    private final String origin;
    private final String reason;
    private final String action;

    SemaConfigurationException(Kind kind, String setting, String value, String origin, String reason, String action,
            Throwable cause) {
        super(kind.label.toLowerCase(java.util.Locale.ROOT) + " " + setting + " = " + value + ": " + reason
                + (origin == null ? "" : " (" + origin + ")"), cause);
        this.kind = kind;
        this.setting = setting;
        this.value = value;
        this.origin = origin;
        this.reason = reason;
        this.action = action;
    }

    Kind kind() {
        return kind;
    }

    String setting() {
        return setting;
    }

    String value() {
        return value;
    }

    /** Where the value came from ({@code class path resource [application.yml] - 4:16}), or {@code null}. */
    String origin() {
        return origin;
    }

    String reason() {
        return reason;
    }

    String action() {
        return action;
    }
}
