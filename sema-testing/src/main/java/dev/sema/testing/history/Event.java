package dev.sema.testing.history;

import java.util.Locale;
import java.util.Objects;

/**
 * One line of a history: something a process did or saw, at a {@code System.nanoTime()} instant.
 * {@link HistoryFormat} writes and reads each kind as one text line; the records here are the typed
 * layer that the {@link Checker} switches on, so no code outside {@code HistoryFormat} handles the text.
 *
 * <p>Every record keeps one rule in its constructor: each field formats as a single token of a line.
 * Names that identify something ({@linkplain #process() processes}, semaphores) must be non-empty and
 * free of whitespace and control characters, or the constructor throws; free text (a request's kind, a
 * failure's reason, a fault's kind and target) is cleaned instead (whitespace and control characters
 * become {@code _}, at most 200 characters are kept, empty text becomes {@code -}), because it often
 * comes from an exception message that the recording code does not control.
 */
public sealed interface Event {

    /**
     * Returns when the event happened.
     *
     * @return a {@code System.nanoTime()} instant
     */
    long nanos();

    /**
     * Returns the process the event is about.
     *
     * @return its author, or for {@code kill}, {@code stop} and {@code cont} the process the scheduler
     *         acted on
     */
    String process();

    /**
     * A semaphore used in the run, with the limit the checker holds it to and its lease.
     *
     * @param nanos       when it was declared
     * @param process     who declared it
     * @param semaphore   its name
     * @param limit       the most permits that may be held at once, {@code >= 0}
     * @param leaseMillis its lease in milliseconds, {@code > 0}
     */
    record Declare(long nanos, String process, String semaphore, long limit, long leaseMillis) implements Event {
        /** Keeps each name one token of a line, the limit {@code >= 0} and the lease {@code > 0}. */
        public Declare {
            HistoryFormat.name(process);
            HistoryFormat.name(semaphore);
            if (limit < 0 || leaseMillis <= 0) {
                throw new IllegalArgumentException("limit " + limit + " or lease " + leaseMillis + " ms out of range");
            }
        }
    }

    /**
     * A request for permits, sent: no permit is believed held before its {@link Ok}.
     *
     * @param nanos     when the request started (before it was sent)
     * @param process   who made it
     * @param req       its id, unique within the process's run
     * @param semaphore the semaphore asked
     * @param permits   how many permits, {@code >= 0}
     * @param kind      free text: acquire, timed, try, async...
     */
    record Invoke(long nanos, String process, long req, String semaphore, long permits, String kind)
            implements Event {
        /** Keeps each field one token of a line and the permits {@code >= 0}. */
        public Invoke {
            HistoryFormat.name(process);
            HistoryFormat.name(semaphore);
            if (permits < 0) {
                throw new IllegalArgumentException("permits " + permits + " < 0");
            }
            kind = HistoryFormat.text(kind);
        }
    }

    /**
     * The request was granted: from this instant the process believes it holds the permits.
     *
     * @param nanos   when the grant was seen (after the acquire returned or the future completed)
     * @param process who made the request
     * @param req     the request's id
     * @param token   the grant's fencing token
     */
    record Ok(long nanos, String process, long req, long token) implements Event {
        /** Keeps each field one token of a line. */
        public Ok {
            HistoryFormat.name(process);
        }
    }

    /**
     * The request failed: no permit was granted.
     *
     * @param nanos   when the failure was seen
     * @param process who made the request
     * @param req     the request's id
     * @param outcome how it failed
     * @param reason  free text, for example the exception's message
     */
    record Fail(long nanos, String process, long req, Outcome outcome, String reason) implements Event {
        /** Keeps each field one token of a line. */
        public Fail {
            HistoryFormat.name(process);
            Objects.requireNonNull(outcome, "outcome");
            reason = HistoryFormat.text(reason);
        }
    }

    /**
     * The permit's {@code leaseLost()} completed: the belief that it is held ends here.
     *
     * @param nanos   when the future completed
     * @param process who holds the permit
     * @param req     the request that granted it
     */
    record Lost(long nanos, String process, long req) implements Event {
        /** Keeps each field one token of a line. */
        public Lost {
            HistoryFormat.name(process);
        }
    }

    /**
     * The process is about to call {@code close()} on the permit: the belief that it is held ends here.
     * It is written before the call because the release may take effect in Redis, and the permits be
     * granted elsewhere, before {@code close()} returns.
     *
     * @param nanos   just before {@code close()}
     * @param process who holds the permit
     * @param req     the request that granted it
     */
    record Release(long nanos, String process, long req) implements Event {
        /** Keeps each field one token of a line. */
        public Release {
            HistoryFormat.name(process);
        }
    }

