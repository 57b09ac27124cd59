package dev.sema.examples;

import dev.sema.Semaphore;
import dev.sema.examples.ServicePart.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What a demo run measured, and the checks of what it promised: concurrency and memory stayed within
 * their limits, every permit came back, and every request ended exactly one way.
 *
 * @param requests how many requests arrived
 * @param outcomes how many requests ended each way
 * @param peaks the most requests seen running under each limit, in the order the limits were set
 * @param peakRunning the most requests seen running at any time
 * @param maxPermits the workers' ceiling, which no limit may exceed
 * @param peakMemoryKiB the most KiB seen in use at any time
 * @param memoryBudgetKiB the memory budget
 * @param runningAfterIdle requests running right after {@code awaitIdle()} returned
 * @param workers the worker semaphore once every request had ended
 * @param memory the memory semaphore once every request had ended
 */
record Report(int requests, Map<Outcome, Long> outcomes, List<LimitPeak> peaks, long peakRunning,
        long maxPermits, long peakMemoryKiB, long memoryBudgetKiB, long runningAfterIdle,
        Counts workers, Counts memory) {

    /** The most requests seen running while {@code limit} was in force. */
    record LimitPeak(long limit, long peak) {
    }

    /** A semaphore's counts at one moment. */
    record Counts(long permits, long available, int queued) {
        static Counts of(Semaphore semaphore) {
            return new Counts(semaphore.permits(), semaphore.availablePermits(), semaphore.queueLength());
        }

        boolean allReturned() {
            return available == permits && queued == 0;
        }

        @Override
        public String toString() {
            return format("availablePermits() %,d, permits() %,d, queueLength() %d", available, permits, queued);
        }
    }

    List<Check> checks() {
        return List.of(
                new Check("running requests never exceeded the limit in force",
                        peaks.stream().allMatch(p -> p.peak() <= p.limit()) && peakRunning <= maxPermits,
                        peaks.stream().map(p -> p.peak() + " of " + p.limit()).collect(Collectors.joining(", "))
                                + format("; overall %d of maxPermits() %d", peakRunning, maxPermits)),
                new Check("memory in use never exceeded the budget",
                        peakMemoryKiB <= memoryBudgetKiB,
                        format("peak %,d of %,d KiB", peakMemoryKiB, memoryBudgetKiB)),
                new Check("awaitIdle() returned only when nothing was running",
                        runningAfterIdle == 0,
                        format("%d running when it returned", runningAfterIdle)),
                new Check("every worker permit came back",
                        workers.allReturned(), workers.toString()),
                new Check("every KiB of the memory budget came back",
                        memory.allReturned(), memory.toString()),
                new Check("every request ended exactly one way",
                        ended() == requests && count(Outcome.FAILED) == 0,
                        outcomes.entrySet().stream()
                                .map(e -> format("%,d %s", e.getValue(), e.getKey().label))
                                .collect(Collectors.joining(" + "))
                                + format(" = %,d of %,d requests", ended(), requests)));
    }

    boolean passed() {
        return checks().stream().allMatch(Check::passed);
    }

    long count(Outcome outcome) {
        return outcomes.getOrDefault(outcome, 0L);
    }

    long ended() {
        return outcomes.values().stream().mapToLong(Long::longValue).sum();
    }

    /** The lines printed at the end of the run, before the checks. */
    List<String> summary() {
        List<String> lines = new ArrayList<>();
        lines.add("");
        lines.add(format("How the %,d requests ended", requests));
        for (Outcome outcome : Outcome.values()) {
            lines.add(format("  %-10s %,7d   %s", outcome.label, count(outcome), outcome.meaning));
        }
        return lines;
    }

    private static String format(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }
}
