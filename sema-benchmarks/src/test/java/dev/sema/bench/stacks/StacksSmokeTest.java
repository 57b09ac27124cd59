package dev.sema.bench.stacks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Collection;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * A smoke run of {@code bin/benchmarks stacks}' Java benchmarks, in this JVM: every benchmark and parameter once,
 * no warm-up, one 100 ms iteration, failing on the first error. Their own checks (every permit back, every request
 * ended) run after each iteration, so a contender that loses a permit or a request fails the build here. The
 * numbers mean nothing and are not looked at.
 */
class StacksSmokeTest {

    @Test
    void everyStacksBenchmarkRunsAndKeepsItsPermits() throws RunnerException {
        Options options = new OptionsBuilder()
                .include("dev\\.sema\\.bench\\.stacks\\.")
                .forks(0)
                .warmupIterations(0)
                .measurementIterations(1)
                .measurementTime(TimeValue.milliseconds(100))
                .shouldFailOnError(true)
                .build();
        Collection<RunResult> results = new Runner(options).run();
        // ReactorGranted: 3 limiters; ReactorWaiting: 3 limiters x 2 subscribers; Grpc: 3 interceptors x 2.
        assertEquals(15, results.size(), "benchmarks run");
    }
}
