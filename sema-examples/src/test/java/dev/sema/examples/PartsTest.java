package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.examples.BudgetPart.Checksum;
import dev.sema.examples.ParallelPart.FailFastRun;
import dev.sema.examples.ParallelPart.MapRun;
import dev.sema.examples.ParallelPart.Rendered;
import dev.sema.examples.ParallelPart.SharedRuns;
import dev.sema.examples.RefillPart.Spend;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keeps the demo's local parts honest: a scaled-down run of each passes every check, and each check
 * fails when the numbers it is given break its promise.
 */
@Timeout(60)
class PartsTest {
    private final ByteArrayOutputStream output = new ByteArrayOutputStream();
    private final Terminal terminal = new Terminal(new PrintStream(output, true, StandardCharsets.UTF_8), false);

    // ---------------------------------------------------------------- scaled-down runs

    @Test
    void parallelPartKeepsEveryPromise() throws Exception {
        ParallelPart part = new ParallelPart(new ParallelPart.Settings(200, 8, 6, 50, 4, Duration.ofSeconds(20)),
                terminal);
        assertAllPass(part.run());
        assertThat(printed()).contains("forEach threw", "3 downloads were interrupted");
    }

    @Test
    void budgetPartKeepsEveryPromise() throws Exception {
        assertAllPass(new BudgetPart(new BudgetPart.Settings(30, 16 << 10, 1 << 20, 2 << 20, 3), terminal).run());
        assertThat(printed()).contains("30 checksums", "is refused");
    }

    @Test
    void gatePartKeepsEveryPromise() throws Exception {
        GatePart part = new GatePart(new GatePart.Settings(60, 40, Duration.ofMillis(2), 20, 60, 5), terminal);
        assertAllPass(part.run());
        assertThat(printed()).contains("gate.close()", "close() future completed");
    }

    @Test
    void leakPartKeepsEveryPromise() throws Exception {
        assertAllPass(new LeakPart(new LeakPart.Settings(3, 5, Duration.ofSeconds(30)), terminal).run());
        assertThat(printed()).contains("WARNING dev.sema: A Permit of semaphore 'connections'",
                "at dev.sema.examples.LeakPart." + LeakPart.LEAKY_METHOD);
    }

    @Test
    void refillPartKeepsEveryPromise() throws Exception {
        assertAllPass(new RefillPart(new RefillPart.Settings(4, 2, Duration.ofMillis(20), 12, 2, 11), terminal).run());
        assertThat(printed()).contains("credits spent per 20 ms");
    }

    @Test
    void prioritiesPartKeepsEveryPromise() throws Exception {
        assertAllPass(new PrioritiesPart(PrioritiesPart.quick(), terminal).run());
        assertThat(printed()).contains("checkout").contains("one flat semaphore");
    }

    @Test
    void tenantsPartKeepsEveryPromise() throws Exception {
        assertAllPass(new TenantsPart(TenantsPart.quick(), terminal).run());
        assertThat(printed()).contains("acme").contains("TooManyKeysException");
    }

    // ---------------------------------------------------------------- every check can fail

    @Test
    void prioritiesChecksFailOnBrokenNumbers() {
        assertThat(failed(PrioritiesPart.checks(16, alone(16, 16), overload(16, 0, 5)))).isEmpty();
        assertThat(failed(PrioritiesPart.checks(16, alone(16, 16), overload(17, 0, 5))))
                .containsExactly("never more than the limit of 16 in flight, all partitions together");
        assertThat(failed(PrioritiesPart.checks(16, alone(15, 15), overload(16, 0, 5))))
                .containsExactly("batch alone used the whole limit (work-conserving)");
        assertThat(failed(PrioritiesPart.checks(16, alone(16, 16), overload(16, 1, 5))))
                .containsExactly("under overload checkout was never shed");
        assertThat(failed(PrioritiesPart.checks(16, alone(16, 16), overload(16, 0, 0))))
                .containsExactly("batch, far over its share, was the traffic shed");
        PrioritiesPart.Phase leaked = new PrioritiesPart.Phase(overload(16, 0, 5).traffic(), 16, 15, 0);
        assertThat(failed(PrioritiesPart.checks(16, alone(16, 16), leaked)))
                .containsExactly("every permit came back, every queue emptied");
    }

