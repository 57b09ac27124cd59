package dev.sema.testing.history;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What the {@link Checker} found in a history: a summary of the run and the violations. Instants are
 * {@code System.nanoTime()} values; {@link #toText()} writes them relative to the first event.
 *
 * @param start           the first event's instant
 * @param end             the last event's instant
 * @param processes       how many processes appear (by name)
 * @param runs            how many runs they had (a process killed and started again has two)
 * @param semaphores      how many semaphores were declared
 * @param requests        how many requests were invoked
 * @param grants          how many of them were granted
 * @param excused         how many had no outcome because their process was killed
 * @param failsByOutcome  failed requests by outcome
 * @param faultsByKind    faults begun, by kind
 * @param pauseWindows    how many times a process was stopped
 * @param longestPause    the longest of those pauses, from stop to cont (or to the end of the run)
 * @param stale           overlaps over the limit that exist only because of paused holders
 * @param longestStranded the longest stretch of permits counted by Redis and believed held by nobody
 * @param longestStrandedAfterFault the stretch that lasted longest past the end of a fault
 * @param violations      every rule broken, in time order
 * @param notes           remarks about the input that are not violations
 * @param options         the parameters of the check
 */
public record Report(long start, long end, int processes, int runs, int semaphores, long requests, long grants,
                     long excused, Map<String, Long> failsByOutcome, Map<String, Long> faultsByKind,
                     int pauseWindows, Duration longestPause, List<StaleOverlap> stale,
                     Optional<Stretch> longestStranded, Optional<Stretch> longestStrandedAfterFault,
                     List<Violation> violations, List<String> notes, Checker.Options options) {

    /** Keeps the collections immutable. */
    public Report {
        failsByOutcome = Map.copyOf(failsByOutcome);
        faultsByKind = Map.copyOf(faultsByKind);
        stale = List.copyOf(stale);
        violations = List.copyOf(violations);
        notes = List.copyOf(notes);
    }

    /**
     * Returns whether the history broke no rule.
     *
     * @return {@code violations().isEmpty()}
     */
    public boolean passed() {
        return violations.isEmpty();
    }

    /**
     * Returns the violations of one rule.
     *
     * @param rule the rule
     * @return its violations, in time order
     */
    public List<Violation> violations(Violation.Rule rule) {
        return violations.stream().filter(v -> v.rule() == rule).toList();
    }

    /**
     * An overlap over the limit that exists only because paused holders still believe they hold permits
     * that were handed on: not a violation as long as each of them is fenced.
     *
     * @param semaphore the semaphore
     * @param start     when the overlap began
     * @param end       when it ended
     * @param held      the most permits believed held during it, paused holders included
     * @param limit     the semaphore's limit
     * @param holders   the paused holders involved
     */
    public record StaleOverlap(String semaphore, long start, long end, long held, long limit,
                               List<PausedHolder> holders) {

        /** Keeps the holders immutable. */
        public StaleOverlap {
            holders = List.copyOf(holders);
        }

        /**
         * Returns how long the overlap lasted.
         *
         * @return {@code end - start}
         */
        public Duration length() {
            return Duration.ofNanos(end - start);
        }
    }

    /**
     * A paused holder of a stale overlap and its fencing check.
     *
     * @param process          its process
     * @param req              its request
     * @param permits          the permits it believed it held
     * @param token            its fencing token
     * @param stopped          when its process was stopped
     * @param resumed          when it was continued, or {@code Long.MAX_VALUE} if never
     * @param laterGrants      how many grants of the semaphore were invoked after its ok
     * @param lowestLaterToken the lowest token among those, or {@code Long.MAX_VALUE} if none
     * @param fenced           whether every one of them has a higher token than the holder's
     */
    public record PausedHolder(String process, long req, long permits, long token, long stopped, long resumed,
                               int laterGrants, long lowestLaterToken, boolean fenced) {
    }

    /**
     * A stretch of samples with stranded permits: counted by Redis, believed held by no live process.
     *
     * @param semaphore    the semaphore
     * @param start        the first sample with stranded permits
     * @param end          the last one in a row (the permits were back by the next sample)
     * @param peak         the most permits stranded at a sample
     * @param fault        the fault it is measured from, or null
     * @param measuredFrom the end of that fault, or {@code start} if the stretch began later or has no fault
     */
    public record Stretch(String semaphore, long start, long end, long peak, String fault, long measuredFrom) {

        /**
         * Returns how long the stretch lasted.
         *
         * @return {@code end - start}
         */
        public Duration length() {
            return Duration.ofNanos(end - start);
        }

        /**
         * Returns how long the stretch lasted past the end of its fault.
         *
         * @return {@code end - measuredFrom}
         */
        public Duration pastFault() {
            return Duration.ofNanos(end - measuredFrom);
        }
    }

    /**
     * The stale overlaps, one line per paused holder (a pause usually makes many overlaps, one each time the
     * others' grants change): how many, how long in all, over the limit by how much, and whether it is fenced.
     */
    private void staleText(StringBuilder b) {
        Map<String, List<StaleOverlap>> byHolder = new java.util.LinkedHashMap<>();
        Map<String, PausedHolder> holders = new java.util.LinkedHashMap<>();
        for (StaleOverlap s : stale) {
            for (PausedHolder h : s.holders()) {
                String key = s.semaphore() + " " + h.process() + " req=" + h.req();
                byHolder.computeIfAbsent(key, k -> new java.util.ArrayList<>()).add(s);
                holders.putIfAbsent(key, h);
            }
        }
        long unfenced = holders.values().stream().filter(h -> !h.fenced()).count();
        b.append("stale after a pause: ").append(stale.size()).append(" overlaps");
        if (!stale.isEmpty()) {
            b.append(", of ").append(holders.size()).append(" paused holders, ")
                    .append(unfenced == 0 ? "all fenced" : unfenced + " NOT FENCED");
        }
        b.append('\n');
        for (Map.Entry<String, List<StaleOverlap>> e : byHolder.entrySet()) {
            PausedHolder h = holders.get(e.getKey());
            List<StaleOverlap> overlaps = e.getValue();
            long total = overlaps.stream().mapToLong(o -> o.end() - o.start()).sum();
            StaleOverlap worst = overlaps.stream().max(java.util.Comparator.comparingLong(o -> o.held() - o.limit()))
                    .orElseThrow();
            b.append("  ").append(e.getKey()).append(" (").append(h.permits()).append(" permits, token ")
                    .append(h.token()).append("), stopped ").append(at(h.stopped())).append(", continued ")
                    .append(at(h.resumed())).append(": ").append(overlaps.size()).append(" overlaps from ")
                    .append(at(overlaps.get(0).start())).append(", ").append(Times.length(total))
                    .append(" in all, up to ").append(worst.held()).append(" believed held against a limit of ")
                    .append(worst.limit()).append("; ").append(h.fenced() ? "fenced" : "NOT FENCED").append(" (")
                    .append(h.laterGrants()).append(" grants invoked after its ok").append(h.laterGrants() > 0
                            ? ", lowest token " + h.lowestLaterToken() : "").append(")\n");
        }
    }

    /**
     * Writes the report as text: the summary, the stale overlaps, then each violation with its context.
     *
     * @return the text, ending in a verdict line
     */
    public String toText() {
        StringBuilder b = new StringBuilder();
        b.append("history: ").append(Times.length(end - start)).append(", ").append(processes).append(" processes (")
                .append(runs).append(" runs), ").append(semaphores).append(" semaphores\n");
        b.append("requests: ").append(requests).append(", granted ").append(grants).append(", failed ")
                .append(failsByOutcome.values().stream().mapToLong(Long::longValue).sum())
                .append(counts(failsByOutcome)).append(", excused by a kill ").append(excused).append('\n');
        b.append("faults: ").append(faultsByKind.values().stream().mapToLong(Long::longValue).sum())
                .append(counts(faultsByKind)).append('\n');
        b.append("pauses: ").append(pauseWindows).append(pauseWindows > 0
                ? ", longest " + Times.length(longestPause.toNanos()) : "").append('\n');
        staleText(b);
        b.append("stranded: ").append(longestStranded.map(s -> "longest " + stretch(s)).orElse("none")).append('\n');
        b.append("stranded after a fault: ").append(longestStrandedAfterFault.map(s -> "longest "
                + Times.length(s.pastFault().toNanos()) + " past the end of " + s.fault() + ", " + stretch(s))
                .orElse("none")).append('\n');
        for (String n : notes) {
            b.append("note: ").append(n).append('\n');
        }
        b.append("violations: ").append(violations.size()).append('\n');
        int i = 0;
        for (Violation v : violations) {
            i++;
            b.append("\nVIOLATION ").append(i).append(" [").append(v.rule()).append("] at ").append(at(v.nanos()))
                    .append(v.semaphore() != null ? " sem=" + v.semaphore() : "")
                    .append(v.process() != null ? " process=" + v.process() : "").append('\n');
            b.append("  ").append(v.message()).append('\n');
            boolean marked = false;
            for (Event e : v.context()) {
                if (!marked && e.nanos() > v.nanos()) {
                    b.append("  ---- ").append(at(v.nanos())).append(" ----\n");
                    marked = true;
                }
                b.append("  ").append(at(e.nanos())).append("  ").append(HistoryFormat.format(e)).append('\n');
            }
            if (!marked && !v.context().isEmpty()) {
                b.append("  ---- ").append(at(v.nanos())).append(" ----\n");
            }
        }
        b.append(passed() ? "\nPASSED\n" : "\nFAILED: " + violations.size() + " violations\n");
        return b.toString();
    }

    private String at(long nanos) {
        return Times.at(nanos, start);
    }

    private String stretch(Stretch s) {
        return Times.length(s.length().toNanos()) + " (" + s.semaphore() + ", up to " + s.peak() + " permits, "
                + at(s.start()) + " to " + at(s.end()) + ")";
    }

    private static String counts(Map<String, Long> counts) {
        return counts.isEmpty() ? "" : counts.entrySet().stream().sorted(Map.Entry.comparingByKey())
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(", ", " (", ")"));
    }
}
