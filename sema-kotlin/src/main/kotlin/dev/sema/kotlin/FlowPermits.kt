@file:JvmName("FlowPermits")

package dev.sema.kotlin

import dev.sema.Semaphore
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.async
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Semaphore as WindowSemaphore

/**
 * The fewest and the most elements one [mapWithPermits] holds between taking them from upstream and emitting
 * their results (its window: twice the semaphore's ceiling, within these bounds). The window bounds its memory
 * when an early element is slow and later ones finish; twice the ceiling lets later elements use the permits
 * that finished ones gave back while an earlier one still runs.
 */
private const val MIN_WINDOW: Int = 16
private const val MAX_WINDOW: Int = 1024

/*
 * Implementation overview
 *
 * One collecting coroutine (the producer) takes elements from upstream in order; for each it takes a place in
 * the window, computes the weight, acquires the permits (suspending), and starts the element's transform in an
 * async whose completion closes the permit; it sends the Deferred to an unbounded channel. The flow's own
 * coroutine receives the Deferreds in order, awaits and emits each, then frees its window place. All of it
 * runs in one coroutineScope, so any failure (a transform, the weight function, upstream, downstream's emit)
 * or the collector's cancellation cancels everything else.
 *
 * Invariants:
 *   F1: elements taken from upstream and not yet emitted <= window + 1 (the +1 waits for a place), so the
 *       channel, unbounded in type, holds at most window Deferreds.
 *   F2: every permit acquired is closed exactly once: by its async's completion handler, which runs however
 *       the async ends, including cancelled before it started (no suspension point lies between the grant
 *       and the handler's registration). A request withdrawn while waiting holds nothing (acquirePermit's K1).
 *   F3: requests are made in source order, one at a time, so a FIFO semaphore grants them in source order
 *       and a heavy element is not overtaken by lighter ones after it.
 */

/**
 * Maps each element with [transform], running the transforms concurrently, each while it holds
 * `permits(element)` permits of [semaphore], and emits the results in the order of the elements.
 *
 * **Concurrency.** Elements are taken in order; each one's permits are requested once the previous one's are
 * granted, and its transform starts as soon as they are granted, so at most the semaphore's limit is in use,
 * together with everyone else who shares the semaphore (other flows, blocking and async callers). The
 * transform runs in a child coroutine of the collector, on the collector's dispatcher. The permits are given
 * back when the transform ends, before its result is emitted.
 *
 * **Buffering.** A result waits until those of all earlier elements are emitted; to bound what waits, at most
 * a window of `2 * semaphore.maxPermits()` elements, but at least 16 and at most 1024, are in flight between
 * upstream and downstream, running or finished, and upstream is suspended while that many are. So weight-1
 * elements can use every permit of a ceiling up to 512 even while an early element is slow; more concurrency
 * than that needs several flows. Upstream is collected ahead of downstream by at most the window plus one
 * element.
 *
 * **Failures.** An element whose weight is negative or above `semaphore.maxPermits()` fails the flow with an
 * [IllegalArgumentException] naming its weight (its transform is not called). The first failure of a
 * transform, of [permits], of upstream or of downstream cancels every other transform and every waiting
 * request, and the flow fails with it once they have ended; every permit is given back. Cancelling the
 * collector does the same. A closed semaphore fails the flow with [dev.sema.SemaphoreClosedException].
 *
 * @param semaphore the semaphore whose permits each transform holds
 * @param permits the weight of an element, `0..semaphore.maxPermits()`; 1 by default
 * @param transform the work for one element
 * @return a cold flow of the results, in the elements' order
 */
public fun <T, R> Flow<T>.mapWithPermits(
    semaphore: Semaphore,
    permits: (T) -> Long = { 1L },
    transform: suspend (T) -> R,
): Flow<R> {
    val upstream = this
    return flow {
        val window = (2 * semaphore.maxPermits()).coerceIn(MIN_WINDOW.toLong(), MAX_WINDOW.toLong()).toInt()
        val places = WindowSemaphore(window)
        val started = Channel<Deferred<R>>(Channel.UNLIMITED) // bounded by the window (F1)
        coroutineScope {
            launch {
                var index = 0L
                upstream.collect { element ->
                    places.acquire()
                    val weight = permits(element)
                    require(weight >= 0 && weight <= semaphore.maxPermits()) {
                        "element $index weighs $weight permits, outside 0..maxPermits (${semaphore.maxPermits()})" +
                            " of semaphore ${semaphore.name()}"
                    }
                    val permit = semaphore.acquirePermit(weight) // F3: one request at a time, in order
                    val result = async { transform(element) }
                    result.invokeOnCompletion { permit.close() } // keeps F2
                    started.send(result)
                    index++
                }
                started.close()
            }
            for (result in started) {
                emit(result.await())
                places.release()
            }
        }
    }
}