    @Test
    void tenantsChecksFailOnBrokenNumbers() {
        TenantsPart.Settings s = TenantsPart.quick();
        TenantsPart.After clean = new TenantsPart.After(0, 16, 0);
        assertThat(failed(TenantsPart.checks(s, competition(3, 3, 16), flood(50, 200, 0), clean))).isEmpty();
        assertThat(failed(TenantsPart.checks(s, competition(3, 4, 16), flood(50, 200, 0), clean)))
                .containsExactly("never more than a tenant's limit of 3 at once");
        assertThat(failed(TenantsPart.checks(s, competition(3, 3, 17), flood(50, 200, 0), clean)))
                .containsExactly("never more than the parent's limit of 16, all tenants together");
        assertThat(failed(TenantsPart.checks(s, competition(2, 2, 16), flood(50, 200, 0), clean)))
                .containsExactly("the noisy tenant was held to its limit, and every other tenant was served");
        assertThat(failed(TenantsPart.checks(s, competition(3, 0, 16), flood(50, 200, 0), clean)))
                .containsExactly("the noisy tenant was held to its limit, and every other tenant was served");
        assertThat(failed(TenantsPart.checks(s, competition(3, 3, 16), flood(0, 200, 0), clean)))
                .containsExactly("the flood of tenant ids was refused beyond maxKeys 200");
        assertThat(failed(TenantsPart.checks(s, competition(3, 3, 16), flood(50, 200, 5L << 20), clean)))
                .containsExactly("the heap came back near its baseline (within 4 MB)");
        assertThat(failed(TenantsPart.checks(s, competition(3, 3, 16), flood(50, 200, 0), new TenantsPart.After(0, 15, 0))))
                .containsExactly("every permit came back, every queue emptied");
        assertThat(failed(TenantsPart.checks(s, competition(3, 3, 16), flood(50, 200, 0), new TenantsPart.After(1, 16, 0))))
                .containsExactly("the heap came back near its baseline (within 4 MB)",
                        "every permit came back, every queue emptied");
    }

    /** acme at {@code noisyPeak}; globex at {@code quietPeak}, served only if that is above 0. */
    private static TenantsPart.Competition competition(int noisyPeak, int quietPeak, int peakTotal) {
        TenantsPart.Tenant acme = new TenantsPart.Tenant("acme");
        acme.peak.set(noisyPeak);
        acme.served.add(100);
        TenantsPart.Tenant globex = new TenantsPart.Tenant("globex");
        globex.peak.set(quietPeak);
        globex.served.add(quietPeak > 0 ? 10 : 0);
        java.util.Map<String, TenantsPart.Tenant> tenants = new java.util.LinkedHashMap<>();
        tenants.put("acme", acme);
        tenants.put("globex", globex);
        return new TenantsPart.Competition(tenants, peakTotal);
    }

    private static TenantsPart.Flood flood(long refused, int mostKeys, long heapGrowth) {
        return new TenantsPart.Flood(10_000, refused, 100, 10_000 - refused - 100, mostKeys, 50L << 20,
                (50L << 20) + heapGrowth);
    }

    private static PrioritiesPart.Phase alone(int batchPeak, int peakTotal) {
        PrioritiesPart.Traffic batch = new PrioritiesPart.Traffic("batch");
        batch.peak.set(batchPeak);
        batch.served.add(100);
        return new PrioritiesPart.Phase(java.util.Map.of("batch", batch), peakTotal, 16, 0);
    }

    private static PrioritiesPart.Phase overload(int peakTotal, int checkoutShed, int batchShed) {
        PrioritiesPart.Traffic checkout = new PrioritiesPart.Traffic("checkout");
        checkout.served.add(100);
        checkout.refused.add(checkoutShed);
        PrioritiesPart.Traffic batch = new PrioritiesPart.Traffic("batch");
        batch.served.add(10);
        batch.refused.add(batchShed);
        return new PrioritiesPart.Phase(java.util.Map.of("checkout", checkout, "batch", batch), peakTotal, 16, 0);
    }

