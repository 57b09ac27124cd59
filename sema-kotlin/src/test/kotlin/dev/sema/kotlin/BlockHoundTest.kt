package dev.sema.kotlin

import dev.sema.Semaphore
import java.util.ServiceLoader
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.asFlow
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withContext
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import reactor.blockhound.BlockHound
import reactor.blockhound.BlockingOperationError
import reactor.blockhound.integration.BlockHoundIntegration

/**
 * With BlockHound installed (this module's integration and kotlinx-coroutines-debug's, found by ServiceLoader),
 * contended acquires, cancellations and releases on `Dispatchers.Default` report no blocking call, and a real one
 * still is reported. Surefire runs each test class in its own JVM, so BlockHound stays here.
 */
@Timeout(120)
class BlockHoundTest {

    companion object {
        @JvmStatic
        @BeforeAll
        fun installBlockHound() {
            BlockHound.install()
        }
    }

    @Test
    fun integrationIsFoundByServiceLoader() {
        val found = ServiceLoader.load(BlockHoundIntegration::class.java).map { it.javaClass }
        assertTrue(found.any { it == SemaBlockHoundIntegration::class.java }, "found: $found")
    }

    @Test
    fun contendedCoroutinesBlockNoThread() = runTest(timeout = 100.seconds) {
        val s = Semaphore.create(4)
        val tracker = HeldTracker()
        withContext(Dispatchers.Default) {
            coroutineScope {
                repeat(20_000) { i ->
                    val job = launch { s.withPermit((i % 3).toLong()) { tracker.hold(i % 3L) { yield() } } }
                    if (i % 5 == 0) launch { yield(); job.cancel() }
                }
                repeat(20) {
                    launch { (1..200).asFlow().mapWithPermits(s, { it % 4L }) { yield(); it }.collect() }
                }
            }
        }
        tracker.assertPeakAtMost(4)
        assertIdle(s)
    }

    @Test
    fun blockingCallResumedInsideAReleaseIsStillReported() = runTest(timeout = 10.seconds) {
        // The release on a Default worker grants the waiter, whose Unconfined continuation runs inline, inside the
        // release: the allowed lock section must not cover it.
        val s = Semaphore.create(1)
        val thrown = withContext(Dispatchers.Default) {
            val held = s.acquirePermit()
            val waiter = async(Dispatchers.Unconfined) {
                runCatching { s.withPermit { Thread.sleep(1) } }.exceptionOrNull()
            }
            while (s.queueLength() == 0) yield()
            held.close()
            waiter.await()
        }
        assertTrue(thrown is BlockingOperationError, "thrown: $thrown")
        assertIdle(s)
    }

    @Test
    fun blockingCallInAPermitIsStillReported() = runTest(timeout = 10.seconds) {
        val s = Semaphore.create(1)
        val thrown = withContext(Dispatchers.Default) {
            runCatching { s.withPermit { Thread.sleep(1) } }.exceptionOrNull()
        }
        assertTrue(thrown is BlockingOperationError, "thrown: $thrown")
        assertIdle(s)
    }
}
