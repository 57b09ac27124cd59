@file:JvmName("SemaphoreCoroutines")

package dev.sema.kotlin

import dev.sema.Permit
import dev.sema.Semaphore
import dev.sema.internal.FastPath
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionException
import java.util.function.BiConsumer
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.cancellation.CancellationException
import kotlin.coroutines.resumeWithException
import kotlin.time.Duration
import kotlin.time.toJavaDuration
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.suspendCancellableCoroutine

/*
 * Implementation overview
 *
 * An acquire first tries the semaphore's lock-free fast path alone (sema-core's internal FastPath, which a
 * local semaphore implements): permits free and nobody queued, it returns the Permit with no future, no
 * suspension and nothing allocated that escapes, and it is reported as a grant; otherwise it did nothing and
 * reported nothing (unlike tryAcquire, whose refusal the listeners would count). Every other acquire is
 * sema-core's acquireAsync: a CompletableFuture<Permit> that waits without a thread, whose request is
 * withdrawn when the future is completed by anyone else (cancel), and where sema-core gives back a grant that
 * loses that race. awaitPermit turns the future into a suspension. A closed semaphore is refused by the
 * acquireAsync (the fast path never applies to it), so it fails as before.
 *
 * Invariants:
 *   K1: every Permit the future delivers reaches exactly one owner: the caller (returned), or nobody, and then
 *       it is closed here. Never both (Permit.close is idempotent anyway), never neither.
 *   K2: no thread waits: the coroutine suspends, and the future's completion resumes it.
 *
 * Who decides, when the coroutine is cancelled while it waits:
 *   - cancel first: invokeOnCancellation cancels the future; sema-core withdraws the request, or, if a grant
 *     was being made at that moment, gives it back (its I3). The future then fails with CancellationException
 *     and resuming the cancelled continuation with it does nothing.
 *   - grant first: the future holds a Permit, so cancel(false) returns false; whenComplete resumes the
 *     continuation with the Permit and the onCancellation handler, which kotlinx.coroutines calls exactly when
 *     the value is not delivered: the continuation was already cancelled, or it is cancelled before it is
 *     dispatched (prompt cancellation). The handler closes the Permit (K1).
 */

/**
 * Acquires [permits] permits of this semaphore, suspending, without blocking a thread, until they are granted.
 *
 * Waiters are served as the semaphore's fairness says (strict FIFO by default, with suspending, blocking and
 * async callers in one queue). The returned [Permit] gives its permits back when closed: use it with `use`, or
 * call [withPermit], which closes it however the work ends.
 *
 * **Cancellation.** Cancelling the coroutine while it waits withdraws the request. A grant that races with the
 * cancellation is given back: the call then throws [CancellationException] and the permits are not held. A
 * coroutine already cancelled on entry takes nothing.
 *
 * @param permits the request, `0 <= permits <= maxPermits()`; 0 succeeds at once with an empty permit
 * @return the permit, holding [permits] permits
 * @throws IllegalArgumentException at once, with nothing changed, if [permits] is out of range
 * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed before the grant
 * @throws CancellationException if the coroutine is cancelled first
 */
public suspend fun Semaphore.acquirePermit(permits: Long = 1): Permit {
    currentCoroutineContext().ensureActive()
    // The uncontended path: no future and no suspension (see the implementation overview).
    if (this is FastPath) {
        tryFastPath(permits)?.let { return it }
    }
    return acquireAsync(permits).awaitPermit()
}

/**
 * Like [acquirePermit], but fails with [java.util.concurrent.TimeoutException] (as the Java API's timed
 * acquires do) if the permits cannot be had within [timeout]. A timeout of zero or less only tries once; an
 * infinite one waits like [acquirePermit].
 *
 * The timeout is kept by the semaphore itself, on the clock of [System.nanoTime], exactly as
 * `acquireAsync(permits, timeout)` keeps it, so the semaphore's listeners and metrics report it as a timeout.
 * It is therefore not virtual time: under `kotlinx-coroutines-test`, `advanceTimeBy` does not make it expire.
 * For a timeout on the coroutine's own clock, use `withTimeout { semaphore.acquirePermit(n) }`, which ends the
 * wait as a cancellation (and fails with kotlinx's `TimeoutCancellationException`).
 *
 * @param permits the request, `0 <= permits <= maxPermits()`
 * @param timeout how long to wait
 * @return the permit, holding [permits] permits
 * @throws IllegalArgumentException at once, with nothing changed, if [permits] is out of range
 * @throws java.util.concurrent.TimeoutException if the timeout expires first; the request is withdrawn
 * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed before the grant
 * @throws CancellationException if the coroutine is cancelled first
 */
