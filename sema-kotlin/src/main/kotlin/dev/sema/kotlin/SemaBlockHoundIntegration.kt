package dev.sema.kotlin

import reactor.blockhound.BlockHound
import reactor.blockhound.integration.BlockHoundIntegration

/**
 * Tells BlockHound that the local semaphore's short critical sections may wait for its lock on a thread that must
 * not block (a `Dispatchers.Default` worker, under kotlinx-coroutines-debug's own integration).
 *
 * A suspending acquire, its cancellation and a release each take the semaphore's internal lock for a few
 * instructions when they meet another thread there (to queue a request, withdraw it, or hand released permits to
 * the queue, and to give back a grant that raced with a cancellation); the lock is never held while anything waits
 * or any user code runs. BlockHound finds this class through `ServiceLoader` (`META-INF/services`, and the module's
 * `provides`) when it is installed; a real blocking call in a coroutine is still reported.
 */
public class SemaBlockHoundIntegration : BlockHoundIntegration {

    override fun applyTo(builder: BlockHound.Builder) {
        for (method in listOf("takeOrEnqueue", "withdraw", "releaseSlow", "giveBack")) {
            builder.allowBlockingCallsInside("dev.sema.LocalSemaphore", method)
        }
    }
}
