@file:JvmName("BenchmarkRuns")

package dev.sema.kotlin.bench

import dev.sema.kotlin.withPermit
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.sync.withPermit
import kotlinx.coroutines.yield
import dev.sema.Semaphore as SemaSemaphore
import kotlinx.coroutines.sync.Semaphore as KotlinxSemaphore

// The coroutine side of WithPermitBenchmark (Java, for JMH's annotation processor): each run is one runBlocking.

/** [times] withPermit calls in a row on one coroutine: never contended. */
fun semaUncontended(semaphore: SemaSemaphore, times: Int): Long = runBlocking {
    var sum = 0L
    repeat(times) { sum += semaphore.withPermit { semaphore.permits() } }
    sum
}

/** As [semaUncontended], on kotlinx's semaphore. */
fun kotlinxUncontended(semaphore: KotlinxSemaphore, times: Int): Long = runBlocking {
    var sum = 0L
    repeat(times) { sum += semaphore.withPermit { semaphore.availablePermits.toLong() } }
    sum
}

/** [coroutines] coroutines on Dispatchers.Default, each taking one permit around a yield. */
fun semaContended(semaphore: SemaSemaphore, coroutines: Int) = runBlocking(Dispatchers.Default) {
    coroutineScope { repeat(coroutines) { launch { semaphore.withPermit { yield() } } } }
}

/** As [semaContended], on kotlinx's semaphore. */
fun kotlinxContended(semaphore: KotlinxSemaphore, coroutines: Int) = runBlocking(Dispatchers.Default) {
    coroutineScope { repeat(coroutines) { launch { semaphore.withPermit { yield() } } } }
}
