package dev.sema.kotlin

import dev.sema.Semaphore
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.currentTime
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withContext
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

@Timeout(120)
class WithPermitTest {

    @Test
    fun blockRunsHoldingThePermitsAndReturnsItsValue() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(5)
        val result = s.withPermit(3) {
            assertEquals(2, s.availablePermits())
            delay(1_000)
            "done"
        }
        assertEquals("done", result)
        assertEquals(1_000, currentTime)
        assertIdle(s)
        assertEquals(4, s.withPermit { s.availablePermits() })
    }

    @Test
    fun failingBlockGivesThePermitsBackAndRethrows() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        val boom = IllegalStateException("boom")
        val thrown = assertThrowsSuspending<IllegalStateException> { s.withPermit(2) { delay(10); throw boom } }
        assertSame(boom, thrown)
        assertIdle(s)
    }

    @Test
    fun cancellationDuringTheBlockGivesThePermitsBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        val started = CompletableDeferred<Unit>()
        val job = launch { s.withPermit(2) { started.complete(Unit); awaitCancellation() } }
        started.await()
        assertEquals(0, s.availablePermits())
        job.cancelAndJoin()
        assertIdle(s)
    }

    @Test
    fun cancellationBeforeTheGrantDoesNotRunTheBlock() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        var ran = false
        val job = launch { s.withPermit { ran = true } }
        runCurrent()
        assertEquals(1, s.queueLength())
        job.cancelAndJoin()
        held.close()
        assertFalse(ran)
        assertIdle(s)
    }

    @Test
    fun grantRacingTheCancellationDoesNotRunTheBlock() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        var ran = false
        val job = launch { s.withPermit { ran = true } }
        runCurrent()
        held.close() // granted, not yet dispatched
        job.cancel()
        runCurrent()
        assertFalse(ran)
        assertTrue(job.isCancelled)
        assertIdle(s)
    }

    @Test
    fun hundredThousandCoroutinesShareSixteenPermits() = runTest(timeout = 100.seconds) {
        val s = Semaphore.create(16)
        val tracker = HeldTracker()
        val done = AtomicInteger()
        withContext(Dispatchers.Default) {
            coroutineScope {
                repeat(100_000) {
                    launch {
                        s.withPermit {
                            tracker.hold(1) {
                                assertTrue(s.availablePermits() >= 0)
                                yield()
                            }
                        }
                        done.incrementAndGet()
                    }
                }
            }
        }
        assertEquals(100_000, done.get())
        tracker.assertPeakAtMost(16)
        assertIdle(s)
    }

    @Test
    fun hundredThousandCoroutinesQueuedAtOnceAllComplete() = runTest(timeout = 100.seconds) {
        // All of them queue behind a held semaphore first, then the limit is handed on from one to the next.
        val s = Semaphore.create(16)
        val tracker = HeldTracker()
        val done = AtomicInteger()
        val held = s.acquirePermit(16)
        coroutineScope {
            repeat(100_000) {
                launch {
                    s.withPermit { tracker.hold(1) { yield() } }
                    done.incrementAndGet()
                }
            }
            runCurrent()
            assertEquals(100_000, s.queueLength())
            held.close()
        }
        assertEquals(100_000, done.get())
        tracker.assertPeakAtMost(16)
        assertIdle(s)
    }
}