    @Test
    void parallelChecksFailOnBrokenNumbers() {
        List<Rendered> inOrder = IntStream.range(0, 3).mapToObj(i -> new Rendered(i, "x")).toList();
        assertThat(failed(new MapRun(3, 2, inOrder, 2, 3).checks())).isEmpty();
        assertThat(failed(new MapRun(3, 2, inOrder, 3, 3).checks())).containsExactly("Parallel.map ran at most 2"
                + " calls at once");
        assertThat(failed(new MapRun(3, 2, List.of(inOrder.get(1), inOrder.get(0), inOrder.get(2)), 2, 3).checks()))
                .containsExactly("Parallel.map returned every result in input order");
        assertThat(failed(new MapRun(3, 2, inOrder, 2, 4).checks()))
                .containsExactly("the input was pulled lazily: taken-but-unfinished items never exceeded limit + 1");

        List<String> a = List.of("a-0", "a-1");
        List<String> b = List.of("b-0", "b-1");
        assertThat(failed(new SharedRuns(3, 2, a, b, 3, 3, 0).checks())).isEmpty();
        assertThat(failed(new SharedRuns(3, 2, a, b, 4, 3, 0).checks())).hasSize(1);
        assertThat(failed(new SharedRuns(3, 2, a, List.of("b-1", "b-0"), 3, 3, 0).checks())).hasSize(1);
        assertThat(failed(new SharedRuns(3, 2, a, b, 3, 2, 0).checks())).hasSize(1);

        Throwable thrown = new CompletionException(new IOException("report 3: connection reset"));
        assertThat(failed(new FailFastRun(4, thrown, 4, 5, 3, 0).checks())).isEmpty();
        assertThat(failed(new FailFastRun(4, new CompletionException(new IOException("other")), 4, 5, 3, 0).checks()))
                .hasSize(1);
        assertThat(failed(new FailFastRun(4, null, 4, 5, 3, 0).checks())).hasSize(2);
        assertThat(failed(new FailFastRun(4, thrown, 4, 5, 2, 0).checks())).hasSize(1);
        assertThat(failed(new FailFastRun(4, thrown, 4, 5, 3, 1).checks())).hasSize(1);
        assertThat(failed(new FailFastRun(4, thrown, 5, 5, 3, 0).checks())).hasSize(1);
        assertThat(failed(new FailFastRun(4, thrown, 4, 6, 3, 0).checks())).hasSize(1);
        Throwable withSuppressed = new CompletionException(new IOException("report 3: connection reset"));
        withSuppressed.addSuppressed(new InterruptedException());
        assertThat(failed(new FailFastRun(4, withSuppressed, 4, 5, 3, 0).checks()))
                .containsExactly("the cancelled calls' InterruptedExceptions were not attached as suppressed");
    }

