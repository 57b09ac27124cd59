package dev.sema.spring;

import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;

/**
 * {@code sema.web.semaphore} or {@code sema.web.keyed} is set: either alone makes a {@code sema.web} filter, the
 * servlet one ({@link SemaWebAutoConfiguration}) or the reactive one ({@link SemaWebFluxAutoConfiguration}).
 */
class WebLimitConfigured extends AnyNestedCondition {
    WebLimitConfigured() {
        super(ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnProperty(prefix = "sema.web", name = "semaphore")
    static class Semaphore {
    }

    @ConditionalOnProperty(prefix = "sema.web", name = "keyed")
    static class Keyed {
    }
}
