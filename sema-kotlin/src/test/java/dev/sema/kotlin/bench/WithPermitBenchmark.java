package dev.sema.kotlin.bench;

import dev.sema.Semaphore;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Sema's {@code withPermit} against kotlinx.coroutines' {@code Semaphore.withPermit}: uncontended (one coroutine,
 * 1,000 calls in a row) and contended (10,000 coroutines on 64 permits on {@code Dispatchers.Default}, each holding
 * its permit across a {@code yield}). Scores are per {@code withPermit} call. Numbers are reported, never asserted.
 *
 * <p>Run: {@code bin/benchmarks stacks} (section 16 of docs/BENCHMARKS.md, with the Reactor and gRPC comparisons), or
 * by hand from the repository's root, after {@code mvn -pl sema-kotlin -am package -DskipTests} (the test classes
 * hold the generated harness; the package phase writes the test class path to target/test-classpath.txt):
 * <pre>
 * java -cp sema-kotlin/target/test-classes:sema-kotlin/target/classes:$(cat sema-kotlin/target/test-classpath.txt) \
 *     org.openjdk.jmh.Main WithPermitBenchmark -prof gc
 * </pre>
 * It lives here, not in sema-benchmarks, beside the Kotlin code it calls ({@code BenchmarkRuns}): this module
 * already compiles Kotlin and then Java with JMH's generator, and sema-benchmarks has no Kotlin compiler.
 * WithPermitBenchmarkSmokeTest runs each benchmark once in the build.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class WithPermitBenchmark {
    private static final int IN_A_ROW = 1_000;
    private static final int COROUTINES = 10_000;
    private static final int LIMIT = 64;

    private Semaphore sema;
    private kotlinx.coroutines.sync.Semaphore kotlinxSemaphore;

    @Setup
    public void setUp() {
        sema = Semaphore.create(LIMIT);
        kotlinxSemaphore = kotlinx.coroutines.sync.SemaphoreKt.Semaphore(LIMIT, 0);
    }

    @Benchmark
    @OperationsPerInvocation(IN_A_ROW)
    public long uncontendedSema() {
        return BenchmarkRuns.semaUncontended(sema, IN_A_ROW);
    }

    @Benchmark
    @OperationsPerInvocation(IN_A_ROW)
    public long uncontendedKotlinx() {
        return BenchmarkRuns.kotlinxUncontended(kotlinxSemaphore, IN_A_ROW);
    }

    @Benchmark
    @OperationsPerInvocation(COROUTINES)
    public void contendedSema() {
        BenchmarkRuns.semaContended(sema, COROUTINES);
    }

    @Benchmark
    @OperationsPerInvocation(COROUTINES)
    public void contendedKotlinx() {
        BenchmarkRuns.kotlinxContended(kotlinxSemaphore, COROUTINES);
    }
}
