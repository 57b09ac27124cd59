package dev.sema.kotlin

import dev.sema.Semaphore
import dev.sema.SemaphoreClosedException
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.asFlow
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.flow.emptyFlow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.advanceTimeBy
import kotlinx.coroutines.test.currentTime
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withContext
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

@Timeout(30)
class MapWithPermitsTest {

    /** The smallest window, which a ceiling of 4 gets. */
    private val minWindow = 16


    @Test
    fun resultsComeInSourceOrderWhateverTheTransformsTake() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(4)
        val delays = listOf(50L, 10, 40, 0, 30, 20, 5, 60, 1, 15)
        val results = delays.asFlow().mapWithPermits(s) { delay(it); "r$it" }.toList()
        assertEquals(delays.map { "r$it" }, results)
        assertIdle(s)
    }

    @Test
    fun transformsRunConcurrentlyUpToTheLimit() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(3)
        val tracker = HeldTracker()
        val results = (1..20).asFlow().mapWithPermits(s) { tracker.hold(1) { delay(100); it * 2 } }.toList()
        assertEquals((1..20).map { it * 2 }, results)
        assertEquals(3, tracker.peak())
        assertEquals(700, currentTime, "7 rounds of 3 at once (virtual time)")
        tracker.assertPeakAtMost(3)
        assertIdle(s)
    }

    @Test
    fun weightsAreHeldAndNeverExceedTheLimit() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(10)
        val tracker = HeldTracker()
        val weights = listOf(3L, 7, 1, 10, 0, 4, 6, 2, 8, 5)
        val results = weights.asFlow().mapWithPermits(s, permits = { it }) { w ->
            tracker.hold(w) {
                assertTrue(s.availablePermits() >= 0)
                delay(10 * w + 1)
                w
            }
        }.toList()
        assertEquals(weights, results)
        tracker.assertPeakAtMost(10)
        assertIdle(s)
    }

    @Test
    fun flowsSharingASemaphoreShareItsLimit() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(4)
        val tracker = HeldTracker()
        val a = launch { (1..30).asFlow().mapWithPermits(s) { tracker.hold(1) { delay(7); it } }.collect() }
        val b = launch { (1..30).asFlow().mapWithPermits(s, { 2L }) { tracker.hold(2) { delay(3); it } }.collect() }
        val c = launch { repeat(10) { s.withPermit(3) { tracker.hold(3) { delay(5) } } } }
        a.join(); b.join(); c.join()
        tracker.assertPeakAtMost(4)
        assertIdle(s)
    }

    @Test
    fun transformStartsOnlyOnceItsPermitsAreGranted() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        val held = s.acquirePermit(2)
        val started = AtomicInteger()
        val job = launch { (1..5).asFlow().mapWithPermits(s) { started.incrementAndGet(); it }.collect() }
        advanceTimeBy(1_000)
        runCurrent()
        assertEquals(0, started.get())
        assertEquals(1, s.queueLength(), "one request at a time, in order")
        held.close()
        job.join()
        assertEquals(5, started.get())
        assertIdle(s)
    }

    @Test
    fun elementHeavierThanTheCeilingFailsNamingItsWeight() = runTest(timeout = 10.seconds) {
        val s = Semaphore.builder().permits(4).maxPermits(8).name("pool").build()
        val called = mutableListOf<Long>()
        val e = assertThrowsSuspending<IllegalArgumentException> {
            flowOf(1L, 9L, 2L).mapWithPermits(s, { it }) { called += it; delay(10); it }.collect()
        }
        assertTrue(e.message!!.contains("weighs 9 permits"), e.message)
        assertTrue(e.message!!.contains("8") && e.message!!.contains("pool"), e.message)
        assertTrue(9L !in called && 2L !in called, "called: $called")
        assertIdle(s)

        val negative = assertThrowsSuspending<IllegalArgumentException> {
            flowOf(-3L).mapWithPermits(s, { it }) { it }.collect()
        }
        assertTrue(negative.message!!.contains("-3"), negative.message)
        assertIdle(s)
    }

    @Test
    fun failingTransformCancelsTheOthersAndGivesEveryPermitBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(4)
        val cancelled = AtomicInteger()
        val boom = IllegalStateException("boom")
        val thrown = assertThrowsSuspending<IllegalStateException> {
            (1..10).asFlow().mapWithPermits(s) {
                if (it == 3) {
                    delay(50)
                    throw boom
                }
                try {
                    awaitCancellation()
                } finally {
                    cancelled.incrementAndGet()
                }
            }.collect()
        }
        assertTrue(thrown === boom || thrown.cause === boom, "$thrown") // or its copy with the stack recovered
        assertEquals(3, cancelled.get(), "the other three running")
        assertIdle(s)
    }

    @Test
    fun failingWeightFunctionOrUpstreamGivesEveryPermitBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(4)
        assertThrowsSuspending<ArithmeticException> {
            (1..10).asFlow().mapWithPermits(s, { if (it == 5) throw ArithmeticException() else 1L }) {
                delay(1_000); it
            }.collect()
        }
        assertIdle(s)
        assertThrowsSuspending<IllegalStateException> {
            flow { emit(1); emit(2); delay(10); error("upstream") }.mapWithPermits(s) { delay(1_000); it }.collect()
        }
        assertIdle(s)
    }

    @Test
    fun cancellingTheCollectorGivesEveryPermitBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(3)
        val job = launch { (1..100).asFlow().mapWithPermits(s) { delay(1_000); it }.collect() }
        advanceTimeBy(1_500)
        runCurrent()
        assertEquals(0, s.availablePermits())
        job.cancelAndJoin()
        assertIdle(s)
    }

    @Test
    fun downstreamStoppingEarlyGivesEveryPermitBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(5)
        val results = generateSequence(1) { it + 1 }.asFlow().mapWithPermits(s) { delay(10); it }.take(7).toList()
        assertEquals((1..7).toList(), results)
        assertIdle(s)
    }

    @Test
    fun failingCollectorGivesEveryPermitBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(5)
        assertThrowsSuspending<IllegalStateException> {
            (1..50).asFlow().mapWithPermits(s) { delay(10); it }.collect { if (it == 4) error("downstream") }
        }
        assertIdle(s)
    }

    @Test
    fun upstreamIsNotCollectedFarAhead() = runTest(timeout = 10.seconds) {
        // Weight 0 needs no permits, so only the window (16 for a ceiling of 4) holds upstream back.
        val s = Semaphore.create(4)
        val taken = AtomicInteger()
        val emitted = AtomicInteger()
        val firstDone = CompletableDeferred<Unit>()
        val job = launch {
            generateSequence(0) { it + 1 }.asFlow().onEach { taken.incrementAndGet() }
                .mapWithPermits(s, { 0L }) { if (it == 0) firstDone.await(); it }
                .collect { emitted.incrementAndGet(); delay(100) }
        }
        advanceTimeBy(10_000)
        runCurrent()
        assertEquals(minWindow + 1, taken.get(), "the window and one element waiting for a place")
        firstDone.complete(Unit)
        advanceTimeBy(1_050)
        runCurrent()
        assertEquals(11, emitted.get())
        assertEquals(emitted.get() + minWindow, taken.get())
        job.cancelAndJoin()
        assertIdle(s)
    }

    @Test
    fun slowCollectorHoldsUpstreamBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        val taken = AtomicInteger()
        val job = launch {
            (1..1_000).asFlow().onEach { taken.incrementAndGet() }.mapWithPermits(s) { it }
                .collect { delay(1_000) }
        }
        advanceTimeBy(10_500)
        runCurrent()
        assertTrue(taken.get() <= 11 + minWindow + 2, "taken ${taken.get()} with 10 or 11 emitted")
        job.cancelAndJoin()
        assertIdle(s)
    }

    @Test
    fun emptyFlowAndClosedSemaphore() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        assertEquals(emptyList<Int>(), emptyFlow<Int>().mapWithPermits(s) { it }.toList())
        s.close()
        assertThrowsSuspending<SemaphoreClosedException> { flowOf(1).mapWithPermits(s) { it }.collect() }
    }

    @Test
    fun manyElementsOnARealDispatcher() = runTest(timeout = 20.seconds) {
        val s = Semaphore.create(16)
        val tracker = HeldTracker()
        val results = withContext(Dispatchers.Default) {
            (1..20_000).asFlow().mapWithPermits(s, { (it % 4).toLong() }) { tracker.hold(it % 4L) { it } }.toList()
        }
        assertEquals((1..20_000).toList(), results)
        tracker.assertPeakAtMost(16)
        assertIdle(s)
    }
}
