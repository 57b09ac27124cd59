package dev.sema.spring;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import dev.sema.micrometer.SemaphoreMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.List;

/**
 * Binds every semaphore and keyed family of the registry with a {@link SemaphoreMetrics} to each meter registry Spring Boot
 * hands it (a {@link MeterBinder} bean), and removes the meters and listeners when the context closes.
 */
final class SemaphoreRegistryMetrics implements MeterBinder, AutoCloseable {
    private final List<SemaphoreMetrics> metrics = new ArrayList<>();

    SemaphoreRegistryMetrics(SemaphoreRegistry registry, boolean perSampleTimers) {
        for (Semaphore s : registry.all().values()) {
            metrics.add(SemaphoreMetrics.builder(s).perSampleTimers(perSampleTimers).build());
        }
        for (KeyedSemaphore<Object> family : registry.allKeyed().values()) {
            metrics.add(SemaphoreMetrics.builder(family).perSampleTimers(perSampleTimers).build());
        }
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (SemaphoreMetrics m : metrics) {
            m.bindTo(registry);
        }
    }

    @Override
    public void close() {
        for (SemaphoreMetrics m : metrics) {
            m.close();
        }
    }
}
