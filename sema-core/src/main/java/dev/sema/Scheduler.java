package dev.sema;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The one timer of the library (async timeouts, refills). Its single thread is a daemon, started when a
 * task is scheduled and ended about 30 s after the last task is gone, so neither an idle application
 * nor a closed or collected semaphore keeps a thread alive.
 */
final class Scheduler {
    static final ScheduledThreadPoolExecutor INSTANCE = create();

    private Scheduler() {
    }

    private static ScheduledThreadPoolExecutor create() {
        AtomicInteger count = new AtomicInteger();
        ThreadFactory factory = runnable -> {
            Thread t = new Thread(runnable, "sema-scheduler-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(0, factory);
        executor.setRemoveOnCancelPolicy(true);
        executor.setKeepAliveTime(30, TimeUnit.SECONDS);
        executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        return executor;
    }
}