    @Test
    void budgetChecksFailOnBrokenNumbers() {
        List<Checksum> inOrder = List.of(new Checksum(0, 1), new Checksum(1, 2));
        Throwable refused = new IllegalArgumentException("too heavy");
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder, 100, 100, 0, refused, 0).checks())).isEmpty();
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder, 101, 100, 0, refused, 0).checks()))
                .containsExactly("bytes in memory never exceeded the budget");
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder.reversed(), 100, 100, 0, refused, 0).checks()))
                .containsExactly("mapWeighted returned every checksum in input order");
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder, 100, 99, 0, refused, 0).checks()))
                .containsExactly("every byte of the budget came back");
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder, 100, 100, 1, refused, 0).checks()))
                .containsExactly("every byte of the budget came back");
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder, 100, 100, 0, null, 0).checks()))
                .containsExactly("a file larger than the budget failed the run without being read");
        assertThat(failed(new BudgetPart.Measured(100, 2, inOrder, 100, 100, 0, refused, 1).checks()))
                .containsExactly("a file larger than the budget failed the run without being read");
    }

    @Test
    void gateChecksFailOnBrokenNumbers() {
        assertThat(failed(gate(10, 10, 0, 0, 0, true))).isEmpty();
        assertThat(failed(gate(10, 9, 0, 0, 0, true)))
                .containsExactly("close()'s future completed only once every admitted request had finished");
        assertThat(failed(gate(10, 10, 1, 0, 0, true)))
                .containsExactly("nothing was written to the journal after it was closed, and nothing was lost");
        assertThat(failed(gate(10, 10, 0, 1, 0, true))).containsExactly(
                "every request that arrived after close() was refused, and every request ended one way");
        assertThat(failed(gate(10, 10, 0, 0, 1, true))).containsExactly("the gate ended closed with nobody inside");
        assertThat(failed(gate(10, 10, 0, 0, 0, false))).containsExactly("the gate ended closed with nobody inside");
    }

    /** A gate run of 15 requests, 10 admitted, 5 refused after close(), broken as told. */
    private static List<Check> gate(int admittedWhenDrained, int finishedWhenDrained, int lateWrites,
            int admittedAfterClose, long insideAtEnd, boolean closed) {
        return new GatePart.Measured(15, 10 + admittedAfterClose, 5 - admittedAfterClose, 5, 5 - admittedAfterClose,
                admittedWhenDrained + admittedAfterClose, finishedWhenDrained + admittedAfterClose,
                10 + admittedAfterClose, lateWrites, insideAtEnd, closed, 0).checks();
    }

    @Test
    void leakChecksFailOnBrokenNumbers() {
        List<String> one = List.of("A Permit of semaphore 'connections' holding 1 permits became unreachable");
        assertThat(failed(new LeakPart.Measured(4, 3, true, one, true, 4, 0).checks())).isEmpty();
        assertThat(failed(new LeakPart.Measured(4, 3, true, List.of(), true, 4, 0).checks())).hasSize(2);
        assertThat(failed(new LeakPart.Measured(4, 3, true, one, false, 4, 0).checks())).containsExactly(
                "the dropped Permit was reported once, naming the semaphore and where it was acquired");
        assertThat(failed(new LeakPart.Measured(4, 3, false, one, true, 4, 0).checks()))
                .containsExactly("its permit came back, and the job that needed every connection ran");
        assertThat(failed(new LeakPart.Measured(4, 3, true, one, true, 3, 0).checks()))
                .containsExactly("every permit was back at the end, and the closed Permits were never reported");
    }

    @Test
    void refillChecksFailOnBrokenNumbers() {
        RefillPart.Settings s = new RefillPart.Settings(4, 2, Duration.ofMillis(100), 3, 2, 1);
        long ms = 1_000_000;
        // 4 at once from the burst, then 2 after the first refill (at 100 ms at the earliest).
        List<Spend> fine = List.of(new Spend(0, 2, 1 * ms), new Spend(1, 2, 2 * ms), new Spend(2, 2, 101 * ms));
        assertThat(failed(new RefillPart.Measured(s, 3, fine, 4, 4).checks())).isEmpty();
        List<Spend> early = List.of(new Spend(0, 2, 1 * ms), new Spend(1, 2, 2 * ms), new Spend(2, 2, 99 * ms));
        assertThat(failed(new RefillPart.Measured(s, 3, early, 4, 4).checks()))
                .containsExactly("no credit was spent before it had accrued");
        assertThat(failed(new RefillPart.Measured(s, 3, fine.subList(0, 2), 4, 4).checks()))
                .containsExactly("every call was served as credit arrived");
        assertThat(failed(new RefillPart.Measured(s, 3, fine, 3, 3).checks()))
                .containsExactly("idle, the credit refilled up to its ceiling of 4");
    }

    @Test
    void adaptivePartKeepsEveryPromise() throws Exception {
        AdaptivePart part = new AdaptivePart(new AdaptivePart.Settings(new int[] {20, 8, 30}, Duration.ofMillis(1_500),
                Duration.ofMillis(20), Duration.ofMillis(50), 1_800, 7), terminal);
        assertAllPass(part.run());
        assertThat(printed()).contains("partner capacity", "limit (*) and partner capacity (-)");
    }

    @Test
    void adaptiveChecksFailOnBrokenNumbers() {
        AdaptivePart.Settings s = new AdaptivePart.Settings(new int[] {20, 10}, Duration.ofMillis(1_000),
                Duration.ofMillis(20), Duration.ofMillis(50), 1_000, 1);
        List<AdaptivePart.Sample> followed = new ArrayList<>();
        List<AdaptivePart.Sample> stuck = new ArrayList<>();
        for (int ms = 0; ms < 2_000; ms += 50) {
            int capacity = ms < 1_000 ? 20 : 10;
            followed.add(new AdaptivePart.Sample(ms, capacity, capacity + 2));
            stuck.add(new AdaptivePart.Sample(ms, capacity, 22));
        }
        assertThat(failed(new AdaptivePart.Measured(s, followed, 100, 95, 50, 5, 22, 200, 10, 10, 0).checks()))
                .isEmpty();
        assertThat(failed(new AdaptivePart.Measured(s, stuck, 100, 95, 50, 5, 22, 200, 10, 10, 0).checks()))
                .containsExactly("the limit followed the partner's capacity (0.6x to 2x of it, second half of each phase)");
        assertThat(failed(new AdaptivePart.Measured(s, followed, 100, 80, 50, 5, 22, 200, 10, 10, 0).checks()))
                .containsExactly("most admitted calls succeeded: the partner was not overloaded");
        assertThat(failed(new AdaptivePart.Measured(s, followed, 100, 95, 50, 0, 201, 200, 10, 10, 0).checks()))
                .containsExactly("the limit stayed within 1..maxPermits()");
        assertThat(failed(new AdaptivePart.Measured(s, followed, 100, 95, 50, 5, 22, 200, 9, 10, 0).checks()))
                .containsExactly("every permit came back");
    }

    // ---------------------------------------------------------------- helpers

    private static void assertAllPass(List<Check> checks) {
        assertThat(checks).isNotEmpty().allSatisfy(check -> assertThat(check.passed()).as(check.toString()).isTrue());
    }

    private static List<String> failed(List<Check> checks) {
        List<String> promises = new ArrayList<>();
        checks.stream().filter(c -> !c.passed()).forEach(c -> promises.add(c.promise()));
        return promises;
    }

    private String printed() {
        return output.toString(StandardCharsets.UTF_8);
    }
}
