package dev.sema.testing.history;

import dev.sema.testing.history.Event.Declare;
import dev.sema.testing.history.Event.Fail;
import dev.sema.testing.history.Event.Fault;
import dev.sema.testing.history.Event.Final;
import dev.sema.testing.history.Event.Invoke;
import dev.sema.testing.history.Event.Lifecycle;
import dev.sema.testing.history.Event.Lost;
import dev.sema.testing.history.Event.Ok;
import dev.sema.testing.history.Event.Release;
import dev.sema.testing.history.Event.Sample;
import dev.sema.testing.history.Violation.Rule;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A history read into runs of processes, requests with their outcomes and beliefs, faults and samples;
 * reading it checks rules 3 (one outcome) and 4 (no hung process) and the declarations, since those are
 * about the sequence of each process's events. The other rules work on what this builds.
 */
final class Timeline {

    /*
     * Implementation overview
     *
     * One pass over the events in time order. Each process has a current Run: it begins at a `start`
     * line (or at the process's first event if it wrote none) and ends at its `exit` or `kill`, or when the
     * process starts again. Request ids are looked up in the current run only, so a process started
     * again may reuse its ids.
     *
     * Invariants, true after build():
     *  T1: a Request has at most one outcome (ok or fail): a second is reported and ignored.
     *  T2: a Request's belief is [ok, beliefEnd) with beliefEnd = the first of its lost or release and its
     *      run's end, or Long.MAX_VALUE (held to the end of the history); no belief without ok.
     *  T3: an event a process writes after its run ended is reported (AFTER_END) and ignored, so nothing
     *      extends a belief past a kill or an exit.
     *  T4: a Run's pauses are [stop, cont) in time order, not overlapping, and end at the run's end at the
     *      latest (a process stopped and never continued is paused to its end).
     *  T5: semaphoreOf[i] names the semaphore event i is about (declaration, request, sample), or is null.
     */

    /** No time: a pause not begun, a run or belief not ended. */
    static final long NEVER = Long.MAX_VALUE;

    /** The life of a process from one start to its end. */
    static final class Run {
        final String process;
        /** Its start line, or null if the process wrote none before its first event. */
        final Lifecycle start;
        long end = NEVER;
        /** EXIT, KILL, START (started again without either), or null while it has not ended. */
        Lifecycle.Kind endedBy;
        long stoppedAt = NEVER;
        /** Pause windows, {start, end} pairs (T4). */
        final List<long[]> pauses = new ArrayList<>();
        final Map<Long, Request> requests = new HashMap<>();

        Run(String process, Lifecycle start) {
            this.process = process;
            this.start = start;
        }

        boolean ended() {
            return endedBy != null;
        }

        void end(long at, Lifecycle.Kind by) {
            if (stoppedAt != NEVER) {
                pauses.add(new long[] {stoppedAt, at});
                stoppedAt = NEVER;
            }
            end = at;
            endedBy = by;
        }
    }

    /** A request and what became of it. */
    static final class Request {
        final Run run;
        final Invoke invoke;
        Ok ok;
        Fail fail;
        boolean released;
        /** The first lost or release, then (in build()) the run's end if earlier: see T2. */
        long beliefEnd = NEVER;

        Request(Run run, Invoke invoke) {
            this.run = run;
            this.invoke = invoke;
        }

        String semaphore() {
            return invoke.semaphore();
        }

        long permits() {
            return invoke.permits();
        }

        long token() {
            return ok.token();
        }

        long invokedAt() {
            return invoke.nanos();
        }

        long okAt() {
            return ok.nanos();
        }

        String name() {
            return invoke.process() + " req=" + invoke.req();
        }
    }

    /** A fault from its begin to its end ({@link #NEVER} if the history has no end for it). */
    record FaultSpan(String kind, String target, long begin, long end) {
        String name() {
            return kind + " " + target;
        }
    }

    /** A semaphore's grants, by invoke time, for "the lowest token of a grant that started after t". */
    static final class Grants {
        final List<Request> byInvoke;
        /** lowestFrom[i]: the grant of lowest token among byInvoke[i..]. */
        private final Request[] lowestFrom;

