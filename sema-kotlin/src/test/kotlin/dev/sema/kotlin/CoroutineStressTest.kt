package dev.sema.kotlin

import dev.sema.Semaphore
import dev.sema.SemaphoreListener
import java.security.SecureRandom
import java.util.concurrent.TimeoutException
import java.util.concurrent.atomic.AtomicLong
import kotlin.random.Random
import kotlin.time.Duration.Companion.microseconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.asFlow
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Tag
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * Random weights, waits, timeouts, failures and cancellations (before the grant, racing it, during the work) from
 * many coroutines on the default dispatcher and on virtual threads: never more than the limit is held, every
 * grant is given back exactly once, and at the end everything is back. `-Dsema.seed=N` replays a run.
 */
@Tag("stress")
@Timeout(120)
class CoroutineStressTest {

    private class Boom : RuntimeException("boom")

    @Test
    fun randomCancelsTimeoutsAndFailuresLeaveEveryPermitBack() {
        val seed = seed("randomCancelsTimeoutsAndFailuresLeaveEveryPermitBack")
        val acquired = AtomicLong()
        val released = AtomicLong()
        val limit = 8L
        val s = Semaphore.builder().permits(limit).listener(object : SemaphoreListener {
            override fun acquired(semaphore: Semaphore, permits: Long, waitNanos: Long) {
                acquired.addAndGet(permits)
            }

            override fun released(semaphore: Semaphore, permits: Long, heldNanos: Long) {
                released.addAndGet(permits)
            }
        }).build()
        val tracker = HeldTracker()
        val outcomes = java.util.concurrent.ConcurrentHashMap<String, AtomicLong>()
        fun count(what: String) = outcomes.computeIfAbsent(what) { AtomicLong() }.incrementAndGet()

        runBlocking(Dispatchers.Default) {
            coroutineScope {
                repeat(4) { worker ->
                    launch {
                        val random = Random(seed + worker)
                        val deadline = System.nanoTime() + 3_000_000_000L
                        while (System.nanoTime() < deadline) {
                            val batch = List(200) { random.nextLong() }
                            coroutineScope {
                                for (r in batch) {
                                    launch { step(Random(r), s, limit, tracker, ::count) }
                                        .also { job -> maybeCancel(Random(r xor 1), job) }
                                }
                            }
                        }
                    }
                }
            }
        }
        println("outcomes (seed $seed): ${outcomes.toSortedMap()}")
        tracker.assertPeakAtMost(limit)
        assertIdle(s)
        assertEquals(acquired.get(), released.get(), "every grant given back exactly once (seed $seed)")
    }

    private suspend fun step(random: Random, s: Semaphore, limit: Long, tracker: HeldTracker, count: (String) -> Long) {
        val weight = random.nextLong(0, limit + 1)
        try {
            when (random.nextInt(4)) {
                0 -> s.withPermit(weight) {
                    tracker.hold(weight) { work(random) }
                }
                1 -> s.acquirePermit(weight, random.nextLong(0, 500).microseconds).use {
                    tracker.hold(weight) { work(random) }
                }
                2 -> s.acquirePermit(weight).use {
                    tracker.hold(weight) { work(random) }
                }
                else -> (1..random.nextInt(1, 6)).asFlow()
                    .mapWithPermits(s, { random.nextLong(0, limit + 1) }) { work(random) }
                    .collect()
            }
            count("done")
        } catch (e: TimeoutException) {
            count("timed out")
        } catch (e: Boom) {
            count("failed")
        } catch (e: CancellationException) {
            count("cancelled")
            throw e
        }
    }

    private suspend fun work(random: Random) {
        when (random.nextInt(6)) {
            0 -> delay(random.nextLong(0, 2))
            1 -> throw Boom()
            2 -> withContext(Dispatchers.IO) { yield() }
            else -> yield()
        }
    }

    /** Cancels a third of the jobs, at once (before the grant) or a little later (racing it, or in the work). */
    private fun kotlinx.coroutines.CoroutineScope.maybeCancel(random: Random, job: Job) {
        when (random.nextInt(6)) {
            0 -> job.cancel()
            1 -> launch { yield(); job.cancel() }
            2 -> launch { repeat(random.nextInt(1, 20)) { yield() }; job.cancel() }
            else -> Unit
        }
    }

    @Test
    fun virtualThreadsAndCoroutinesShareOneLimit() = runBlocking(Dispatchers.Default) {
        val seed = seed("virtualThreadsAndCoroutinesShareOneLimit")
        val limit = 16L
        val s = Semaphore.create(limit)
        val tracker = HeldTracker()
        val threads = List(32) { i ->
            Thread.ofVirtual().start {
                val random = Random(seed + i)
                repeat(2_000) {
                    val w = random.nextLong(1, 5)
                    s.acquire(w).use { tracker.enter(w); Thread.yield(); tracker.exit(w) }
                }
            }
        }
        coroutineScope {
            repeat(20_000) { i ->
                val random = Random(seed - i)
                val job = launch { s.withPermit(random.nextLong(1, 5)) { yield() } }
                if (random.nextInt(4) == 0) launch { yield(); job.cancel() }
            }
        }
        withContext(Dispatchers.IO) { threads.forEach { it.join() } }
        tracker.assertPeakAtMost(limit)
        assertIdle(s)
    }

    private fun seed(test: String): Long {
        val given = System.getProperty("sema.seed")
        val seed = if (given.isNullOrBlank()) SecureRandom().nextLong() else java.lang.Long.decode(given.trim())
        println("$test: seed $seed (replay with -Dsema.seed=$seed)")
        return seed
    }
}
