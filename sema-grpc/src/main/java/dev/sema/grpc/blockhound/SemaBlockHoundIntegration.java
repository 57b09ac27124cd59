package dev.sema.grpc.blockhound;

import dev.sema.internal.LockSections;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound about sema-core's short critical sections, so that admitting, releasing and withdrawing calls on
 * a thread that must not block (Netty's event loops, where a server or channel built with {@code directExecutor()}
 * runs the interceptors) is not reported as blocking. BlockHound loads it by itself (a {@code ServiceLoader} entry)
 * when this module is present and {@code BlockHound.install()} runs; nothing else uses it.
 *
 * <p>The sections are sema-core's to name ({@code dev.sema.internal.LockSections}): the few methods that may park
 * on the local semaphore's own lock, or on its timer's queue, each held for a few field updates, are allowed; what
 * they run once unlocked (completing granted requests, which starts the waiting calls, and the listeners) stays
 * checked, so a real blocking call on an event loop is still reported, also in a call that a release there started.
 *
 * <p>Not an API: its package is not exported (a {@code provides} needs none), so that it is no part of the module's
 * recorded public API.
 */
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