        Grants(List<Request> grants) {
            byInvoke = new ArrayList<>(grants);
            byInvoke.sort(Comparator.comparingLong(Request::invokedAt));
            lowestFrom = new Request[byInvoke.size()];
            for (int i = byInvoke.size() - 1; i >= 0; i--) {
                Request r = byInvoke.get(i);
                lowestFrom[i] = i + 1 < lowestFrom.length && lowestFrom[i + 1].token() < r.token() ? lowestFrom[i + 1] : r;
            }
        }

        /** Returns the grant of lowest token among those invoked strictly after t, or null. */
        Request lowestInvokedAfter(long t) {
            int first = firstInvokedAfter(t);
            return first < lowestFrom.length ? lowestFrom[first] : null;
        }

        /** Returns how many grants were invoked strictly after t. */
        int countInvokedAfter(long t) {
            return byInvoke.size() - firstInvokedAfter(t);
        }

        private int firstInvokedAfter(long t) {
            int lo = 0;
            int hi = byInvoke.size();
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (byInvoke.get(mid).invokedAt() <= t) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
    }

    final History history;
    final String[] semaphoreOf;
    final Map<String, Declare> declared = new LinkedHashMap<>();
    final Set<String> used = new LinkedHashSet<>();
    final List<Run> runs = new ArrayList<>();
    final List<Request> requests = new ArrayList<>();
    final List<FaultSpan> faults = new ArrayList<>();
    final List<Sample> samples = new ArrayList<>();
    final List<Final> finals = new ArrayList<>();
    final List<Violation> violations = new ArrayList<>();
    final List<String> notes = new ArrayList<>();
    /** Requests of a killed run that had no outcome: excused. */
    long excused;

    private final Map<String, Run> current = new HashMap<>();
    private final Map<String, Deque<Fault>> openFaults = new LinkedHashMap<>();

    private Timeline(History history) {
        this.history = history;
        this.semaphoreOf = new String[history.events().size()];
    }

    /** Reads a history; the rules broken on the way are in {@link #violations}. */
    static Timeline build(History history) {
        Timeline t = new Timeline(history);
        List<Event> events = history.events();
        for (int i = 0; i < events.size(); i++) {
            t.semaphoreOf[i] = t.read(events.get(i));
        }
        t.finish();
        return t;
    }

    long first() {
        return history.events().isEmpty() ? 0 : history.events().getFirst().nanos();
    }

    /** An instant as reports write it, relative to the first event. */
    String at(long nanos) {
        return Times.at(nanos, first());
    }

    long last() {
        return history.events().isEmpty() ? 0 : history.events().getLast().nanos();
    }

    /** Applies one event; returns the semaphore it is about, or null (T5). */
    private String read(Event event) {
        return switch (event) {
            case Declare d -> declare(d);
            case Invoke v -> invoke(v);
            case Ok o -> outcome(o, o.req(), o.nanos());
            case Fail f -> outcome(f, f.req(), f.nanos());
            case Lost l -> end(l, l.req(), false);
            case Release r -> end(r, r.req(), true);
            case Lifecycle l -> {
                lifecycle(l);
                yield null;
            }
            case Fault f -> {
                fault(f);
                yield null;
            }
            case Sample s -> {
                samples.add(s);
                used.add(s.semaphore());
                yield s.semaphore();
            }
            case Final f -> {
                finals.add(f);
                used.add(f.semaphore());
                yield f.semaphore();
            }
        };
    }

    private String declare(Declare d) {
        Declare first = declared.putIfAbsent(d.semaphore(), d);
        if (first != null && (first.limit() != d.limit() || first.leaseMillis() != d.leaseMillis())) {
            violations.add(Violation.of(Rule.DECLARATION, d.semaphore(), d.process(), d.nanos(),
                    d.semaphore() + " declared by " + d.process() + " with limit " + d.limit() + ", lease "
                    + d.leaseMillis() + " ms, but by " + first.process() + " with limit " + first.limit()
                    + ", lease " + first.leaseMillis() + " ms: the first is used"));
        }
        return d.semaphore();
    }

