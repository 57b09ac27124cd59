package dev.sema.testing.history;

import dev.sema.testing.history.Report.PausedHolder;
import dev.sema.testing.history.Report.StaleOverlap;
import dev.sema.testing.history.Timeline.Grants;
import dev.sema.testing.history.Timeline.Request;
import dev.sema.testing.history.Violation.Rule;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Rule 1, the limit: a sweep over the beliefs of each semaphore. A belief counts from its ok to its end
 * (Timeline's T2) except while its process is paused: from its {@code stop} to its {@code cont} plus
 * the grace, when the process can neither act nor yet have heard that its lease ran out. More permits
 * counted than the limit is a violation; more only once paused beliefs are added is a stale overlap,
 * reported with the fencing check of each paused holder.
 */
final class LimitRule {

    private enum State { WITHIN, STALE, OVER }

    /** A stretch of a belief that counts, or that is paused (with the stop and cont of its pause). */
    private record Segment(Request request, long from, long to, boolean paused, long stop, long cont) {
    }

    /**
     * One end of a segment. The sums are compared with the limit only after every point of an instant is
     * applied, so segments [a, b) and [b, c) never overlap. Ends sort before starts so that a belief whose
     * segment ends where its next begins (two pauses whose windows meet once extended by the grace) stays
     * in the live set.
     */
    private record Point(long at, boolean start, Segment segment) {
        static final Comparator<Point> ORDER = Comparator.comparingLong(Point::at).thenComparing(Point::start);
    }

    /** A stretch of time over the limit (OVER) or over it only with paused beliefs (STALE). */
    private static final class Excursion {
        final State state;
        final long start;
        final Request pushedOver;
        long peak;
        final Set<Request> counted = new LinkedHashSet<>();
        final Map<Request, Segment> paused = new LinkedHashMap<>();

        Excursion(State state, long start, Request pushedOver) {
            this.state = state;
            this.start = start;
            this.pushedOver = pushedOver;
        }
    }

    private final Timeline timeline;
    private final long grace;
    private final List<Violation> violations;
    private final List<StaleOverlap> stale;
    private final Set<Request> fencingChecked = new HashSet<>();

    private LimitRule(Timeline timeline, long grace, List<Violation> violations, List<StaleOverlap> stale) {
        this.timeline = timeline;
        this.grace = grace;
        this.violations = violations;
        this.stale = stale;
    }

    /** Checks every declared semaphore, adding to the violations and the stale overlaps. */
    static void check(Timeline timeline, long graceNanos, List<Violation> violations, List<StaleOverlap> stale) {
        LimitRule rule = new LimitRule(timeline, graceNanos, violations, stale);
        timeline.grantsBySemaphore().forEach((semaphore, grants) -> {
            if (timeline.declared.containsKey(semaphore)) {
                rule.sweep(semaphore, timeline.declared.get(semaphore).limit(), grants);
            }
        });
    }

    private void sweep(String semaphore, long limit, List<Request> grants) {
        List<Point> points = new ArrayList<>();
        for (Request r : grants) {
            if (r.permits() > 0) {
                for (Segment s : segments(r)) {
                    points.add(new Point(s.from, true, s));
                    points.add(new Point(s.to, false, s));
                }
            }
        }
        points.sort(Point.ORDER);
        Grants byInvoke = new Grants(grants);
        Map<Request, Segment> liveCounted = new LinkedHashMap<>();
        Map<Request, Segment> livePaused = new LinkedHashMap<>();
        long counted = 0;
        long paused = 0;
        State state = State.WITHIN;
        Excursion excursion = null;
        for (int i = 0; i < points.size(); ) {
            long t = points.get(i).at;
            Request pushed = null;
            for (; i < points.size() && points.get(i).at == t; i++) {
                Point p = points.get(i);
                Segment s = p.segment;
                long permits = p.start ? s.request.permits() : -s.request.permits();
                Map<Request, Segment> live = s.paused ? livePaused : liveCounted;
                if (p.start) {
                    live.put(s.request, s);
                    pushed = s.request;
                } else {
                    live.remove(s.request);
                }
                if (s.paused) {
                    paused += permits;
                } else {
                    counted += permits;
                }
            }
            State now = counted > limit ? State.OVER : counted + paused > limit ? State.STALE : State.WITHIN;
            if (now != state) {
                if (excursion != null) {
                    close(semaphore, limit, excursion, t, byInvoke);
                }
                excursion = now == State.WITHIN ? null : new Excursion(now, t, pushed);
                state = now;
            }
            if (excursion != null) {
                excursion.peak = Math.max(excursion.peak, now == State.OVER ? counted : counted + paused);
                excursion.counted.addAll(liveCounted.keySet());
                livePaused.forEach(excursion.paused::putIfAbsent);
            }
        }
    }

    /** A belief cut by the pauses of its run, each extended by the grace. */
    private List<Segment> segments(Request r) {
        long from = r.okAt();
        long to = Math.min(r.beliefEnd, timeline.last()); // a belief open at the end counts to the end
        List<Segment> out = new ArrayList<>();
        if (to <= from) {
            return out;
        }
        long cursor = from;
        for (long[] pause : r.run.pauses) { // in time order, not overlapping (Timeline's T4)
            long stop = pause[0];
            long until = pause[1] == Timeline.NEVER ? Timeline.NEVER : saturatedAdd(pause[1], grace);
            if (until <= cursor || stop >= to || until <= stop) { // the last: stop and cont at once, no grace
                continue;
            }
            if (stop > cursor) {
                out.add(new Segment(r, cursor, stop, false, 0, 0));
            }
            long pausedTo = Math.min(to, until);
            out.add(new Segment(r, Math.max(cursor, stop), pausedTo, true, stop, pause[1]));
            cursor = pausedTo;
        }
        if (cursor < to) {
            out.add(new Segment(r, cursor, to, false, 0, 0));
        }
        return out;
    }

    private static long saturatedAdd(long a, long b) {
        long sum = a + b;
        return ((a ^ sum) & (b ^ sum)) < 0 ? Timeline.NEVER : sum;
    }

    private void close(String semaphore, long limit, Excursion e, long end, Grants grants) {
        if (e.state == State.OVER) {
            violations.add(Violation.of(Rule.LIMIT, semaphore, e.pushedOver.run.process, e.start,
                    semaphore + " (limit " + limit + "): " + e.peak + " permits believed held for "
                    + Times.length(end - e.start) + " from " + timeline.at(e.start) + " to " + timeline.at(end)
                    + ", by " + describe(e.counted)
                    + (e.paused.isEmpty() ? "" : "; besides paused: " + describe(e.paused.keySet()))));
            return;
        }
        List<PausedHolder> holders = new ArrayList<>();
        e.paused.forEach((r, s) -> holders.add(fencing(semaphore, r, s, e.start, grants)));
        stale.add(new StaleOverlap(semaphore, e.start, end, e.peak, limit, holders));
    }

    /**
     * The fencing check of a paused holder: every grant on the semaphore invoked after the holder's ok
     * must have a higher token, so a resource that checks tokens refuses the holder once it resumes. A
     * grant invoked before that ok is left out: it was concurrent with the holder's and may have been
     * granted first, with a lower token, rightly.
     */
    private PausedHolder fencing(String semaphore, Request holder, Segment pause, long at, Grants grants) {
        Request lowest = grants.lowestInvokedAfter(holder.okAt());
        boolean fenced = lowest == null || lowest.token() > holder.token();
        if (!fenced && fencingChecked.add(holder)) {
            violations.add(Violation.of(Rule.STALE_FENCING, semaphore, holder.run.process, at,
                    holder.name() + " (token " + holder.token() + ", " + holder.permits() + " permits of "
                    + semaphore + ") was paused from " + timeline.at(pause.stop) + " to "
                    + timeline.at(pause.cont) + " and believed it held its permits while they were held again, "
                    + "but " + lowest.name() + ", invoked at " + timeline.at(lowest.invokedAt()) + " after that grant's ok at "
                    + timeline.at(holder.okAt()) + ", got token " + lowest.token()
                    + ": a resource that checks tokens would not refuse the paused holder"));
        }
        return new PausedHolder(holder.run.process, holder.invoke.req(), holder.permits(), holder.token(),
                pause.stop, pause.cont, grants.countInvokedAfter(holder.okAt()),
                lowest == null ? Long.MAX_VALUE : lowest.token(), fenced);
    }

    private String describe(Set<Request> requests) {
        return requests.stream()
                .map(r -> r.name() + " (" + r.permits() + ", ok " + timeline.at(r.okAt()) + ")")
                .collect(Collectors.joining(", "));
    }
}
