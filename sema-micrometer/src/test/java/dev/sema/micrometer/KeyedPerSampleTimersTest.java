package dev.sema.micrometer;

/** The tests of {@link KeyedSemaphoreMetricsTest} with per-sample Micrometer timers. */
class KeyedPerSampleTimersTest extends KeyedSemaphoreMetricsTest {

    @Override
    boolean perSampleTimers() {
        return true;
    }
}
