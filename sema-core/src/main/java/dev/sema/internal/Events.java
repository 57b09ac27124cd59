package dev.sema.internal;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The instant JFR events of a semaphore ({@code dev.sema.Leak}, {@code dev.sema.LimitChange},
 * {@code dev.sema.Close}); {@code dev.sema.Wait} is {@link WaitEvent}. Each costs one check when no
 * recording wants it, and allocates nothing then.
 */
final class Events {
    private Events() {
    }

    static void leak(String semaphore, long permits, String acquiredBy) {
        LeakEvent e = new LeakEvent();
        if (e.isEnabled()) {
            e.semaphore = semaphore;
            e.permits = permits;
            e.acquiredBy = acquiredBy;
            e.commit();
        }
    }

    static void limitChange(String semaphore, long oldLimit, long newLimit) {
        LimitChangeEvent e = new LimitChangeEvent();
        if (e.isEnabled()) {
            e.semaphore = semaphore;
            e.oldLimit = oldLimit;
            e.newLimit = newLimit;
            e.commit();
        }
    }

    static void close(String semaphore) {
        CloseEvent e = new CloseEvent();
        if (e.isEnabled()) {
            e.semaphore = semaphore;
            e.commit();
        }
    }

    @Name("dev.sema.Leak")
    @Label("Semaphore Permit Leak")
    @Category({"Sema", "Semaphore"})
    @Description("Leak detection found a Permit unreachable while it held permits, and returned them")
    @StackTrace(false)
    static final class LeakEvent extends Event {
        @Label("Semaphore")
        String semaphore;

        @Label("Permits")
        long permits;

        @Label("Acquired By")
        @Description("The thread that acquired the permits, when known")
        String acquiredBy;
    }

    @Name("dev.sema.LimitChange")
    @Label("Semaphore Limit Change")
    @Category({"Sema", "Semaphore"})
    @StackTrace(false)
    static final class LimitChangeEvent extends Event {
        @Label("Semaphore")
        String semaphore;

        @Label("Old Limit")
        long oldLimit;

        @Label("New Limit")
        long newLimit;
    }

    @Name("dev.sema.Close")
    @Label("Semaphore Close")
    @Category({"Sema", "Semaphore"})
    @StackTrace(false)
    static final class CloseEvent extends Event {
        @Label("Semaphore")
        String semaphore;
    }
}
