package dev.sema.reactor;

import dev.sema.internal.LockSections;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound about sema-core's short critical sections, so that acquiring and releasing permits on a
 * non-blocking thread (a Reactor {@code parallel} scheduler, an event loop) is not reported as blocking.
 * BlockHound loads it by itself (a {@code ServiceLoader} entry) when this module is present and
 * {@code BlockHound.install()} runs; nothing else uses it.
 *
 * <p>The sections are sema-core's to name ({@code dev.sema.internal.LockSections}): the few methods that may park
 * on the local semaphore's own lock, held for a few field updates, are allowed; what they run once unlocked
 * (completing granted requests, which runs the waiting subscribers' code, and the listeners) stays checked, so a
 * real blocking call on a non-blocking thread is still reported, also when it runs in a subscriber that a release
 * on that thread resumed.
 */
@SuppressWarnings("exports") // BlockHound is optional: only BlockHound itself, which has it, calls this class
public final class SemaBlockHoundIntegration implements BlockHoundIntegration {
    /** For {@code ServiceLoader}. */
    public SemaBlockHoundIntegration() {
    }

    @Override
    public void applyTo(BlockHound.Builder builder) {
        for (String[] section : LockSections.ALLOWED) {
            builder.allowBlockingCallsInside(section[0], section[1]);
        }
        for (String[] section : LockSections.CHECKED) {
            builder.disallowBlockingCallsInside(section[0], section[1]);
        }
    }
}
