package dev.sema.internal;

import java.util.List;

/**
 * Where the local semaphore may wait for its own lock, for the BlockHound integrations of the non-blocking modules
 * (API.md §12): the one place that names them, beside the engine that has them, so that a renamed method fails
 * sema-core's own test (LockSectionsTest) rather than, silently, every integration.
 *
 * <p>The local semaphore serves its queue under a {@code ReentrantLock} held for a few field updates: when two
 * threads take it at once (a release and a queued acquire, say), one of them parks until the other leaves. Nothing
 * waits or runs user code while it is held. {@link #ALLOWED} are the methods that may park there: queueing a
 * request, withdrawing it, giving permits back past the lock-free path, forgetting them. {@link #CHECKED} are what
 * those methods run once unlocked (completing granted requests, which resumes the callers' code, and the
 * listeners): checked again, so that a real blocking call there is still reported.
 *
 * <p>A timed asynchronous acquire also puts its timeout on the semaphore's timer, a
 * {@code ScheduledThreadPoolExecutor}, and takes it off again once the request ends: both take that timer queue's
 * own lock for a heap update, and may park there when the timer thread holds it. {@link Timeouts#failAfter} and
 * {@link Timeouts#unschedule} run nothing but that, and are allowed too.
 */
public final class LockSections {
    /** The engine's class. */
    public static final String ENGINE = "dev.sema.LocalSemaphore";

    /** The async timeouts' class, whose timer queue has a lock of its own. */
    public static final String TIMEOUTS = "dev.sema.internal.Timeouts";

    /** {class, method} pairs that may wait for the engine's lock. */
    public static final List<String[]> ALLOWED = List.of(
            new String[] {ENGINE, "takeOrEnqueue"}, // a request that queues
            new String[] {ENGINE, "enqueueIdle"}, // awaitIdleAsync
            new String[] {ENGINE, "withdraw"}, // a cancelled or timed-out request
            new String[] {ENGINE, "releaseSlow"}, // Permit.close while requests are queued
            new String[] {ENGINE, "giveBack"}, // the same, with listeners
            new String[] {ENGINE, "forget"}, // Permit.forget
            new String[] {TIMEOUTS, "failAfter"}, // a timed acquireAsync's timeout onto the timer's queue
            new String[] {TIMEOUTS, "unschedule"}); // and off it, when the request ends first

    /** {class, method} pairs inside those that run others' code once unlocked, and are checked again. */
    public static final List<String[]> CHECKED = List.of(
            new String[] {ENGINE, "finish"}, // the granted requests' continuations
            new String[] {"dev.sema.internal.Listeners", "released"},
            new String[] {"dev.sema.internal.Listeners", "limitChanged"});

    private LockSections() {
    }
}
