package dev.sema.kotlin.bench

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.openjdk.jmh.runner.Runner
import org.openjdk.jmh.runner.options.OptionsBuilder
import org.openjdk.jmh.runner.options.TimeValue

/**
 * A smoke run of the Kotlin part of `bin/benchmarks stacks` ([WithPermitBenchmark]), in this JVM: each benchmark
 * once, no warm-up, one 100 ms iteration, failing on the first error. The numbers mean nothing and are not looked at.
 */
class WithPermitBenchmarkSmokeTest {

    @Test
    fun everyWithPermitBenchmarkRuns() {
        val options = OptionsBuilder()
            .include("dev\\.sema\\.kotlin\\.bench\\.WithPermitBenchmark\\.")
            .forks(0)
            .warmupIterations(0)
            .measurementIterations(1)
            .measurementTime(TimeValue.milliseconds(100))
            .shouldFailOnError(true)
            .build()
        assertEquals(4, Runner(options).run().size, "benchmarks run")
    }
}
