package dev.sema;

import dev.sema.internal.Checks;
import dev.sema.internal.PartitionSpec;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A weighted counting semaphore whose permits are objects: a limit on how many permits may be held at
 * once, the permits held by unreleased {@link Permit}s, and a queue of waiters.
 *
 * <p>The <em>limit</em> ({@link #permits()}) lies between 0 and a fixed <em>ceiling</em>
 * ({@link #maxPermits()}) and may be changed at any time without blocking. {@link #availablePermits()}
 * is {@code permits() - held}, which is negative after the limit was lowered below what is held.
 *
 * {@snippet :
 * Semaphore db = Semaphore.create(10);
 * try (Permit p = db.acquire()) {
 *     // at most 10 of these run at once
 * }
 * }
 *
 * <h2>Fairness</h2>
 * With {@link Fairness#FIFO} (the default) waiters are served strictly in arrival order: the head
 * waiter is granted as soon as {@code availablePermits()} covers its request and nobody overtakes it,
 * so a large request at the head makes later small ones wait and is never starved. A new request takes
 * permits at once only when nobody is queued, so {@code tryAcquire} returns empty while waiters are
 * queued even if permits are free. With {@link Fairness#BARGING} a new request takes permits whenever
 * enough are available, whatever the queue; the queue itself is still served in strict FIFO order.
 * There, a release wakes a blocked thread at the head of the queue to take its permits itself rather
 * than handing them over, so a thread that releases and acquires again keeps running (as with a
 * non-fair {@code java.util.concurrent.Semaphore}); if a newcomer takes them first, the woken thread
 * waits on at the head. Async waiters, having no thread to wake, are granted directly.
 *
 * <h2>Requests</h2>
 * A request must be {@code >= 0} and {@code <= maxPermits()}; otherwise the call throws
 * {@link IllegalArgumentException} at once, naming both numbers, and nothing changes. A request of 0
 * succeeds at once with an empty {@code Permit}, even when waiters are queued (unless the semaphore is
 * closed). A request above the current limit but within the ceiling waits: the limit may be raised.
 * Programming errors ({@code IllegalArgumentException}, {@code NullPointerException}) are thrown by the
 * call itself, async forms included; outcomes of waiting (closed, timed out, cancelled) reach async
 * callers through the returned future.
 *
 * <h2>Timeouts</h2>
 * A timeout of zero or less behaves like {@code tryAcquire} but reports failure with
 * {@link TimeoutException}.
 *
 * <h2>Cancellation</h2>
 * A waiter leaves the queue when its thread is interrupted, its timeout expires, or its future is
 * completed by anyone else ({@code cancel}, {@code orTimeout}, {@code completeExceptionally},
 * {@code complete}). Exactly one outcome wins: a grant that loses the race to a cancellation gives its
 * permits straight back, so permits are never lost. When the head waiter leaves, the waiters behind it
 * are reconsidered at once.
 *
 * <h2>Interruption</h2>
 * Blocking acquires throw {@link InterruptedException}, clearing the interrupt status, if the thread is
 * interrupted on entry or while waiting. If a grant and an interrupt race, either the permit is
 * returned with the interrupt status set again, or the permits go back and
 * {@code InterruptedException} is thrown; never both, never neither. {@link #acquireUninterruptibly(long)}
 * is the exception: it waits through interrupts and sets the interrupt status again when it returns.
 *
 * <h2>Futures and their timeouts</h2>
 * A future of {@link #acquireAsync(long)} or {@link #awaitIdleAsync()} withdraws its request when it is
 * completed by anyone else ({@code cancel}, {@code orTimeout}, {@code completeExceptionally}). Waiting on it
 * with {@code get(timeout)} does not: the request stays queued after {@code get} gives up (and an
 * {@code awaitIdleAsync} left queued makes every later arrival queue behind it). Give up with
 * {@code future.orTimeout(...)} or {@code future.cancel(false)}, or use the timed acquires.
 *
 * <h2>Resizing</h2>
 * {@link #setPermits(long)}, {@link #addPermits(long)} and {@link #reducePermits(long)} never block
 * and never revoke held permits: lowering the limit below what is held makes later requests wait
 * until enough is released. Raising it serves waiters at once.
 *
 * <h2>Closing</h2>
 * {@link #close()} is idempotent. Every queued acquire then fails with
 * {@link SemaphoreClosedException}, and so does every later acquire of any kind. Permits already held
 * can still be released, and the counts keep reporting the truth. {@link #awaitIdle()} callers are not
 * failed: {@code close()} then {@code awaitIdle()} refuses new work, fails the waiting and waits until
 * every permit is back.
 *
 * <h2>Memory consistency effects</h2>
 * Actions in a thread before it releases permits happen-before the actions that follow a successful
 * acquire that obtains them, and actions before the last release happen-before an {@code awaitIdle}
 * that returns.
 *
 * <h2>Wake-ups</h2>
 * Blocked threads park and never pin a virtual thread. A virtual thread never spins; a platform thread
 * that is alone in a FIFO queue spins briefly (about a thousand spin-wait hints, microseconds) before it
 * parks, so that a hand-off reaches it running. Futures are completed outside
 * every internal lock, on the thread whose release or resize made the grant possible (or the thread
 * that cancelled). A release that lets many async waiters run never recurses without bound: grants
 * made by continuations are completed inline up to 16 levels deep, then iteratively, after the
 * continuation that made them returns, on the same thread. So a continuation that runs on the
 * completing thread ({@code thenAccept}, not {@code thenAcceptAsync}) must not block waiting for a
 * future its own release may grant: beyond that depth the grant is delivered only once it returns.
 * Blocking work belongs in an {@code ...Async} stage on an executor of its own.
 *
 * <h2>Bounds</h2>
 * Every count is a {@code long} bounded by {@link #MAX_PERMITS}; exceeding it throws
 * {@link IllegalArgumentException}. No arithmetic overflows.
 *
 * <h2>Implementations</h2>
 * This interface is implemented by Sema's own semaphores, the local one ({@link #create}, {@link #builder()})
 * and the one shared through Redis ({@code dev.sema.redis.RedisSemaphore}); it is not meant to be implemented
 * elsewhere, and later versions may add methods to it. An implementation that keeps its state in another
 * process may fail any call, queries and resizes included, with an unchecked exception of its own when that
 * process cannot be reached ({@code RedisSemaphoreException} for Redis).
 */
public interface Semaphore {

    /**
     * The largest limit, ceiling or request any semaphore accepts: 2<sup>50</sup>
     * ({@value}), enough to count the bytes of a petabyte, and small enough that every count is exact
     * in a double (as a distributed implementation's store may need).
     */
    long MAX_PERMITS = 1L << 50;

    /**
     * Creates a FIFO semaphore whose limit and ceiling are both {@code permits}.
     *
     * @param permits the limit and ceiling, {@code 0 <= permits <= MAX_PERMITS}
     * @return a new semaphore with a generated unique name
     * @throws IllegalArgumentException if {@code permits} is out of range
     */
    static Semaphore create(long permits) {
        return builder().permits(permits).build();
    }

    /**
     * Returns a builder. Defaults: limit 0, ceiling equal to the limit, {@link Fairness#FIFO}, a
     * generated unique name, {@link LeakDetection#OFF}, no refill.
     *
     * @return a new builder
     */
    static Builder builder() {
        return new Builder();
    }

    /**
     * Acquires 1 permit, waiting as long as it takes.
     *
     * @return the permit
     * @throws InterruptedException if interrupted on entry or while waiting
     * @throws SemaphoreClosedException if the semaphore is or becomes closed
     * @throws IllegalArgumentException if the ceiling is 0
     */
    default Permit acquire() throws InterruptedException {
        return acquire(1);
    }

    /**
     * Acquires {@code permits} permits, waiting as long as it takes.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @return a permit holding {@code permits}
     * @throws InterruptedException if interrupted on entry or while waiting
     * @throws SemaphoreClosedException if the semaphore is or becomes closed
     * @throws IllegalArgumentException if the request is out of range
     */
    Permit acquire(long permits) throws InterruptedException;

    /**
     * Acquires {@code permits} permits, waiting at most {@code timeout}.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @param timeout how long to wait; zero or less only tries once
     * @return a permit holding {@code permits}
     * @throws InterruptedException if interrupted on entry or while waiting
     * @throws TimeoutException if the permits could not be had in time
     * @throws SemaphoreClosedException if the semaphore is or becomes closed
     * @throws IllegalArgumentException if the request is out of range
     * @throws NullPointerException if {@code timeout} is {@code null}
     */
    Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException;

    /**
     * Acquires {@code permits} permits, waiting as long as it takes and ignoring interrupts: an interrupt
     * while it waits neither ends the wait nor loses its place in the queue, and the call returns with the
     * interrupt status set again.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @return a permit holding {@code permits}
     * @throws SemaphoreClosedException if the semaphore is or becomes closed (the interrupt status is set
     *         again if an interrupt came meanwhile)
     * @throws IllegalArgumentException if the request is out of range
     */
    Permit acquireUninterruptibly(long permits);

    /**
     * Acquires 1 permit, waiting as long as it takes and ignoring interrupts (see
     * {@link #acquireUninterruptibly(long)}).
     *
     * @return the permit
     * @throws SemaphoreClosedException if the semaphore is or becomes closed
     * @throws IllegalArgumentException if the ceiling is 0
     */
    default Permit acquireUninterruptibly() {
        return acquireUninterruptibly(1);
    }

    /**
     * Takes every permit available now, without waiting, whatever the queue (as
     * {@code java.util.concurrent.Semaphore#drainPermits} does in both of its modes): for example to stop
     * admitting new work for a while. The waiters keep their places; they are served as permits come back.
     *
     * @return a permit holding what was available, empty when nothing was (the limit is used up, or was
     *         lowered below what is held)
     * @throws SemaphoreClosedException if the semaphore is closed
     */
    Permit drainPermits();

    /**
     * Takes 1 permit if it can be had at once (under FIFO: only when nobody is queued).
     *
     * @return the permit, or empty
     * @throws SemaphoreClosedException if the semaphore is closed
     * @throws IllegalArgumentException if the ceiling is 0
     */
    default Optional<Permit> tryAcquire() {
        return tryAcquire(1);
    }

    /**
     * Takes {@code permits} permits if they can be had at once (under FIFO: only when nobody is
     * queued). Never waits, never queues.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @return the permit, or empty
     * @throws SemaphoreClosedException if the semaphore is closed
     * @throws IllegalArgumentException if the request is out of range
     */
    Optional<Permit> tryAcquire(long permits);

    /**
     * Acquires 1 permit without blocking the caller.
     *
     * @return a future of the permit; see {@link #acquireAsync(long)}
     * @throws IllegalArgumentException if the ceiling is 0
     */
    default CompletableFuture<Permit> acquireAsync() {
        return acquireAsync(1);
    }

    /**
     * Acquires {@code permits} permits without blocking the caller. The future completes with the
     * permit when granted, or fails with {@link SemaphoreClosedException} if the semaphore is or becomes
     * closed first. Completing the future in any other way ({@code cancel}, {@code orTimeout},
     * {@code completeExceptionally}, {@code complete}) withdraws the request; a grant that raced with it
     * is given back. The future and the permit may be one object; rely on neither's identity or class.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @return a future of the permit
     * @throws IllegalArgumentException if the request is out of range
     */
    CompletableFuture<Permit> acquireAsync(long permits);

    /**
     * Like {@link #acquireAsync(long)}, but the future fails with {@link TimeoutException} if the
     * permits cannot be had within {@code timeout} (zero or less only tries once).
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @param timeout how long to wait
     * @return a future of the permit
     * @throws IllegalArgumentException if the request is out of range
     * @throws NullPointerException if {@code timeout} is {@code null}
     */
    CompletableFuture<Permit> acquireAsync(long permits, Duration timeout);

    /**
     * Runs {@code action} while holding {@code permits} permits, releasing them however it ends.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @param action the work
     * @param <T> the result type
     * @param <X> what the work may throw
     * @return what {@code action} returned
     * @throws X if {@code action} throws it
     * @throws InterruptedException if interrupted while waiting for permits
     * @throws SemaphoreClosedException if the semaphore is or becomes closed before the grant
     * @throws IllegalArgumentException if the request is out of range
     * @throws NullPointerException if {@code action} is {@code null}
     */
    default <T, X extends Exception> T withPermits(long permits, PermitAction<T, X> action)
            throws X, InterruptedException {
        Objects.requireNonNull(action, "action");
        try (Permit ignored = acquire(permits)) {
            return action.run();
        }
    }

    /**
     * Acquires {@code permits} permits asynchronously, then runs {@code action} and releases the permits
     * when the stage it returned completes. If the supplier throws or returns {@code null}, the result
     * fails (with that exception, or {@link NullPointerException}) and the permits are released.
     * Cancelling the returned future while it still waits for permits withdraws the request.
     *
     * @param permits the request, {@code 0 <= permits <= maxPermits()}
     * @param action starts the work
     * @param <T> the result type
     * @return a future of the work's result
     * @throws IllegalArgumentException if the request is out of range
     * @throws NullPointerException if {@code action} is {@code null}
     */
    default <T> CompletableFuture<T> withPermitsAsync(long permits,
            Supplier<? extends CompletionStage<T>> action) {
        Objects.requireNonNull(action, "action");
        return WithPermits.runAsync(acquireAsync(permits), action);
    }

    /**
     * Waits until nothing is held and every waiter queued before this call has been served or has left.
     * Joins the queue like a waiter that needs every held permit; takes no permits; new arrivals queue
     * behind it in both fairness modes. Not failed by {@link #close()}.
     *
     * @throws InterruptedException if interrupted on entry or while waiting
     */
    void awaitIdle() throws InterruptedException;

    /**
     * Like {@link #awaitIdle()}, without blocking; cancelling the future withdraws the wait.
     *
     * @return a future completed when idle
     */
    CompletableFuture<Void> awaitIdleAsync();

    /**
     * Returns the current limit.
     *
     * @return the limit, {@code 0 <= permits() <= maxPermits()}
     */
    long permits();

    /**
     * Returns the ceiling, fixed at build time.
     *
     * @return the ceiling
     */
    long maxPermits();

    /**
     * Returns the limit less what is held: negative after the limit was lowered below what is held.
     * Permits counted here may still be kept from a newcomer by queued waiters (under FIFO).
     *
     * @return the available permits
     */
    long availablePermits();

    /**
     * Sets the limit. Never blocks, never revokes held permits; raising it serves waiters at once.
     *
     * @param limit the new limit, {@code 0 <= limit <= maxPermits()}
     * @throws IllegalArgumentException if {@code limit} is out of range
     */
    void setPermits(long limit);

    /**
     * Raises the limit by {@code n}, saturating at {@code maxPermits()}; serves waiters at once.
     *
     * @param n how many to add, {@code >= 0} (any size: {@code Long.MAX_VALUE} fills to the ceiling)
     * @return how many were added
     * @throws IllegalArgumentException if {@code n} is negative
     */
    long addPermits(long n);

    /**
     * Lowers the limit by {@code n}, not below 0. Never blocks and never revokes held permits.
     *
     * @param n how many to remove, {@code >= 0}
     * @return how many were removed
     * @throws IllegalArgumentException if {@code n} is negative
     */
    long reducePermits(long n);

    /**
     * Returns how many waiters are queued now, {@code awaitIdle} callers included.
     *
     * @return the queue length
     */
    int queueLength();

    /**
     * Returns the fairness chosen at build time.
     *
     * @return the fairness
     */
    Fairness fairness();

    /**
     * Closes the semaphore for good: every queued acquire fails with {@link SemaphoreClosedException},
     * and so does every later acquire. Held permits can still be released. Idempotent.
     *
     * <p>A {@code Semaphore} is deliberately not {@link AutoCloseable}: it is usually shared far beyond the
     * block that made it, and a {@code RedisSemaphore} closed at the end of a try-with-resources block would be
     * closed for every process of the fleet, for good.
     */
    void close();

    /**
     * Closes the semaphore as {@link #close()} does, with a cause: the {@link SemaphoreClosedException} of
     * every waiter it fails and of every later acquire has {@code cause} as its cause, so that callers learn
     * why (a shutdown, a failed dependency). Idempotent: once closed, a second {@code close(cause)} changes
     * nothing, and the first close's cause (or none, after {@code close()}) stays.
     *
     * @param cause why the semaphore is closed
     * @throws NullPointerException if {@code cause} is {@code null}
     */
    void close(Throwable cause);

    /**
     * Tells whether the semaphore is closed ({@link #close()} or {@link #close(Throwable)} was called; for a
     * semaphore shared across processes, by any of them).
     *
     * @return {@code true} once closed
     */
    boolean isClosed();

    /**
     * Registers a listener that sees this semaphore's events from now on (see {@link SemaphoreListener}
     * for which, on which thread, and at what cost). Listeners are called in the order added; the same
     * one added twice is called twice.
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    void addListener(SemaphoreListener listener);

    /**
     * Unregisters a listener (its first registration, if it was added more than once). Events already
     * being reported may still reach it.
     *
     * @param listener the listener
     * @return whether it was registered
     * @throws NullPointerException if {@code listener} is {@code null}
     */
    boolean removeListener(SemaphoreListener listener);

    /**
     * Returns the name given at build time, or a generated unique one.
     *
     * @return the name
     */
    String name();

    /**
     * Returns a view of one partition of this semaphore (API.md §11a): the same limit, with the partition's
     * guarantee, priority and FIFO queue. Its requests take their permits from this semaphore; its
     * {@code availablePermits()} is what a request of the partition could take now, its
     * {@code queueLength()} its own queue, its name {@code "parent/partition"}. It cannot be resized or
     * closed ({@link UnsupportedOperationException}); closing this semaphore closes it.
     *
     * @param name a partition declared with {@link Builder#partition}
     * @return the view, the same object for every call
     * @throws IllegalArgumentException if this semaphore has no partition of that name, naming those it has
     * @throws NullPointerException if {@code name} is {@code null}
     */
    default Semaphore partition(String name) {
        Objects.requireNonNull(name, "name");
        throw new IllegalArgumentException("semaphore '" + name() + "' has no partition '" + name
                + "'; it has no partitions");
    }

    /**
     * Returns the names of this semaphore's partitions, in priority order (first = highest).
     *
     * @return an unmodifiable list, empty when it has none
     */
    default List<String> partitionNames() {
        return List.of();
    }

    /**
     * Builds a local {@link Semaphore}. Each setter checks its own argument at once; {@link #build()}
     * checks that the limit does not exceed the ceiling, and the partitions together.
     */
    final class Builder {
        private long permits;
        private long maxPermits = -1;
        private Fairness fairness = Fairness.FIFO;
        private String name;
        private LeakDetection leakDetection = LeakDetection.OFF;
        private long refillPermits;
        private Duration refillPeriod;
        private final java.util.List<SemaphoreListener> listeners = new java.util.ArrayList<>();
        private final java.util.List<String> partitionNames = new java.util.ArrayList<>();
        private final java.util.List<Double> partitionShares = new java.util.ArrayList<>();

        Builder() {
        }

        /**
         * Sets the initial limit (default 0).
         *
         * @param permits {@code 0 <= permits <= MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder permits(long permits) {
            this.permits = Checks.count("permits", permits);
            return this;
        }

        /**
         * Sets the ceiling (default: the initial limit).
         *
         * @param maxPermits {@code 0 <= maxPermits <= MAX_PERMITS}, and at least the initial limit
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder maxPermits(long maxPermits) {
            this.maxPermits = Checks.count("maxPermits", maxPermits);
            return this;
        }

        /**
         * Sets the fairness (default {@link Fairness#FIFO}).
         *
         * @param fairness the fairness
         * @return this builder
         * @throws NullPointerException if {@code fairness} is {@code null}
         */
        public Builder fairness(Fairness fairness) {
            this.fairness = Objects.requireNonNull(fairness, "fairness");
            return this;
        }

        /**
         * Sets the name shown in messages and {@code toString()} (default: generated, unique).
         *
         * @param name a non-blank name
         * @return this builder
         * @throws NullPointerException if {@code name} is {@code null}
         * @throws IllegalArgumentException if {@code name} is blank
         */
        public Builder name(String name) {
            Objects.requireNonNull(name, "name");
            if (name.isBlank()) {
                throw new IllegalArgumentException("name must not be blank");
            }
            this.name = name;
            return this;
        }

        /**
         * Sets whether Permits that become unreachable while holding permits are reported and their permits
         * returned (default {@link LeakDetection#OFF}, which costs nothing).
         *
         * @param leakDetection the level
         * @return this builder
         * @throws NullPointerException if {@code leakDetection} is {@code null}
         */
        public Builder leakDetection(LeakDetection leakDetection) {
            this.leakDetection = Objects.requireNonNull(leakDetection, "leakDetection");
            return this;
        }

        /**
         * Makes the limit grow by {@code permits} every {@code period}, up to the ceiling: credit that
         * accrues over time. Idle users save up to the ceiling (a burst), and the initial limit is the
         * starting credit. Consuming credit is {@code acquire(k)} followed by {@link Permit#forget()},
         * which lowers the limit by {@code k}; releasing instead gives the credit back. Waiters are served
         * as soon as a refill makes their request fit. Refills stop when the semaphore is closed or
         * collected, and never keep a thread alive.
         *
         * {@snippet :
         * // 10 requests per second on average, bursts of up to 50
         * Semaphore credit = Semaphore.builder()
         *         .permits(50).maxPermits(50)
         *         .refill(1, Duration.ofMillis(100))
         *         .build();
         * credit.acquire().forget();   // spend one unit of credit
         * }
         *
         * @param permits added per period, {@code 1 <= permits <= MAX_PERMITS}
         * @param period how often, at least 1 millisecond
         * @return this builder
         * @throws IllegalArgumentException if {@code permits} or {@code period} is out of range
         * @throws NullPointerException if {@code period} is {@code null}
         */
        public Builder refill(long permits, Duration period) {
            Objects.requireNonNull(period, "period");
            if (permits < 1 || permits > MAX_PERMITS) {
                throw new IllegalArgumentException("refill permits (" + permits
                        + ") must be between 1 and MAX_PERMITS (" + MAX_PERMITS + ")");
            }
            if (period.compareTo(Duration.ofMillis(1)) < 0) {
                throw new IllegalArgumentException("refill period (" + period + ") must be at least 1 ms");
            }
            this.refillPermits = permits;
            this.refillPeriod = period;
            return this;
        }

        /**
         * Adds a listener, registered before the semaphore is returned, so that it sees every event;
         * repeatable, in order (see {@link Semaphore#addListener}).
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is {@code null}
         */
        public Builder listener(SemaphoreListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * Declares a partition (API.md §11a); repeatable, and the order of declaration is the priority
         * (first = highest). A partition is guaranteed {@code floor(share × limit)} permits whenever its
         * requests wait, is served before requests of lower partitions beyond their guarantees, and may use
         * whatever nobody with precedence waits for. Get its view with {@link Semaphore#partition(String)}.
         * The names and shares are checked together by {@link #build()}.
         *
         * {@snippet :
         * Semaphore api = Semaphore.builder().name("api").permits(100)
         *         .partition("checkout", 0.6)
         *         .partition("browse", 0.3)
         *         .partition("batch", 0.1)
         *         .build();
         * try (Permit p = api.partition("batch").acquire()) { ... }
         * }
         *
         * @param name a non-empty name, unique within the semaphore
         * @param share in {@code (0, 1]}; all shares add up to at most 1
         * @return this builder
         * @throws NullPointerException if {@code name} is {@code null}
         */
        public Builder partition(String name, double share) {
            partitionNames.add(Objects.requireNonNull(name, "name"));
            partitionShares.add(share);
            return this;
        }

        /**
         * Builds the semaphore.
         *
         * @return a new semaphore
         * @throws IllegalArgumentException if the limit exceeds the ceiling; if a partition's name is empty or
         *     declared twice, its share is not in {@code (0, 1]}, or the shares add up to more than 1 (naming
         *     the partition and the numbers); if partitions are declared with {@link Fairness#BARGING}
         */
        public Semaphore build() {
            long ceiling = Checks.ceiling(permits, maxPermits);
            String named = name == null ? LocalSemaphore.generatedName() : name;
            PartitionSpec partitions = null;
            if (!partitionNames.isEmpty()) {
                partitions = PartitionSpec.of(named, partitionNames, partitionShares);
                if (fairness != Fairness.FIFO) {
                    throw new IllegalArgumentException("semaphore '" + named + "' has partitions " + partitionNames
                            + ", which need FIFO fairness, not " + fairness);
                }
            }
            LocalSemaphore semaphore = new LocalSemaphore(named, permits, ceiling, fairness, leakDetection,
                    partitions);
            for (SemaphoreListener l : listeners) {
                semaphore.addListener(l);
            }
            if (refillPeriod != null) {
                semaphore.refillTask = Refill.start(semaphore, refillPermits, refillPeriod);
            }
            return semaphore;
        }
    }
}
