package dev.sema.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * JFR event {@code dev.sema.Wait}: an acquire that queued and waited at least the threshold (20 ms by
 * default; settable per recording). Its duration is the wait; it is recorded on the thread where the
 * request ended.
 */
@Name("dev.sema.Wait")
@Label("Semaphore Wait")
@Category({"Sema", "Semaphore"})
@Description("An acquire that queued and waited")
@Threshold("20 ms")
@StackTrace(false)
public final class WaitEvent extends Event {
    @Label("Semaphore")
    String semaphore;

    @Label("Permits")
    long permits;

    @Label("Outcome")
    @Description("granted, or why it ended without permits")
    String outcome;

    @Label("Queue Length")
    @Description("Waiters queued when it arrived")
    int queueLength;

    private WaitEvent() {
    }

    /**
     * Starts the wait of a request that is about to queue, if a recording wants this event; otherwise
     * costs a check and allocates nothing.
     *
     * @param semaphore the semaphore's name
     * @param permits the permits requested
     * @param queueLength waiters queued at its arrival
     * @return the started event, or null
     */
    public static WaitEvent start(String semaphore, long permits, int queueLength) {
        if (!enabled()) {
            return null;
        }
        WaitEvent e = new WaitEvent();
        e.semaphore = semaphore;
        e.permits = permits;
        e.queueLength = queueLength;
        e.begin();
        return e;
    }

    // A separate method so that the probe event never escapes and is not allocated.
    private static boolean enabled() {
        return new WaitEvent().isEnabled();
    }

    /**
     * Ends the wait with its outcome, and records it if it lasted at least the threshold.
     *
     * @param how how the request ended
     */
    void end(Outcome how) {
        end();
        if (shouldCommit()) {
            outcome = how.name().toLowerCase(java.util.Locale.ROOT);
            commit();
        }
    }
}
