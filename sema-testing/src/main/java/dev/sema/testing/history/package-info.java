/**
 * Histories of a chaos run and their checker: processes record what they do with semaphores, a scheduler
 * records what it does to them, and the {@link dev.sema.testing.history.Checker} verifies the merged
 * history. Plain JDK: usable from any process of the run.
 *
 * <h2>Recording</h2>
 * Each process opens a {@link dev.sema.testing.history.HistoryWriter#toFile(java.nio.file.Path)} on its
 * own file and records through a {@link dev.sema.testing.history.Recorder} named after it; tests that run
 * in one JVM use {@link dev.sema.testing.history.HistoryWriter#inMemory()}. The line format is described
 * in {@link dev.sema.testing.history.HistoryFormat}. The checker's verdicts are sound only if the lines
 * are written at the right moments:
 * <ul>
 *   <li>a worker writes {@code start} first and {@code exit} last, after every request has its outcome;
 *   <li>{@code invoke} before the request is sent; {@code ok} once the permit is in hand; {@code fail}
 *       once the failure is seen; {@code lost} when {@code leaseLost()} completes; {@code release} just
 *       before {@code close()}: the belief the history shows then lies within the real holding;
 *   <li>the scheduler writes {@code kill} for a process once it is dead (after SIGKILL and waiting for
 *       it), so none of the process's lines comes later; {@code stop} once SIGSTOP is sent, {@code cont}
 *       once SIGCONT is sent; a begin and an end for each fault (both at once for an instant one, such as
 *       a SIGKILL); {@code sample} lines while the run goes on (at least a few per lease, so that a
 *       stranded stretch is seen), {@code final} lines after every worker ended;
 *   <li>a semaphore is declared (limit, lease) by whoever creates it, before it is used, the same way by
 *       everyone;
 *   <li>a process started again begins with {@code start} and may reuse its request ids, in the same file
 *       (the writer cuts a torn last line off when it opens it) or a new one.
 * </ul>
 *
 * <h2>Checking</h2>
 * {@code java -cp sema-testing.jar dev.sema.testing.history.Checker [--grace=MS] [--slack=MS] [--noise=MS]
 * *.history} merges the files ({@link dev.sema.testing.history.HistoryReader}), prints the
 * {@link dev.sema.testing.history.Report} and exits with 0 if no rule was broken, 1 if one was, 2 if the
 * files could not be read.
 */
package dev.sema.testing.history;
