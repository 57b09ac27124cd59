package dev.sema.kotlin.readme

// README.md, "Kotlin coroutines": the example below is that section's code block, verbatim (readmeShowsThisExample).
// README example start
import dev.sema.Semaphore
import dev.sema.kotlin.acquirePermit
import dev.sema.kotlin.mapWithPermits
import dev.sema.kotlin.withPermit
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.toList

val db: Semaphore = Semaphore.create(10)  // at most 10 permits in use at once

suspend fun query(sql: String): String {
    delay(10)  // stands for a non-blocking database call
    return "rows of $sql"
}

// Suspends while the permits are taken (no thread waits); gives the permit back however the block ends.
suspend fun user(id: Long): String = db.withPermit { query("user $id") }

// Each report weighs 2 permits; they run concurrently and their results come in the order of the ids.
suspend fun reports(ids: Flow<Long>): List<String> =
    ids.mapWithPermits(db, permits = { 2L }) { id -> query("report $id") }.toList()

// Gives up after a second with java.util.concurrent.TimeoutException, as the Java API does.
suspend fun export(): String = db.acquirePermit(10, 1.seconds).use { query("export") }
// README example end

@org.junit.jupiter.api.Timeout(10)
class ReadmeExampleTest {

    @org.junit.jupiter.api.Test
    fun exampleRunsAndGivesEveryPermitBack() = kotlinx.coroutines.test.runTest(timeout = 5.seconds) {
        org.junit.jupiter.api.Assertions.assertEquals("rows of user 7", user(7))
        org.junit.jupiter.api.Assertions.assertEquals(
            listOf("rows of report 1", "rows of report 2", "rows of report 3"),
            reports(kotlinx.coroutines.flow.flowOf(1L, 2L, 3L)),
        )
        org.junit.jupiter.api.Assertions.assertEquals("rows of export", export())
        org.junit.jupiter.api.Assertions.assertEquals(10, db.availablePermits())
    }

    @org.junit.jupiter.api.Test
    fun readmeShowsThisExample() {
        val source = java.nio.file.Files.readString(
            java.nio.file.Path.of("src/test/kotlin/dev/sema/kotlin/readme/ReadmeExampleTest.kt"))
        val example = source.substringAfter("// README example start\n").substringBefore("// README example end\n")
        val readme = java.nio.file.Files.readString(java.nio.file.Path.of("../README.md"))
        org.junit.jupiter.api.Assertions.assertTrue(
            readme.contains("```kotlin\n$example```\n"),
            "README.md's Kotlin example differs from this file's",
        )
    }
}
