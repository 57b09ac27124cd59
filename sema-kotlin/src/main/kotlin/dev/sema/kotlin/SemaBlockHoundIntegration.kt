package dev.sema.kotlin

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

    override fun applyTo(builder: BlockHound.Builder) {
        val engine = "dev.sema.LocalSemaphore"
        builder.allowBlockingCallsInside(engine, "takeOrEnqueue") // a request that queues
            .allowBlockingCallsInside(engine, "enqueueIdle") // awaitIdleAsync
            .allowBlockingCallsInside(engine, "withdraw") // a cancelled or timed-out request
            .allowBlockingCallsInside(engine, "releaseSlow") // Permit.close while requests are queued
            .allowBlockingCallsInside(engine, "giveBack") // the same, with listeners
            .allowBlockingCallsInside(engine, "forget") // Permit.forget
            // what those sections run once unlocked: the granted requests' continuations, the listeners
            .disallowBlockingCallsInside(engine, "finish")
            .disallowBlockingCallsInside("dev.sema.internal.Listeners", "released")
            .disallowBlockingCallsInside("dev.sema.internal.Listeners", "limitChanged")
    }
}
