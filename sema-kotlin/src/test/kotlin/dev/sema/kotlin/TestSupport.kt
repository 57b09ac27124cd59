package dev.sema.kotlin

import dev.sema.Semaphore
import java.util.concurrent.atomic.AtomicLong
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assertions.fail

/** Runs [block] and returns what it threw, failing unless it is a [T]. */
internal suspend inline fun <reified T : Throwable> assertThrowsSuspending(block: suspend () -> Unit): T {
    try {
        block()
    } catch (e: Throwable) {
        if (e is T) return e
        throw AssertionError("expected ${T::class.java.name}, got $e", e)
    }
    fail<Unit>("expected ${T::class.java.name}, nothing was thrown")
    throw AssertionError()
}

/** Every permit back and nobody queued. */
internal fun assertIdle(semaphore: Semaphore) {
    assertEquals(0, semaphore.queueLength(), "queued: $semaphore")
    assertEquals(semaphore.permits(), semaphore.availablePermits(), "held: $semaphore")
}

/** Counts permits held through [hold], and the most ever held at once. */
internal class HeldTracker {
    private val held = AtomicLong()
    private val peak = AtomicLong()

    fun enter(permits: Long) {
        val now = held.addAndGet(permits)
        peak.accumulateAndGet(now, ::maxOf)
    }

    fun exit(permits: Long) {
        held.addAndGet(-permits)
    }

    suspend fun <T> hold(permits: Long, block: suspend () -> T): T {
        enter(permits)
        try {
            return block()
        } finally {
            exit(permits)
        }
    }

    fun held(): Long = held.get()

    fun peak(): Long = peak.get()

    fun assertPeakAtMost(limit: Long) {
        assertTrue(peak() <= limit, "held at once: ${peak()}, limit $limit")
        assertEquals(0, held(), "still held")
    }
}