    /** The process's current run, begun implicitly if it has none. */
    private Run run(String process) {
        return current.computeIfAbsent(process, p -> {
            Run r = new Run(p, null);
            runs.add(r);
            return r;
        });
    }

    /** Whether an event of a process about its requests comes after its run ended (T3): reported. */
    private boolean afterEnd(Run run, Event event) {
        if (!run.ended()) {
            return false;
        }
        violations.add(Violation.of(Rule.AFTER_END, null, run.process, event.nanos(),
                run.process + " wrote '" + HistoryFormat.format(event) + "' after its " + run.endedBy.word()
                + " at " + at(run.end) + ": ignored"));
        return true;
    }

    private String invoke(Invoke v) {
        used.add(v.semaphore());
        Run run = run(v.process());
        if (afterEnd(run, v)) {
            return v.semaphore();
        }
        Request r = new Request(run, v);
        if (run.requests.putIfAbsent(v.req(), r) != null) {
            violations.add(Violation.of(Rule.UNKNOWN_REQUEST, v.semaphore(), v.process(), v.nanos(),
                    v.process() + " invoked req=" + v.req() + " twice in one run: the second is ignored"));
            return v.semaphore();
        }
        requests.add(r);
        return v.semaphore();
    }

    /** The request an event names, or null after reporting it unknown. */
    private Request request(Event event, long req) {
        Run run = run(event.process());
        if (afterEnd(run, event)) {
            return null;
        }
        Request r = run.requests.get(req);
        if (r == null) {
            violations.add(Violation.of(Rule.UNKNOWN_REQUEST, null, event.process(), event.nanos(),
                    event.process() + " wrote '" + HistoryFormat.format(event) + "' for a request it never invoked"));
        }
        return r;
    }

    private String outcome(Event event, long req, long at) {
        Request r = request(event, req);
        if (r == null) {
            return null;
        }
        if (r.ok != null || r.fail != null) { // keeps T1
            Event first = r.ok != null ? r.ok : r.fail;
            violations.add(Violation.of(Rule.DOUBLE_OUTCOME, r.semaphore(), r.run.process, at,
                    r.name() + " has a second outcome '" + HistoryFormat.format(event) + "' after '"
                    + HistoryFormat.format(first) + "': the second is ignored"));
        } else if (event instanceof Ok o) {
            r.ok = o;
        } else {
            r.fail = (Fail) event;
        }
        return r.semaphore();
    }

    private String end(Event event, long req, boolean release) {
        Request r = request(event, req);
        if (r == null) {
            return null;
        }
        if (r.ok == null) {
            violations.add(Violation.of(Rule.END_BEFORE_OK, r.semaphore(), r.run.process, event.nanos(),
                    r.name() + (release ? " released" : " lost") + " permits it was not granted"
                    + (r.fail != null ? " (it failed: " + r.fail.outcome().word() + ")" : " (yet)")));
            return r.semaphore();
        }
        if (release) {
            if (r.released) {
                violations.add(Violation.of(Rule.DOUBLE_RELEASE, r.semaphore(), r.run.process, event.nanos(),
                        r.name() + " released its permits twice"));
            }
            r.released = true;
        }
        if (r.beliefEnd == NEVER) { // T2: the first of lost and release ends the belief
            r.beliefEnd = event.nanos();
        }
        return r.semaphore();
    }

    private void lifecycle(Lifecycle l) {
        String p = l.process();
        long at = l.nanos();
        switch (l.kind()) {
            case START -> {
                Run previous = current.get(p);
                if (previous != null && !previous.ended()) {
                    previous.end(at, Lifecycle.Kind.START);
                }
                Run r = new Run(p, l);
                runs.add(r);
                current.put(p, r);
            }
            case EXIT -> {
                Run r = run(p);
                if (!afterEnd(r, l)) {
                    r.end(at, Lifecycle.Kind.EXIT);
                }
            }
            case KILL -> {
                Run r = run(p);
                if (r.ended()) {
                    notes.add(p + " killed at " + at(at) + " after its " + r.endedBy.word() + " at " + at(r.end)
                            + ": ignored");
                } else {
                    r.end(at, Lifecycle.Kind.KILL);
                }
            }
            case STOP -> {
                Run r = run(p);
                if (r.ended() || r.stoppedAt != NEVER) {
                    notes.add(p + " stopped at " + at(at) + (r.ended() ? " after its end" : " while stopped") + ": ignored");
                } else {
                    r.stoppedAt = at;
                }
            }
            case CONT -> {
                Run r = run(p);
                if (r.stoppedAt == NEVER) {
                    notes.add(p + " continued at " + at(at) + " while not stopped: ignored");
                } else {
                    r.pauses.add(new long[] {r.stoppedAt, at}); // keeps T4
                    r.stoppedAt = NEVER;
                }
            }
        }
    }

