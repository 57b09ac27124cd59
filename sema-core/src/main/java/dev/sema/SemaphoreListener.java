package dev.sema;

/**
 * Sees what a {@link Semaphore} does: every acquire request's end, every give-back, leaks, limit changes
 * and the close. Register one with {@link Semaphore#addListener} or {@link Semaphore.Builder#listener};
 * every method does nothing unless overridden.
 *
 * {@snippet :
 * Semaphore db = Semaphore.builder().permits(10).listener(new SemaphoreListener() {
 *     @Override
 *     public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
 *         System.out.println(s.name() + ": " + why + " after " + waitNanos / 1_000 + " us");
 *     }
 * }).build();
 * }
 *
 * <h2>Which events</h2>
 * Every acquire request that ends (blocking, timed, {@code tryAcquire}, async, and the acquires that
 * {@code withPermits} and {@link Parallel} make) produces exactly one {@link #acquired} or one
 * {@link #rejected}, whatever races it ran into; a request for 0 permits produces {@code acquired} with 0.
 * {@link #released} fires each time permits go back ({@link Permit#close()}, {@link Permit#release(long)}),
 * never for a {@code Permit} already empty. {@link Permit#split} and {@link Permit#merge} move permits
 * without events; {@link Permit#forget()} produces {@link #limitChanged} only; permits returned by leak
 * detection produce {@link #leaked}, not {@code released}. {@code awaitIdle} is not an acquire and
 * produces nothing. A {@link dev.sema.Semaphore} on Redis reports this process's own requests and
 * give-backs; its limit changes and close only when made through this process.
 *
 * <h2>Threading</h2>
 * Listeners run synchronously on the thread where the event happens (the acquiring thread, the thread
 * whose release granted a waiter, a timer thread for an async timeout), after the state change and
 * outside every internal lock, in the order they were added. They may run concurrently with
 * themselves, so they must be thread-safe; they must be quick and must not block. A listener may call
 * the semaphore's own methods (a query, a release), but an acquire that waits there would block the
 * thread that reports. An exception thrown by a listener is caught and logged ({@link System.Logger},
 * {@code WARNING}, the first time for each listener); it never changes the semaphore's state, the
 * caller's outcome, or the other listeners' calls.
 *
 * <h2>Times</h2>
 * {@code waitNanos} is how long the request was queued (0 when it was served or refused at once), and
 * {@code heldNanos} how long the permits given back were held, both from {@link System#nanoTime()}.
 * Clocks are read only while a listener is registered: a request that queued, or permits that were
 * granted, before the first listener was added report {@code -1} (unknown).
 *
 * <h2>Cost</h2>
 * With no listener, nothing is called and no clock is read: the uncontended path costs what it costs
 * without listeners. With listeners, each event is one call per listener, plus a {@code nanoTime()}
 * read per grant and per give-back (for {@code heldNanos}) and per queued request (for
 * {@code waitNanos}).
 */
public interface SemaphoreListener {

    /**
     * An acquire request was granted.
     *
     * @param semaphore the semaphore
     * @param permits the permits granted
     * @param waitNanos how long it was queued: 0 when granted at once, -1 when unknown
     */
    default void acquired(Semaphore semaphore, long permits, long waitNanos) {
    }

    /**
     * An acquire request ended without permits.
     *
     * @param semaphore the semaphore
     * @param permits the permits requested
     * @param why why it ended
     * @param waitNanos how long it was queued: 0 when refused at once, -1 when unknown
     */
    default void rejected(Semaphore semaphore, long permits, Rejection why, long waitNanos) {
    }

    /**
     * Permits went back to the semaphore ({@link Permit#close()} or {@link Permit#release(long)}).
     *
     * @param semaphore the semaphore
     * @param permits how many went back, at least 1
     * @param heldNanos how long since they were granted, -1 when unknown
     */
    default void released(Semaphore semaphore, long permits, long heldNanos) {
    }

    /**
     * Leak detection found a {@link Permit} unreachable while it held permits, and returned them.
     *
     * @param semaphore the semaphore
     * @param permits how many it returned
     */
    default void leaked(Semaphore semaphore, long permits) {
    }

    /**
     * The limit changed ({@code setPermits}, {@code addPermits}, {@code reducePermits},
     * {@link Permit#forget()}, a refill); not reported when it stayed the same.
     *
     * @param semaphore the semaphore
     * @param oldLimit the limit before
     * @param newLimit the limit after
     */
    default void limitChanged(Semaphore semaphore, long oldLimit, long newLimit) {
    }

    /**
     * The semaphore was closed (reported once, by the first {@code close()}).
     *
     * @param semaphore the semaphore
     */
    default void closed(Semaphore semaphore) {
    }
}
