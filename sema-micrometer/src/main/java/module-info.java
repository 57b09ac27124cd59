/**
 * Micrometer meters for Sema semaphores: {@link dev.sema.micrometer.SemaphoreMetrics}.
 */
module dev.sema.micrometer {
    requires transitive dev.sema;
    requires transitive micrometer.core;

    exports dev.sema.micrometer;
}