    /**
     * A step in the life of a process, written by the process ({@code start}, {@code exit}) or by the
     * scheduler on its behalf ({@code kill}, {@code stop}, {@code cont}).
     *
     * @param nanos   when it happened; for {@code kill}, once the process is known dead
     * @param process the process
     * @param kind    which step
     */
    record Lifecycle(long nanos, String process, Kind kind) implements Event {
        /** Keeps each field one token of a line. */
        public Lifecycle {
            HistoryFormat.name(process);
            Objects.requireNonNull(kind, "kind");
        }

        /** The steps of a process's life. */
        public enum Kind {
            /** The process began (a process killed and started again begins a new run). */
            START,
            /** The process ends cleanly, after every request it made has an outcome. */
            EXIT,
            /** The scheduler killed it with SIGKILL: every belief ends, requests without outcome are excused. */
            KILL,
            /** The scheduler paused it with SIGSTOP. */
            STOP,
            /** The scheduler resumed it with SIGCONT. */
            CONT;

            /**
             * Returns the word a history line uses for this step.
             *
             * @return the word
             */
            public String word() {
                return name().toLowerCase(Locale.ROOT);
            }
        }
    }

    /**
     * The scheduler began or ended a fault.
     *
     * @param nanos   when
     * @param process the scheduler
     * @param kind    free text: partition, latency, reset, halfopen, sigstop, sigkill, redis-restart...
     * @param target  free text: what the fault hits (a process, a proxy, redis)
     * @param phase   begin or end; a fault with no duration writes both
     */
    record Fault(long nanos, String process, String kind, String target, Phase phase) implements Event {
        /** Keeps each field one token of a line. */
        public Fault {
            HistoryFormat.name(process);
            kind = HistoryFormat.text(kind);
            target = HistoryFormat.text(target);
            Objects.requireNonNull(phase, "phase");
        }

        /** Whether a fault line begins or ends the fault. */
        public enum Phase {
            /** The fault is now in effect. */
            BEGIN,
            /** The fault is over. */
            END;

            /**
             * Returns the word a history line uses for this phase.
             *
             * @return the word
             */
            public String word() {
                return name().toLowerCase(Locale.ROOT);
            }
        }
    }

    /**
     * The scheduler read a semaphore's counts in Redis during the run.
     *
     * @param nanos     when the reply arrived
     * @param process   the scheduler
     * @param semaphore the semaphore
     * @param used      permits held according to Redis
     * @param queued    requests queued according to Redis
     */
    record Sample(long nanos, String process, String semaphore, long used, long queued) implements Event {
        /** Keeps each field one token of a line. */
        public Sample {
            HistoryFormat.name(process);
            HistoryFormat.name(semaphore);
        }
    }

    /**
     * The scheduler read a semaphore's counts in Redis after the run: both must be 0.
     *
     * @param nanos     when the reply arrived
     * @param process   the scheduler
     * @param semaphore the semaphore
     * @param used      permits held according to Redis
     * @param queued    requests queued according to Redis
     */
    record Final(long nanos, String process, String semaphore, long used, long queued) implements Event {
        /** Keeps each field one token of a line. */
        public Final {
            HistoryFormat.name(process);
            HistoryFormat.name(semaphore);
        }
    }

    /** How a request failed. */
    enum Outcome {
        /** It waited its time and got nothing. */
        TIMEOUT,
        /** A try found no permits free. */
        UNAVAILABLE,
        /** The semaphore or its handle was closed. */
        CLOSED,
        /** Its future was cancelled. */
        CANCELLED,
        /** Its thread was interrupted. */
        INTERRUPTED,
        /** Anything else, for example Redis could not be reached. */
        ERROR;

        /**
         * Returns the word a history line uses for this outcome.
         *
         * @return the word
         */
        public String word() {
            return name().toLowerCase(Locale.ROOT);
        }

        /**
         * Returns the outcome a word names.
         *
         * @param word an outcome's {@link #word()}
         * @return the outcome
         * @throws IllegalArgumentException if no outcome has that word
         */
        public static Outcome of(String word) {
            for (Outcome o : values()) {
                if (o.word().equals(word)) {
                    return o;
                }
            }
            throw new IllegalArgumentException("unknown outcome '" + word + "'");
        }
    }
}