    private void fault(Fault f) {
        Deque<Fault> open = openFaults.computeIfAbsent(f.process() + " " + f.kind() + " " + f.target(),
                k -> new ArrayDeque<>());
        if (f.phase() == Fault.Phase.BEGIN) {
            open.addLast(f);
        } else if (open.isEmpty()) {
            notes.add("fault " + f.kind() + " " + f.target() + " ended at " + at(f.nanos()) + " without a begin: ignored");
        } else {
            Fault begin = open.removeFirst();
            faults.add(new FaultSpan(f.kind(), f.target(), begin.nanos(), f.nanos()));
        }
    }

    private void finish() {
        for (Deque<Fault> open : openFaults.values()) {
            for (Fault f : open) {
                notes.add("fault " + f.kind() + " " + f.target() + " began at " + at(f.nanos()) + " and never ended");
                faults.add(new FaultSpan(f.kind(), f.target(), f.nanos(), NEVER));
            }
        }
        faults.sort(Comparator.comparingLong(FaultSpan::begin));
        for (Run r : runs) {
            if (r.stoppedAt != NEVER) { // T4: paused to the end
                r.pauses.add(new long[] {r.stoppedAt, NEVER});
                r.stoppedAt = NEVER;
            }
            if (r.start != null && r.endedBy != Lifecycle.Kind.EXIT && r.endedBy != Lifecycle.Kind.KILL) {
                violations.add(Violation.of(Rule.HUNG_PROCESS, null, r.process, r.ended() ? r.end : last(),
                        r.process + " started at " + at(r.start.nanos()) + " but " + (r.ended()
                                ? "started again at " + at(r.end) + " without an exit or a kill: it crashed on its own"
                                : "neither exited nor was killed by the end of the history: it hung")));
            }
        }
        for (Request r : requests) {
            if (r.ok != null) {
                r.beliefEnd = Math.min(r.beliefEnd, r.run.end); // keeps T2
            } else if (r.fail == null) {
                missingOutcome(r);
            }
        }
        for (String s : used) {
            if (!declared.containsKey(s)) {
                violations.add(Violation.of(Rule.DECLARATION, s, null, first(),
                        s + " is used but never declared: its limit and lease are unknown, its rules unchecked"));
            }
        }
    }

    private void missingOutcome(Request r) {
        Run run = r.run;
        if (run.endedBy == Lifecycle.Kind.KILL) {
            excused++;
            return;
        }
        String why;
        if (run.endedBy == Lifecycle.Kind.EXIT) {
            why = run.process + " exited at " + at(run.end) + " without it";
        } else if (run.endedBy == Lifecycle.Kind.START) {
            why = run.process + " started again at " + at(run.end) + " without an exit or a kill";
        } else {
            why = "the history ends while " + run.process + " runs: the request hung";
        }
        violations.add(Violation.of(Rule.MISSING_OUTCOME, r.semaphore(), run.process, r.invokedAt(),
                r.name() + " (" + r.invoke.kind() + " of " + r.permits() + " on " + r.semaphore()
                + ") has no outcome: " + why));
    }

    /** The grants (requests with ok) of each semaphore, in the order of their invokes. */
    Map<String, List<Request>> grantsBySemaphore() {
        Map<String, List<Request>> m = new LinkedHashMap<>();
        for (Request r : requests) {
            if (r.ok != null) {
                m.computeIfAbsent(r.semaphore(), s -> new ArrayList<>()).add(r);
            }
        }
        return m;
    }
}
