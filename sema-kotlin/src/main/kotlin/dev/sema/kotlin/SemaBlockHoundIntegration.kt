package dev.sema.kotlin

import dev.sema.internal.LockSections
import reactor.blockhound.BlockHound
import reactor.blockhound.integration.BlockHoundIntegration

/**
 * Tells BlockHound that the local semaphore's short critical sections may wait for its lock on a thread that must
 * not block (a `Dispatchers.Default` worker, under kotlinx-coroutines-debug's own integration).
 *
 * A suspending acquire, its cancellation and a release each take the semaphore's internal lock for a few field
 * updates when they meet another thread there (to queue a request, withdraw it, or hand released permits to the
 * queue, and to give back a grant that raced with a cancellation); the lock is never held while anything waits or
 * any user code runs. Those sections are allowed; what they run once unlocked stays checked: completing the
 * granted requests' futures, which resumes their coroutines (inline under `Dispatchers.Unconfined`), and the
 * semaphore's listeners. BlockHound finds this class through `ServiceLoader` (`META-INF/services`, and the module's
 * `provides`) when it is installed.
 */
public class SemaBlockHoundIntegration : BlockHoundIntegration {

    /** Allows the semaphore's lock sections on [builder] and keeps checking what they run once unlocked. */
    override fun applyTo(builder: BlockHound.Builder) {
        // The sections are sema-core's to name (dev.sema.internal.LockSections), as for sema-reactor's integration.
        for (section in LockSections.ALLOWED) {
            builder.allowBlockingCallsInside(section[0], section[1])
        }
        for (section in LockSections.CHECKED) {
            builder.disallowBlockingCallsInside(section[0], section[1])
        }
    }
}
