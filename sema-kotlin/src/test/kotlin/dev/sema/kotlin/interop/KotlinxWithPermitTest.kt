package dev.sema.kotlin.interop

import dev.sema.kotlin.withPermit
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.sync.withPermit
import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import dev.sema.Semaphore as SemaSemaphore
import kotlinx.coroutines.sync.Semaphore as KotlinxSemaphore

/** Both `withPermit`s imported in one file: each semaphore's type picks its own, with no ambiguity. */
@Timeout(10)
class KotlinxWithPermitTest {

    @Test
    fun eachSemaphoreResolvesToItsOwnWithPermit() = runTest(timeout = 5.seconds) {
        val sema = SemaSemaphore.create(2)
        val kotlinx = KotlinxSemaphore(2)
        val seen = sema.withPermit(2) {
            kotlinx.withPermit { sema.availablePermits() to kotlinx.availablePermits }
        }
        assertEquals(0L to 1, seen)
        assertEquals(2, sema.availablePermits())
        assertEquals(2, kotlinx.availablePermits)
        assertEquals(1L, sema.withPermit { sema.availablePermits() })
    }
}
