package dev.sema.reactor;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound about sema-core's short critical sections, so that acquiring and releasing permits on a
 * non-blocking thread (a Reactor {@code parallel} scheduler, an event loop) is not reported as blocking.
 * BlockHound loads it by itself (a {@code ServiceLoader} entry) when this module is present and
 * {@code BlockHound.install()} runs; nothing else uses it.
 *
 * <p>The local semaphore serves its queue under a {@code ReentrantLock} held for a few field updates: when two
 * threads take it at once (a release and a queued acquire, say), one of them parks until the other leaves.
 * Those sections are allowed: queueing a request, withdrawing it, and giving permits back past the lock-free
 * path (with or without a listener, and by {@code forget}). Everything those methods run after unlocking stays
 * checked: completing the futures of the requests they granted, which runs the waiting subscribers' code, and
 * calling the semaphore's listeners. So a real blocking call on a non-blocking thread is still reported, also
 * when it runs in a subscriber that a release on that thread resumed.
 */
@SuppressWarnings("exports") // BlockHound is optional: only BlockHound itself, which has it, calls this class
public final class SemaBlockHoundIntegration implements BlockHoundIntegration {
    private static final String ENGINE = "dev.sema.LocalSemaphore";

    /** For {@code ServiceLoader}. */
    public SemaBlockHoundIntegration() {
    }

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside(ENGINE, "takeOrEnqueue") // acquireAsync that queues
                .allowBlockingCallsInside(ENGINE, "enqueueIdle") // awaitIdleAsync
                .allowBlockingCallsInside(ENGINE, "withdraw") // a cancelled or timed-out request
                .allowBlockingCallsInside(ENGINE, "releaseSlow") // Permit.close while requests are queued
                .allowBlockingCallsInside(ENGINE, "giveBack") // the same, with listeners
                .allowBlockingCallsInside(ENGINE, "forget") // Permit.forget
                // what those sections run once unlocked: the granted requests' continuations, the listeners
                .disallowBlockingCallsInside(ENGINE, "finish")
                .disallowBlockingCallsInside("dev.sema.internal.Listeners", "released")
                .disallowBlockingCallsInside("dev.sema.internal.Listeners", "limitChanged");
    }
}