public suspend fun Semaphore.acquirePermit(permits: Long, timeout: Duration): Permit {
    currentCoroutineContext().ensureActive()
    val future = if (timeout.isInfinite() && timeout.isPositive()) {
        acquireAsync(permits)
    } else {
        // Negative timeouts and -INFINITE: sema-core treats every timeout of zero or less as "try once".
        acquireAsync(permits, if (timeout.isNegative()) java.time.Duration.ZERO else timeout.toJavaDuration())
    }
    return future.awaitPermit()
}

/**
 * Runs [block] while holding [permits] permits of this semaphore, and gives them back exactly once however
 * [block] ends: by returning, by throwing, or by the coroutine's cancellation.
 *
 * It waits as [acquirePermit] does: suspended, never blocking a thread, and a cancellation while it waits
 * withdraws the request (a grant that raced with it is given back) and [block] does not run.
 *
 * **Not kotlinx's `withPermit`.** `kotlinx.coroutines.sync.withPermit` is an extension of
 * `kotlinx.coroutines.sync.Semaphore`; this one extends [dev.sema.Semaphore]. The receiver's type picks the
 * function, so a file may import both (`import kotlinx.coroutines.sync.withPermit` and
 * `import dev.sema.kotlin.withPermit`) and call each on its own semaphore without ambiguity; only the two
 * `Semaphore` class names clash, so import one of them under an alias (`import dev.sema.Semaphore as
 * SemaSemaphore`) or by its full name.
 *
 * @param permits the request, `0 <= permits <= maxPermits()`
 * @param block the work
 * @return what [block] returned
 * @throws IllegalArgumentException at once, with nothing changed and [block] not run, if [permits] is out of
 *         range
 * @throws dev.sema.SemaphoreClosedException if the semaphore is or becomes closed before the grant
 */
public suspend fun <T> Semaphore.withPermit(permits: Long = 1, block: suspend () -> T): T {
    val permit = acquirePermit(permits)
    try {
        return block()
    } finally {
        permit.close()
    }
}

/** Suspends until the future is done; see the implementation overview for who owns the Permit (K1). */
private suspend fun CompletableFuture<Permit>.awaitPermit(): Permit {
    if (isDone) {
        // Granted or refused at once (the uncontended path): no suspension, no callback.
        return try {
            getNow(null)
        } catch (e: CompletionException) {
            throw e.cause ?: e
        }
    }
    return suspendCancellableCoroutine { continuation ->
        val resumer = PermitResumer(this, continuation)
        // keeps K1: withdraws the request; sema-core gives back a grant that loses this race.
        continuation.invokeOnCancellation(resumer)
        whenComplete(resumer)
    }
}

/**
 * Both callbacks of one suspended acquire in one object (one allocation, not two lambdas): the future's completion
 * resumes the continuation, and the continuation's cancellation cancels the future.
 */
private class PermitResumer(
    private val future: CompletableFuture<Permit>,
    private val continuation: CancellableContinuation<Permit>,
) : BiConsumer<Permit?, Throwable?>, (Throwable?) -> Unit {

    /** The future's completion. */
    override fun accept(permit: Permit?, error: Throwable?) {
        if (error == null) {
            // keeps K1: the handler runs exactly when the Permit is not delivered to the caller.
            continuation.resume(permit!!, CLOSE_UNDELIVERED)
        } else {
            // After our own cancel(false) the continuation is already cancelled and this does nothing.
            continuation.resumeWithException(if (error is CompletionException) error.cause ?: error else error)
        }
    }

    /** The continuation's cancellation: keeps K1, sema-core withdraws the request or gives back a racing grant. */
    override fun invoke(cause: Throwable?) {
        future.cancel(false)
    }

    private companion object {
        /** Closes a Permit that was granted but not delivered (the continuation was cancelled first). */
        val CLOSE_UNDELIVERED: (Throwable, Permit, CoroutineContext) -> Unit = { _, undelivered, _ -> undelivered.close() }
    }
}
