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
import java.util.ArrayList;
import java.util.List;

/**
 * Hand-made histories for the checker's tests: {@code at(ms)} sets the clock, each other call adds one
 * event at that instant. Times are milliseconds after an arbitrary {@code nanoTime} origin.
 */
final class Histories {

    static final long ORIGIN = 7_000_000_000_000L;
    static final String SCHED = "sched";

    private final List<Event> events = new ArrayList<>();
    private long now = ORIGIN;

    static Histories history() {
        return new Histories();
    }

    static long ms(long ms) {
        return ORIGIN + ms * 1_000_000;
    }

    Histories at(long ms) {
        now = ms(ms);
        return this;
    }

    Histories add(Event e) {
        events.add(e);
        return this;
    }

    Histories declare(String semaphore, long limit, long leaseMillis) {
        return add(new Declare(now, SCHED, semaphore, limit, leaseMillis));
    }

    Histories start(String p) {
        return add(new Lifecycle(now, p, Lifecycle.Kind.START));
    }

    Histories exit(String p) {
        return add(new Lifecycle(now, p, Lifecycle.Kind.EXIT));
    }

    Histories kill(String p) {
        return add(new Lifecycle(now, p, Lifecycle.Kind.KILL));
    }

    Histories stop(String p) {
        return add(new Lifecycle(now, p, Lifecycle.Kind.STOP));
    }

    Histories cont(String p) {
        return add(new Lifecycle(now, p, Lifecycle.Kind.CONT));
    }

    Histories invoke(String p, long req, String semaphore, long permits) {
        return add(new Invoke(now, p, req, semaphore, permits, "acquire"));
    }

    Histories ok(String p, long req, long token) {
        return add(new Ok(now, p, req, token));
    }

    Histories fail(String p, long req, Outcome outcome) {
        return add(new Fail(now, p, req, outcome, "test"));
    }

    Histories lost(String p, long req) {
        return add(new Lost(now, p, req));
    }

    Histories release(String p, long req) {
        return add(new Release(now, p, req));
    }

    /** An invoke and its ok at the current instant. */
    Histories grant(String p, long req, String semaphore, long permits, long token) {
        return invoke(p, req, semaphore, permits).ok(p, req, token);
    }

    /** A grant at {@code fromMs} released at {@code toMs}; the clock is left at {@code toMs}. */
    Histories hold(String p, long req, String semaphore, long permits, long token, long fromMs, long toMs) {
        return at(fromMs).grant(p, req, semaphore, permits, token).at(toMs).release(p, req);
    }

    Histories faultBegin(String kind, String target) {
        return add(new Fault(now, SCHED, kind, target, Fault.Phase.BEGIN));
    }

    Histories faultEnd(String kind, String target) {
        return add(new Fault(now, SCHED, kind, target, Fault.Phase.END));
    }

    Histories sample(String semaphore, long used, long queued) {
        return add(new Sample(now, SCHED, semaphore, used, queued));
    }

    /** Samples every {@code everyMs} from {@code fromMs} to {@code toMs} included; the clock is left at the last. */
    Histories samples(String semaphore, long used, long fromMs, long toMs, long everyMs) {
        for (long t = fromMs; t <= toMs; t += everyMs) {
            at(t).sample(semaphore, used, 0);
        }
        return this;
    }

    Histories finalCounts(String semaphore, long used, long queued) {
        return add(new Final(now, SCHED, semaphore, used, queued));
    }

    History build() {
        return History.of(events);
    }

    Report check() {
        return new Checker().check(build());
    }

    Report check(Checker.Options options) {
        return new Checker(options).check(build());
    }
}
