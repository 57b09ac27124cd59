package dev.sema.testing.history;

import dev.sema.testing.history.Event.Declare;
import dev.sema.testing.history.Event.Fail;
import dev.sema.testing.history.Event.Fault;
import dev.sema.testing.history.Event.Final;
import dev.sema.testing.history.Event.Invoke;
import dev.sema.testing.history.Event.Lifecycle;
import dev.sema.testing.history.Event.Lost;
import dev.sema.testing.history.Event.Ok;
import dev.sema.testing.history.Event.Outcome;
import dev.sema.testing.history.Event.Release;
import dev.sema.testing.history.Event.Sample;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The text form of a history: one {@link Event} per line, the only place that writes or reads it.
 *
 * <h2>Lines</h2>
 * A line is {@code <nanos> <process> <event> key=value ...}, tokens separated by one space, ended by
 * {@code \n}, UTF-8. {@code nanos} is a {@code System.nanoTime()} value (CLOCK_MONOTONIC: comparable
 * across the processes of one Linux host); {@code process} names the process the event is about. Values
 * hold no whitespace (see {@link Event} for how names and free text are kept to one token); a value is
 * everything after the first {@code =}. The writer puts keys in the order below; the reader accepts any
 * order, ignores keys it does not know (so a line may carry more, e.g. {@code by=sched}), and rejects a
 * line that lacks one it needs. Empty lines and lines starting with {@code #} are skipped.
 * <pre>
 * 1000000000 w1 semaphore sem=s1 limit=3 lease=2000          declared: limit, lease in ms
 * 1000500000 w1 start
 * 1001000000 w1 invoke req=7 sem=s1 permits=2 kind=acquire   request 7 sent
 * 1002000000 w1 ok req=7 token=1764153458123456              granted: the belief begins
 * 1003000000 w1 release req=7                                 about to close(): the belief ends
 * 1004000000 w1 lost req=8                                    leaseLost() completed: the belief ends
 * 1005000000 w1 fail req=9 outcome=timeout reason=no_permit_in_PT1S
 * 1006000000 w1 exit
 * 1007000000 w3 kill                                          written by the scheduler once w3 is dead
 * 1008000000 w2 stop                                          SIGSTOP sent by the scheduler
 * 1009000000 w2 cont                                          SIGCONT sent by the scheduler
 * 1010000000 sched fault kind=partition target=w4 phase=begin
 * 1011000000 sched fault kind=partition target=w4 phase=end
 * 1012000000 sched sample sem=s1 used=2 queued=1            counts read from Redis during the run
 * 1013000000 sched final sem=s1 used=0 queued=0             and after it
 * </pre>
 * Outcomes of {@code fail}: timeout, unavailable, closed, cancelled, interrupted, error.
 *
 * <h2>Crashes</h2>
 * A writer appends each line with one unbuffered write of the whole line ({@link HistoryWriter}), so a
 * process killed by SIGKILL leaves at most its last line torn: {@link HistoryReader} skips a last line
 * that does not end in {@code \n} (even one that parses: it may have lost digits), and any other line
 * that does not parse makes the file unreadable.
 *
 * <h2>Grepping</h2>
 * {@code grep ' w3 '} gives a process's lines, {@code grep 'req=7 '} with its process a request's,
 * {@code grep ' fault '} the faults; {@code sort -n -m *.history} merges files in time order.
 */
public final class HistoryFormat {

    /** The longest free text kept: a reason is for a reader of the line, not a stack trace. */
    static final int MAX_TEXT = 200;

    private HistoryFormat() {
    }

    /**
     * Formats an event as a line, without the final {@code \n}.
     *
     * @param event the event
     * @return its line
     */
    public static String format(Event event) {
        StringBuilder b = new StringBuilder(64).append(event.nanos()).append(' ').append(event.process()).append(' ');
        switch (event) {
            case Declare d -> b.append("semaphore sem=").append(d.semaphore()).append(" limit=").append(d.limit())
                    .append(" lease=").append(d.leaseMillis());
            case Invoke i -> b.append("invoke req=").append(i.req()).append(" sem=").append(i.semaphore())
                    .append(" permits=").append(i.permits()).append(" kind=").append(i.kind());
            case Ok o -> b.append("ok req=").append(o.req()).append(" token=").append(o.token());
            case Fail f -> b.append("fail req=").append(f.req()).append(" outcome=").append(f.outcome().word())
                    .append(" reason=").append(f.reason());
            case Lost l -> b.append("lost req=").append(l.req());
            case Release r -> b.append("release req=").append(r.req());
            case Lifecycle l -> b.append(l.kind().word());
            case Fault f -> b.append("fault kind=").append(f.kind()).append(" target=").append(f.target())
                    .append(" phase=").append(f.phase().word());
            case Sample s -> b.append("sample sem=").append(s.semaphore()).append(" used=").append(s.used())
                    .append(" queued=").append(s.queued());
            case Final f -> b.append("final sem=").append(f.semaphore()).append(" used=").append(f.used())
                    .append(" queued=").append(f.queued());
        }
        return b.toString();
    }

    /**
     * Parses a line (without its {@code \n}).
     *
     * @param line a line as {@link #format(Event)} writes it
     * @return its event, or null for an empty or {@code #} line
     * @throws IllegalArgumentException if the line is not a valid event
     */
    public static Event parse(String line) {
        String trimmed = line.strip();
        if (trimmed.isEmpty() || trimmed.startsWith("#")) {
            return null;
        }
        String[] tokens = trimmed.split("\\s+");
        if (tokens.length < 3) {
            throw new IllegalArgumentException("expected '<nanos> <process> <event> ...'");
        }
        long nanos = number("nanos", tokens[0]);
        String process = tokens[1];
        Fields f = new Fields(tokens);
        return switch (tokens[2]) {
            case "semaphore" -> new Declare(nanos, process, f.get("sem"), f.number("limit"), f.number("lease"));
            case "invoke" -> new Invoke(nanos, process, f.number("req"), f.get("sem"), f.number("permits"),
                    f.get("kind"));
            case "ok" -> new Ok(nanos, process, f.number("req"), f.number("token"));
            case "fail" -> new Fail(nanos, process, f.number("req"), Outcome.of(f.get("outcome")), f.get("reason"));
            case "lost" -> new Lost(nanos, process, f.number("req"));
            case "release" -> new Release(nanos, process, f.number("req"));
            case "start", "exit", "kill", "stop", "cont" ->
                    new Lifecycle(nanos, process, Lifecycle.Kind.valueOf(tokens[2].toUpperCase(Locale.ROOT)));
            case "fault" -> new Fault(nanos, process, f.get("kind"), f.get("target"), phase(f.get("phase")));
            case "sample" -> new Sample(nanos, process, f.get("sem"), f.number("used"), f.number("queued"));
            case "final" -> new Final(nanos, process, f.get("sem"), f.number("used"), f.number("queued"));
            default -> throw new IllegalArgumentException("unknown event '" + tokens[2] + "'");
        };
    }

    private static Fault.Phase phase(String word) {
        for (Fault.Phase p : Fault.Phase.values()) {
            if (p.word().equals(word)) {
                return p;
            }
        }
        throw new IllegalArgumentException("phase must be begin or end: '" + word + "'");
    }

    private static long number(String key, String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " is not a number: '" + value + "'", e);
        }
    }

    /** The key=value tokens of a line, after its event word. */
    private static final class Fields {
        private final Map<String, String> values = new HashMap<>();

        Fields(String[] tokens) {
            for (int i = 3; i < tokens.length; i++) {
                int eq = tokens[i].indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("expected key=value: '" + tokens[i] + "'");
                }
                if (values.put(tokens[i].substring(0, eq), tokens[i].substring(eq + 1)) != null) {
                    throw new IllegalArgumentException("key given twice: '" + tokens[i] + "'");
                }
            }
        }

        String get(String key) {
            String v = values.get(key);
            if (v == null) {
                throw new IllegalArgumentException("missing " + key + "=");
            }
            return v;
        }

        long number(String key) {
            return HistoryFormat.number(key, get(key));
        }
    }

    /**
     * Checks a name that identifies a process or a semaphore: it must be one token of a line.
     *
     * @throws IllegalArgumentException if it is empty or holds whitespace or a control character
     */
    static String name(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty() || name.chars().anyMatch(HistoryFormat::breaksToken)) {
            throw new IllegalArgumentException("a name must be one token without whitespace: '" + name + "'");
        }
        return name;
    }

    /**
     * Cleans free text into one token: whitespace and control characters become {@code _}, the text is cut
     * at {@value #MAX_TEXT} characters, and empty or null text becomes {@code -}.
     */
    static String text(String text) {
        if (text == null || text.isEmpty()) {
            return "-";
        }
        StringBuilder b = new StringBuilder(Math.min(text.length(), MAX_TEXT));
        for (int i = 0; i < text.length() && b.length() < MAX_TEXT; i++) {
            char c = text.charAt(i);
            b.append(breaksToken(c) ? '_' : c);
        }
        return b.toString();
    }

    private static boolean breaksToken(int c) {
        return Character.isWhitespace(c) || Character.isSpaceChar(c) || Character.isISOControl(c);
    }
}
