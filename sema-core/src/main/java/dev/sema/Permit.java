package dev.sema;

/**
 * Permits held from one {@link Semaphore}, released exactly once.
 *
 * <p>A {@code Permit} is returned by every successful acquire and owns the permits it holds until
 * they are released ({@link #close()}, {@link #release(long)}), moved to another {@code Permit}
 * ({@link #split(long)}, {@link #merge(Permit)}) or consumed for good ({@link #forget()}).
 * Because permits can only be given back through the object that holds them, giving back more
 * than was taken is impossible by construction. Use it in try-with-resources:
 *
 * {@snippet :
 * try (Permit p = semaphore.acquire(3)) {
 *     // at most permits() units of work run at once
 * }
 * }
 *
 * <h2>Thread safety</h2>
 * All methods are thread-safe and may be called from any thread: a permit acquired on one thread
 * may be released on another. Two racing {@code close()} calls release once.
 *
 * <h2>Memory consistency effects</h2>
 * Actions in a thread before it releases permits (by any method here) happen-before the actions
 * that follow a successful acquire that obtains those permits.
 *
 * <h2>Errors</h2>
 * Out-of-range arguments, merging a {@code Permit} of another semaphore, or merging a permit into
 * itself throw {@link IllegalArgumentException} and change nothing.
 */
public interface Permit extends AutoCloseable {

    /**
     * Returns how many permits this object holds now: what was acquired, less what was released,
     * split off or forgotten, plus what was merged in; {@code 0} once released.
     *
     * @return the permits held, {@code >= 0}
     */
    long permits();

    /**
     * Releases every permit this object holds, waking waiters they can serve. Idempotent: once
     * empty, further calls do nothing. Never fails, even after the semaphore was closed.
     */
    @Override
    void close();

    /**
     * Gives back part of the permits held; the rest stay held.
     *
     * @param permits how many to give back, {@code 0 <= permits <= permits()}
     * @throws IllegalArgumentException if {@code permits} is negative or more than held
     */
    void release(long permits);

    /**
     * Moves part of the permits held into a new {@code Permit} of the same semaphore, which is
     * then released independently. Nothing is released by the split itself.
     *
     * @param permits how many to move, {@code 0 <= permits <= permits()}
     * @return a new permit holding {@code permits}
     * @throws IllegalArgumentException if {@code permits} is negative or more than held
     */
    Permit split(long permits);

    /**
     * Takes over all of {@code other}'s permits; {@code other} ends empty. Merging into an empty
     * (for instance already closed) permit is allowed: it then holds the merged permits and a later
     * {@link #close()} releases them.
     *
     * @param other a permit of the same semaphore, not this one
     * @throws NullPointerException if {@code other} is {@code null}
     * @throws IllegalArgumentException if {@code other} is this permit or belongs to another semaphore
     */
    void merge(Permit other);

    /**
     * Keeps the permits held consumed for good: the semaphore's limit drops by {@link #permits()}
     * (not below 0) and this permit ends empty, so nothing is released. Waiters are not woken by a
     * forget, except {@link Semaphore#awaitIdle()} callers when nothing else is held.
     */
    void forget();
}
