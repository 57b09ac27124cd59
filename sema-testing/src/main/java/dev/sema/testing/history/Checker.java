package dev.sema.testing.history;

import dev.sema.testing.history.Event.Fault;
import dev.sema.testing.history.Report.StaleOverlap;
import dev.sema.testing.history.Timeline.Run;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks a history of a chaos run against the promise of a distributed semaphore: a fleet never holds
 * more permits than the limit, and what the fleet believes agrees with what Redis counts.
 *
 * <h2>Beliefs</h2>
 * A process believes it holds a request's permits from the request's {@code ok} until the first of its
 * {@code lost}, its {@code release}, and the end of the process's run ({@code exit} or {@code kill}; a
 * belief still open when the history ends lasts to its end).
 *
 * <h2>Rules</h2>
 * <ol>
 *   <li><b>Limit.</b> For each semaphore, at every instant, the permits believed held do not exceed its
 *       declared limit (a sweep over the beliefs; intervals are half-open, so a release and a grant at the
 *       same instant do not overlap). A process stopped with SIGSTOP can neither act nor hear that its
 *       lease ran out, and after SIGCONT its timers need a moment to fire: its beliefs do not count from
 *       its {@code stop} until its {@code cont} plus the <em>grace</em> (default 250 ms), and count again
 *       after that if they have not ended. An overlap that exists only because of such paused beliefs is
 *       no violation but a <em>stale overlap</em>, listed with its length; for each paused holder in it,
 *       every grant of the semaphore invoked after the holder's {@code ok} must have a higher token (so a
 *       resource that checks tokens refuses the holder when it resumes), or the holder is a
 *       {@link Violation.Rule#STALE_FENCING} violation. Grants invoked before that {@code ok} are left out:
 *       they were concurrent with the holder's grant and may rightly have been granted first.
 *   <li><b>Fencing tokens.</b> For each semaphore, no two grants share a token, and a grant invoked after
 *       another's {@code ok} has a higher token. Zero-permit grants are held to both (sema-redis gives them
 *       fresh tokens from the same counter), and a semaphore that expired from Redis while idle and was
 *       created again is one semaphore, its tokens still increasing.
 *   <li><b>One outcome.</b> Each invoke has exactly one {@code ok} or {@code fail}; no event names a
 *       request that was not invoked (or an id invoked twice); no {@code lost} or {@code release} before
 *       the {@code ok}; no second {@code release}; no event of a process after its {@code exit} or
 *       {@code kill}, so an exit comes after all outcomes. A request without outcome is excused only if its
 *       process was killed; otherwise it is a violation (the process exited or started again without it,
 *       or the history ends while it hangs).
 *   <li><b>No hung process.</b> A run that began with {@code start} ends with {@code exit} or {@code kill}.
 *   <li><b>Recovery.</b> Every {@code final} shows used == 0 and queued == 0. At each {@code sample},
 *       the stranded permits are {@code used} minus the permits believed held then (paused holders
 *       included); a run of samples with stranded permits is a stretch, from its first sample to its last,
 *       and one shorter than the <em>noise</em> threshold (default 200 ms) is dropped, since a grant reaches
 *       Redis a few ms before its {@code ok} line. A stretch lasting more than the semaphore's lease plus
 *       the <em>slack</em> (default 1 s) past the end of the last fault (or, in a run without faults, from
 *       its start) is a violation. The report gives the longest stretch, and the longest measured from
 *       the end of the last fault that ended before the stretch did.
 * </ol>
 * Besides, every semaphore used must be declared, and declared alike by everyone.
 *
 * <h2>Report</h2>
 * {@link #check(History)} returns a {@link Report}: counts of processes, semaphores, requests, grants,
 * fails by outcome, faults by kind, pause windows, the stale overlaps, the longest stranded stretches and
 * the violations, each with the events around it (the {@code context} events of its semaphore before and
 * after it, half as many of its process, and the faults among them). {@link #main(String...)} reads
 * history files, prints the report and exits with 1 if it found violations, 2 if it could not read them.
 */
public final class Checker {

    /**
     * The parameters of a check.
     *
     * @param grace   how long after {@code cont} a paused process's beliefs still do not count
     * @param slack   how long past a lease stranded permits may last after the last fault
     * @param noise   stranded stretches shorter than this are dropped
     * @param context how many events of the semaphore to show before and after a violation
     */
    public record Options(Duration grace, Duration slack, Duration noise, int context) {

        /** Checks the values. */
        public Options {
            for (Duration d : List.of(grace, slack, noise)) {
                if (d.isNegative()) {
                    throw new IllegalArgumentException("negative duration " + d);
                }
            }
            if (context < 0) {
                throw new IllegalArgumentException("context " + context + " < 0");
            }
        }

        /**
         * Returns the defaults: grace 250 ms, slack 1 s, noise 200 ms, context 10.
         *
         * @return the defaults
         */
        public static Options defaults() {
            return new Options(Duration.ofMillis(250), Duration.ofSeconds(1), Duration.ofMillis(200), 10);
        }

        /**
         * Returns these options with another grace.
         *
         * @param grace the grace
         * @return the options
         */
        public Options withGrace(Duration grace) {
            return new Options(grace, slack, noise, context);
        }

        /**
         * Returns these options with another slack.
         *
         * @param slack the slack
         * @return the options
         */
        public Options withSlack(Duration slack) {
            return new Options(grace, slack, noise, context);
        }

        /**
         * Returns these options with another noise threshold.
         *
         * @param noise the threshold
         * @return the options
         */
        public Options withNoise(Duration noise) {
            return new Options(grace, slack, noise, context);
        }
    }

    private final Options options;

    /** Creates a checker with the {@linkplain Options#defaults() default options}. */
    public Checker() {
        this(Options.defaults());
    }

    /**
     * Creates a checker.
     *
     * @param options its parameters
     */
    public Checker(Options options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    /**
     * Checks a history.
     *
     * @param history the history
     * @return what was found
     */
    public Report check(History history) {
        Timeline t = Timeline.build(history);
        List<Violation> violations = new ArrayList<>(t.violations);
        List<StaleOverlap> stale = new ArrayList<>();
        List<String> notes = new ArrayList<>(history.notes());
        notes.addAll(t.notes);
        LimitRule.check(t, options.grace().toNanos(), violations, stale);
        TokenRule.check(t, violations);
        RecoveryRule.Result recovery = RecoveryRule.check(t, options.slack().toNanos(), options.noise().toNanos(),
                violations, notes);

        violations.sort(Comparator.comparingLong(Violation::nanos));
        Context context = new Context(t, options.context());
        List<Violation> withContext = violations.stream().map(v -> v.withContext(context.around(v))).toList();

        Map<String, Long> fails = new TreeMap<>();
        Map<String, Long> faults = new TreeMap<>();
        for (Timeline.Request r : t.requests) {
            if (r.fail != null) {
                fails.merge(r.fail.outcome().word(), 1L, Long::sum);
            }
        }
        for (Timeline.FaultSpan f : t.faults) {
            faults.merge(f.kind(), 1L, Long::sum);
        }
        int pauses = 0;
        long longestPause = 0;
        Set<String> processes = new HashSet<>();
        for (Run r : t.runs) {
            processes.add(r.process);
            for (long[] p : r.pauses) {
                pauses++;
                long until = Math.min(p[1], r.end == Timeline.NEVER ? t.last() : r.end); // open: to the end
                longestPause = Math.max(longestPause, until - p[0]);
            }
        }
        stale.sort(Comparator.comparingLong(StaleOverlap::start));
        return new Report(t.first(), t.last(), processes.size(), t.runs.size(), t.declared.size(),
                t.requests.size(), t.requests.stream().filter(r -> r.ok != null).count(), t.excused, fails, faults,
                pauses, Duration.ofNanos(longestPause), stale, recovery.longest(), recovery.longestAfterFault(),
                withContext, notes, options);
    }

    /** The events around a violation, found through per-semaphore and per-process indexes of the history. */
    private static final class Context {
        private final List<Event> events;
        private final int size;
        private final Map<String, List<Integer>> bySemaphore = new HashMap<>();
        private final Map<String, List<Integer>> byProcess = new HashMap<>();
        private final List<Integer> faults = new ArrayList<>();

        Context(Timeline t, int size) {
            this.events = t.history.events();
            this.size = size;
            for (int i = 0; i < events.size(); i++) {
                Event e = events.get(i);
                if (t.semaphoreOf[i] != null) {
                    bySemaphore.computeIfAbsent(t.semaphoreOf[i], k -> new ArrayList<>()).add(i);
                }
                if (e instanceof Fault) {
                    faults.add(i);
                } else {
                    byProcess.computeIfAbsent(e.process(), k -> new ArrayList<>()).add(i);
                }
            }
        }

        List<Event> around(Violation v) {
            TreeSet<Integer> picked = new TreeSet<>();
            if (v.semaphore() != null) {
                near(bySemaphore.getOrDefault(v.semaphore(), List.of()), v.nanos(), size, picked);
            }
            if (v.process() != null) {
                near(byProcess.getOrDefault(v.process(), List.of()), v.nanos(), Math.max(1, size / 2), picked);
            }
            if (!picked.isEmpty()) {
                long from = events.get(picked.first()).nanos();
                long to = events.get(picked.last()).nanos();
                faults.stream().filter(i -> events.get(i).nanos() >= from && events.get(i).nanos() <= to)
                        .limit(size).forEach(picked::add);
            }
            return picked.stream().map(events::get).toList();
        }

        /** Adds the n indexes before and the n after the instant, from a list of indexes in time order. */
        private void near(List<Integer> indexes, long at, int n, Set<Integer> picked) {
            int lo = 0;
            int hi = indexes.size();
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (events.get(indexes.get(mid)).nanos() <= at) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            for (int i = Math.max(0, lo - n); i < Math.min(indexes.size(), lo + n); i++) {
                picked.add(indexes.get(i));
            }
        }
    }

    /**
     * Reads history files, prints the report and exits: 0 if no rule was broken, 1 if one was, 2 if the
     * input could not be read. Options come before the files: {@code --grace=MS}, {@code --slack=MS},
     * {@code --noise=MS}.
     *
     * @param args options, then history files
     */
    public static void main(String... args) {
        System.exit(run(System.out, System.err, args));
    }

    /** What {@link #main} does, without exiting: returns the exit code. */
    static int run(PrintStream out, PrintStream err, String... args) {
        Options options = Options.defaults();
        List<Path> files = new ArrayList<>();
        for (String a : args) {
            try {
                if (a.startsWith("--grace=")) {
                    options = options.withGrace(Duration.ofMillis(Long.parseLong(a.substring(8))));
                } else if (a.startsWith("--slack=")) {
                    options = options.withSlack(Duration.ofMillis(Long.parseLong(a.substring(8))));
                } else if (a.startsWith("--noise=")) {
                    options = options.withNoise(Duration.ofMillis(Long.parseLong(a.substring(8))));
                } else if (a.startsWith("--")) {
                    throw new IllegalArgumentException("unknown option");
                } else {
                    files.add(Path.of(a));
                }
            } catch (IllegalArgumentException e) {
                err.println("bad argument '" + a + "': " + e.getMessage());
                return 2;
            }
        }
        if (files.isEmpty()) {
            err.println("usage: Checker [--grace=MS] [--slack=MS] [--noise=MS] HISTORY_FILE...");
            return 2;
        }
        History history;
        try {
            history = HistoryReader.read(files);
        } catch (IOException e) {
            err.println("unreadable history: " + e.getMessage());
            return 2;
        }
        Report report = new Checker(options).check(history);
        out.print(report.toText());
        out.flush();
        return report.passed() ? 0 : 1;
    }
}
