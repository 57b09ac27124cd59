package dev.sema.kotlin

import dev.sema.Permit
import dev.sema.Rejection
import dev.sema.Semaphore
import dev.sema.SemaphoreClosedException
import dev.sema.SemaphoreListener
import java.util.concurrent.TimeoutException
import java.util.concurrent.atomic.AtomicLong
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

@Timeout(30)
class AcquirePermitTest {

    @Test
    fun acquirePermitTakesPermitsThatCloseGivesBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(4)
        val permit = s.acquirePermit(3)
        assertEquals(3, permit.permits())
        assertEquals(1, s.availablePermits())
        permit.close()
        permit.close()
        assertIdle(s)
        s.acquirePermit().use { assertEquals(1, it.permits()) }
        s.acquirePermit(0).use { assertEquals(0, it.permits()) }
        assertIdle(s)
    }

    @Test
    fun waiterSuspendsUntilPermitsAreReleased() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        val held = s.acquirePermit(2)
        val waiter = async { s.acquirePermit(2) }
        runCurrent()
        assertEquals(1, s.queueLength())
        assertFalse(waiter.isCompleted)
        held.close()
        val granted = waiter.await()
        assertEquals(2, granted.permits())
        assertEquals(0, s.availablePermits())
        granted.close()
        assertIdle(s)
    }

    @Test
    fun waitersAreServedInArrivalOrder() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        val order = mutableListOf<Int>()
        val jobs = (1..5).map { i -> launch { s.withPermit { order += i; yield() } } }
        runCurrent()
        assertEquals(5, s.queueLength())
        held.close()
        jobs.forEach { it.join() }
        assertEquals(listOf(1, 2, 3, 4, 5), order)
        assertIdle(s)
    }

    @Test
    fun cancelledWaiterLeavesTheQueueAndTakesNothing() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        val waiter = launch { s.acquirePermit().close() }
        runCurrent()
        assertEquals(1, s.queueLength())
        waiter.cancelAndJoin()
        assertTrue(waiter.isCancelled)
        assertEquals(0, s.queueLength())
        held.close()
        assertIdle(s)
    }

    @Test
    fun grantRacingTheCancellationIsGivenBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        var got: Permit? = null
        val waiter = launch { got = s.acquirePermit() }
        runCurrent()
        assertEquals(1, s.queueLength())
        // The release grants the waiter's future and resumes its continuation, which the test dispatcher has not
        // run yet; the cancellation then comes before the coroutine sees its permit.
        held.close()
        assertEquals(0, s.availablePermits(), "granted to the waiter")
        waiter.cancel()
        runCurrent()
        assertTrue(waiter.isCancelled)
        assertEquals(null, got)
        assertIdle(s)
    }

    @Test
    fun grantRacingTheCancellationIsGivenBackExactlyOnce() = runTest(timeout = 10.seconds) {
        val released = AtomicLong()
        val s = Semaphore.builder().permits(1).listener(object : SemaphoreListener {
            override fun released(semaphore: Semaphore, permits: Long, heldNanos: Long) {
                released.addAndGet(permits)
            }
        }).build()
        val held = s.acquirePermit()
        val waiter = launch { s.acquirePermit().close() }
        runCurrent()
        held.close()
        waiter.cancel()
        runCurrent()
        assertEquals(2, released.get(), "the held permit, then the waiter's undelivered grant, each once")
        assertIdle(s)
    }

    @Test
    fun coroutineCancelledOnEntryTakesNothing() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(3)
        val job = launch(start = CoroutineStart.UNDISPATCHED) {
            coroutineScope {
                coroutineContext[Job]!!.cancel()
                assertThrowsSuspending<CancellationException> { s.acquirePermit(2) }
                assertThrowsSuspending<CancellationException> { s.acquirePermit(2, 1.seconds) }
            }
        }
        job.join()
        assertIdle(s)
    }

    @Test
    fun outOfRangeRequestFailsAtOnceAndChangesNothing() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(16)
        val held = s.acquirePermit(16)
        val waiter = launch { s.acquirePermit(1).close() }
        runCurrent()
        for (bad in listOf(-1L, 17L, Long.MAX_VALUE)) {
            val e = assertThrowsSuspending<IllegalArgumentException> { s.acquirePermit(bad) }
            assertTrue(e.message!!.contains(bad.toString()), e.message)
            assertThrowsSuspending<IllegalArgumentException> { s.acquirePermit(bad, 1.seconds) }
            var ran = false
            assertThrowsSuspending<IllegalArgumentException> { s.withPermit(bad) { ran = true } }
            assertFalse(ran)
            assertEquals(1, s.queueLength())
            assertEquals(0, s.availablePermits())
        }
        held.close()
        waiter.join()
        assertIdle(s)
    }

    @Test
    fun timedAcquireFailsWithTimeoutExceptionAndWithdraws() = runTest(timeout = 10.seconds) {
        val rejections = mutableListOf<Rejection>()
        val s = Semaphore.builder().permits(2).listener(object : SemaphoreListener {
            override fun rejected(semaphore: Semaphore, permits: Long, why: Rejection, waitNanos: Long) {
                synchronized(rejections) { rejections += why }
            }
        }).build()
        val held = s.acquirePermit(2)
        val e = assertThrowsSuspending<TimeoutException> { s.acquirePermit(1, 50.milliseconds) }
        assertTrue(e.message!!.contains(s.name()), e.message)
        assertThrowsSuspending<TimeoutException> { s.acquirePermit(1, Duration.ZERO) }
        assertThrowsSuspending<TimeoutException> { s.acquirePermit(1, (-5).seconds) }
        assertThrowsSuspending<TimeoutException> { s.acquirePermit(1, -Duration.INFINITE) }
        assertEquals(0, s.queueLength())
        synchronized(rejections) { assertEquals(List(4) { Rejection.TIMEOUT }, rejections) }
        held.close()
        assertIdle(s)
    }

    @Test
    fun timedAcquireSucceedsWithinItsTimeout() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(2)
        s.acquirePermit(2, Duration.ZERO).close()
        s.acquirePermit(1, (-1).seconds).close()
        val held = s.acquirePermit(2)
        val waiter = async { s.acquirePermit(2, Duration.INFINITE) }
        val timed = async { s.acquirePermit(1, 10.seconds) }
        runCurrent()
        assertEquals(2, s.queueLength())
        held.close()
        waiter.await().close()
        timed.await().close()
        assertIdle(s)
    }

    @Test
    fun withTimeoutEndsTheWaitAsACancellation() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        assertThrowsSuspending<TimeoutCancellationException> { withTimeout(5.seconds) { s.acquirePermit() } }
        assertEquals(0, s.queueLength())
        held.close()
        assertIdle(s)
    }

    @Test
    fun closedSemaphoreFailsQueuedAndLaterAcquires() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val held = s.acquirePermit()
        val waiter = async { runCatching { s.acquirePermit() } }
        val timed = async { runCatching { s.acquirePermit(1, 10.seconds) } }
        runCurrent()
        s.close()
        assertTrue(waiter.await().exceptionOrNull() is SemaphoreClosedException)
        assertTrue(timed.await().exceptionOrNull() is SemaphoreClosedException)
        assertThrowsSuspending<SemaphoreClosedException> { s.acquirePermit() }
        assertThrowsSuspending<SemaphoreClosedException> { s.withPermit { } }
        held.close()
        assertEquals(1, s.availablePermits())
    }

    @Test
    fun suspendedWaiterBlocksNoThread() = runTest(timeout = 10.seconds) {
        // One thread for both: the waiter suspends, so the releasing coroutine runs on the same thread.
        val s = Semaphore.create(1)
        withContext(Dispatchers.Default.limitedParallelism(1)) {
            val held = s.acquirePermit()
            val waiter = launch { s.withPermit { } }
            while (s.queueLength() == 0) yield()
            held.close()
            waiter.join()
        }
        assertIdle(s)
    }

    @Test
    fun cancelledWaiterOnARealDispatcherLeavesEverythingBack() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        withContext(Dispatchers.Default) {
            repeat(200) {
                val held = s.acquirePermit()
                val waiter = launch { s.withPermit { awaitCancellation() } }
                while (s.queueLength() == 0 && !waiter.isCompleted) yield()
                if (it % 2 == 0) {
                    held.close()
                    waiter.cancel()
                } else {
                    waiter.cancel()
                    held.close()
                }
                waiter.join()
                assertIdle(s)
            }
        }
    }
}
