package dev.sema.bench;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;

/**
 * Benchmark 9b, the parts of what {@link ListenerCostBenchmark} measures, alone: the two {@code System.nanoTime()}
 * reads that a hold time needs (one at the grant, one at the release: the floor of any binding that times every
 * give-back, and a figure of the machine's clock source rather than of Sema), and one sample recorded by a
 * Micrometer {@code Timer}, without and with a percentile histogram ({@code SemaphoreMetrics} records two per
 * uncontended acquire + release: the wait and the hold).
 *
 * <p>Run: {@code java -jar sema-benchmarks/target/benchmarks.jar ObservingPartsBenchmark -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
@Threads(1)
public class ObservingPartsBenchmark {

    /** The part measured. */
    @Param({"CLOCK_TWICE", "TIMER", "TIMER_HISTOGRAM"})
    public String impl;

    private Timer timer;
    private long sample;

    /** A timer in a fresh registry, with a percentile histogram for {@code TIMER_HISTOGRAM}. */
    @Setup(Level.Iteration)
    public void setUp() {
        MeterRegistry registry = impl.equals("TIMER_HISTOGRAM") ? histogramRegistry() : new SimpleMeterRegistry();
        timer = Timer.builder("part").register(registry);
    }

    /**
     * The part once: two clock reads, or one timer sample (a varying duration below 65 µs).
     *
     * @return the clock difference, or the sample recorded
     */
    @Benchmark
    public long part() {
        if (impl.equals("CLOCK_TWICE")) {
            long t0 = System.nanoTime();
            return System.nanoTime() - t0;
        }
        long nanos = sample++ & 0xffff;
        timer.record(nanos, TimeUnit.NANOSECONDS);
        return nanos;
    }

    /**
     * A registry whose timers keep a percentile histogram, as {@code percentiles-histogram} does in Spring Boot.
     *
     * @return the registry
     */
    static MeterRegistry histogramRegistry() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        registry.config().meterFilter(new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                return DistributionStatisticConfig.builder().percentilesHistogram(true).build().merge(config);
            }
        });
        return registry;
    }
}
