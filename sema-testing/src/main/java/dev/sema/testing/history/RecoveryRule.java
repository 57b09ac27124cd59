package dev.sema.testing.history;

import dev.sema.testing.history.Event.Declare;
import dev.sema.testing.history.Event.Final;
import dev.sema.testing.history.Event.Sample;
import dev.sema.testing.history.Report.Stretch;
import dev.sema.testing.history.Timeline.FaultSpan;
import dev.sema.testing.history.Timeline.Request;
import dev.sema.testing.history.Violation.Rule;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Rule 5, recovery: after the run every semaphore is empty ({@code final} shows used == 0, queued == 0),
 * and after the last fault ended every permit is back within a lease.
 *
 * <p>A sample's stranded permits are those Redis counts but no live process believes it holds: its
 * {@code used} minus the permits of the beliefs (paused ones included) open at its instant. A stretch is
 * a run of consecutive samples with stranded permits, from the first of them to the last (its true end
 * lies between that and the next sample, so the measure never overstates it). A grant reaches Redis a few
 * ms before its {@code ok} line and a release a few ms after its {@code release} line, so a single sample
 * may show stranded permits that are none: stretches shorter than the noise threshold are dropped.
 * A stretch is measured past a fault from the end of the last fault that ended before the stretch did
 * (or from the stretch's start, if it began later); one that lasts more than its semaphore's lease plus
 * the slack past the end of the run's last fault is a violation.
 */
final class RecoveryRule {

    /** The longest stretch, and the longest measured past the end of a fault. */
    record Result(Optional<Stretch> longest, Optional<Stretch> longestAfterFault) {
    }

    private RecoveryRule() {
    }

    static Result check(Timeline timeline, long slack, long noise, List<Violation> violations, List<String> notes) {
        for (Final f : timeline.finals) {
            if (f.used() != 0 || f.queued() != 0) {
                violations.add(Violation.of(Rule.FINAL_STATE, f.semaphore(), null, f.nanos(),
                        f.semaphore() + " after the run: used " + f.used() + ", queued " + f.queued()
                        + " (both must be 0)"));
            }
        }
        if (!timeline.finals.isEmpty()) {
            for (String s : timeline.declared.keySet()) {
                if (timeline.finals.stream().noneMatch(f -> f.semaphore().equals(s))) {
                    notes.add(s + " has no final counts: its state after the run is unchecked");
                }
            }
        }
        boolean faultOpen = timeline.faults.stream().anyMatch(f -> f.end() == Timeline.NEVER);
        FaultSpan lastFault = timeline.faults.stream().filter(f -> f.end() != Timeline.NEVER)
                .max(Comparator.comparingLong(FaultSpan::end)).orElse(null);
        Map<String, List<Request>> grants = timeline.grantsBySemaphore();
        List<Stretch> stretches = new ArrayList<>();
        for (Map.Entry<String, Declare> d : timeline.declared.entrySet()) {
            String s = d.getKey();
            for (Stretch st : stretches(timeline, s, grants.getOrDefault(s, List.of()), noise)) {
                stretches.add(st);
                long from = lastFault == null ? st.start() : Math.max(st.start(), lastFault.end());
                long allowed = d.getValue().leaseMillis() * 1_000_000 + slack;
                if (!faultOpen && st.end() - from > allowed) {
                    violations.add(Violation.of(Rule.RECOVERY, s, null, st.end(), s + ": up to " + st.peak()
                            + " permits stranded (counted by Redis, believed held by no live process) from "
                            + timeline.at(st.start()) + " to at least " + timeline.at(st.end()) + ", "
                            + Times.length(st.end() - from) + (lastFault == null ? " long, with no fault in the run"
                            : " past the end of the last fault (" + lastFault.name() + ", ended "
                            + timeline.at(lastFault.end()) + ")") + ": more than the lease "
                            + Times.length(d.getValue().leaseMillis() * 1_000_000) + " + slack " + Times.length(slack)));
                }
            }
        }
        Optional<Stretch> longest = stretches.stream().max(Comparator.comparingLong(st -> st.end() - st.start()));
        Optional<Stretch> afterFault = stretches.stream().map(st -> afterFault(timeline, st)).flatMap(Optional::stream)
                .max(Comparator.comparingLong(st -> st.end() - st.measuredFrom()));
        return new Result(longest, afterFault);
    }

    /** The stretches of a semaphore at least {@code noise} long, in time order. */
    private static List<Stretch> stretches(Timeline timeline, String semaphore, List<Request> grants, long noise) {
        List<long[]> points = new ArrayList<>(); // {at, permits}: +permits at ok, -permits at the belief's end
        for (Request r : grants) {
            if (r.permits() > 0) {
                points.add(new long[] {r.okAt(), r.permits()});
                if (r.beliefEnd != Timeline.NEVER) {
                    points.add(new long[] {r.beliefEnd, -r.permits()});
                }
            }
        }
        points.sort(Comparator.comparingLong(p -> p[0]));
        List<Stretch> out = new ArrayList<>();
        long believed = 0;
        int next = 0;
        long start = 0;
        long end = 0;
        long peak = 0;
        for (Sample s : timeline.samples) {
            if (!s.semaphore().equals(semaphore)) {
                continue;
            }
            while (next < points.size() && points.get(next)[0] <= s.nanos()) { // a belief from ok (included) to end (excluded)
                believed += points.get(next++)[1];
            }
            long stranded = s.used() - believed;
            if (stranded > 0) {
                if (peak == 0) {
                    start = s.nanos();
                }
                end = s.nanos();
                peak = Math.max(peak, stranded);
            } else if (peak > 0) {
                keep(out, semaphore, start, end, peak, noise);
                peak = 0;
            }
        }
        if (peak > 0) {
            keep(out, semaphore, start, end, peak, noise);
        }
        return out;
    }

    private static void keep(List<Stretch> out, String semaphore, long start, long end, long peak, long noise) {
        if (end - start >= noise) {
            out.add(new Stretch(semaphore, start, end, peak, null, start));
        }
    }

    /**
     * The stretch measured from the end of the last fault that ended before it did, if any, and if no fault
     * was still going on when it ended: a stretch that ends during a fault is that fault's doing, not a
     * permit left unusable after one.
     */
    private static Optional<Stretch> afterFault(Timeline timeline, Stretch st) {
        if (timeline.faults.stream().anyMatch(f -> f.begin() <= st.end() && st.end() < f.end())) {
            return Optional.empty();
        }
        return timeline.faults.stream().filter(f -> f.end() <= st.end())
                .max(Comparator.comparingLong(FaultSpan::end))
                .map(f -> new Stretch(st.semaphore(), st.start(), st.end(), st.peak(),
                        f.name() + " (ended " + timeline.at(f.end()) + ")", Math.max(st.start(), f.end())));
    }
}
