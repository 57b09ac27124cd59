package dev.sema.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Spring Boot's report for a {@link SemaConfigurationException}, in the form of its own binding failures:
 *
 * <pre>
 * Invalid Sema configuration:
 *
 *     Property: sema.semaphores.db.max-permits
 *     Value: "5"
 *     Origin: class path resource [application.yml] - 5:20
 *     Reason: must not be below sema.semaphores.db.permits (10)
 *
 * Action:
 *
 * Update your application's configuration: ...
 * </pre>
 */
final class SemaFailureAnalyzer extends AbstractFailureAnalyzer<SemaConfigurationException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, SemaConfigurationException cause) {
        StringBuilder description = new StringBuilder("Invalid Sema configuration:\n\n");
        description.append("    ").append(cause.kind().label).append(": ").append(cause.setting()).append('\n');
        description.append("    Value: \"").append(cause.value()).append("\"\n");
        if (cause.origin() != null) {
            description.append("    Origin: ").append(cause.origin()).append('\n');
        }
        description.append("    Reason: ").append(cause.reason());
        if (cause.getCause() != null && cause.getCause().getMessage() != null
                && !cause.reason().contains(cause.getCause().getMessage())) {
            description.append(" (").append(cause.getCause().getClass().getSimpleName()).append(": ")
                    .append(cause.getCause().getMessage()).append(')');
        }
        return new FailureAnalysis(description.toString(), cause.action(), cause);
    }
}
