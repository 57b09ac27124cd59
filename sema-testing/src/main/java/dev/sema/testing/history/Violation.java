package dev.sema.testing.history;

import java.util.List;

/**
 * A breach of one of the {@link Checker}'s rules, with the events around it.
 *
 * @param rule      the rule broken
 * @param semaphore the semaphore concerned, or null
 * @param process   the process concerned, or null
 * @param nanos     when the breach happened or was seen
 * @param message   what happened, naming requests as {@code <process> req=<id>}
 * @param context   the events around {@code nanos}: of the semaphore, of the process, and the faults among them
 */
public record Violation(Rule rule, String semaphore, String process, long nanos, String message,
                        List<Event> context) {

    /** Keeps the context immutable. */
    public Violation {
        context = List.copyOf(context);
    }

    /** A violation whose context the {@link Checker} adds once every rule has run. */
    static Violation of(Rule rule, String semaphore, String process, long nanos, String message) {
        return new Violation(rule, semaphore, process, nanos, message, List.of());
    }

    Violation withContext(List<Event> events) {
        return new Violation(rule, semaphore, process, nanos, message, events);
    }

    /** The rules a history must keep; see {@link Checker} for each in full. */
    public enum Rule {
        /** Rule 1: more permits believed held than the limit, without a paused holder to explain it. */
        LIMIT,
        /** Rule 1: a paused holder whose token is not lower than that of a grant made after its own. */
        STALE_FENCING,
        /** Rule 2: two grants of one semaphore with the same fencing token. */
        DUPLICATE_TOKEN,
        /** Rule 2: a grant that started after another completed got a lower token. */
        TOKEN_ORDER,
        /** Rule 3: an outcome, loss or release of a request that was never invoked, or an id invoked twice. */
        UNKNOWN_REQUEST,
        /** Rule 3: a request with two outcomes. */
        DOUBLE_OUTCOME,
        /** Rule 3: a loss or release of a request that was not granted (yet). */
        END_BEFORE_OK,
        /** Rule 3: a permit released twice. */
        DOUBLE_RELEASE,
        /** Rule 3: a request without outcome whose process was not killed. */
        MISSING_OUTCOME,
        /** Rule 3: an event written by a process after its exit or kill. */
        AFTER_END,
        /** Rule 4: a process that started but neither exited nor was killed. */
        HUNG_PROCESS,
        /** Rule 5: a semaphore left with permits used or requests queued after the run. */
        FINAL_STATE,
        /** Rule 5: permits stranded longer than a lease and the slack after the last fault ended. */
        RECOVERY,
        /** The input: a semaphore used without a declaration, or declared twice differently. */
        DECLARATION
    }
}
