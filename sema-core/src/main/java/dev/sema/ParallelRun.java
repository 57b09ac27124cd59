package dev.sema;

import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.function.ToLongFunction;

/**
 * One blocking {@link Parallel} run: the caller's thread pulls items and starts one virtual thread per
 * call, each holding permits of {@link #semaphore} (its own, or one shared with other runs) and a pass of
 * {@link #gate} (this run's calls only) while it runs.
 *
 * @param <T> the item type
 * @param <R> the result type
 */
final class ParallelRun<T, R> {

    /*
     * Implementation overview
     *
     * The caller's thread is the coordinator: it alone touches the iterator and the result chunks' list.
     * For each item it takes the item, computes its weight, acquires that many permits, enters the gate,
     * registers a Call in `running` and starts the Call's virtual thread. A Call runs fn unless the run is
     * stopped, stores its result in its own slot of a chunk, leaves `running`, records a failure, then
     * closes its permit and finally its pass.
     *
     * Invariants:
     *  P1: a call holds its permits while fn runs, so calls at once <= permits of the semaphore (for
     *      map with a limit: a private semaphore of `limit` permits).
     *  P2: items taken and not yet finished <= calls holding permits + the one item the coordinator holds
     *      while it acquires; a Call drops its item before releasing its permit.
     *  P3: every Call that reaches fn after the run stopped is either seen in `running` by the stopper
     *      (and interrupted) or sees the stop itself and skips fn. Dekker: the coordinator adds the Call
     *      to `running` before starting it and the Call then reads `failFast`; the stopper writes
     *      `failFast` and then iterates `running`. The same pairing with `pending` lets the stopper
     *      withdraw an acquire the coordinator waits for.
     *  P4: the coordinator returns or throws only after the gate's close future completed, i.e. after
     *      every started Call closed its pass, its last action.
     *
     * Results: each Call writes only its own slot of a chunk it got at start; chunks never move. The
     * coordinator reads them after P4, whose gate counter gives the happens-before edge.
     *
     * field        read            write
     * failFast     atomics         atomics (FailFast)
     * running      CHM             CHM, add by coordinator, remove by the Call
     * pending      volatile        volatile, coordinator
     * results, ... coordinator     coordinator
     */

    private static final ThreadFactory THREADS = Thread.ofVirtual().name("sema-parallel-", 0).factory();
    /** The most results a list can hold (the largest array length every JVM allocates). */
    private static final long MAX_RESULTS = Integer.MAX_VALUE - 8;

    private final String operation;
    private final Semaphore semaphore;
    private final ToLongFunction<? super T> weight;
    private final ThrowingFunction<? super T, ? extends R> fn;
    private final boolean collect;
    private final Gate gate;
    private final FailFast failFast = new FailFast();
    private final Set<Call> running = ConcurrentHashMap.newKeySet();
    private volatile CompletableFuture<Permit> pending;

    // Coordinator only.
    private final ResultChunks results = new ResultChunks();
    private long started;

    /**
     * @param operation names the method in messages
     * @param weight permits per item, or null for 1 each
     * @param collect whether results are kept (map) or dropped (forEach)
     */
    ParallelRun(String operation, Semaphore semaphore, ToLongFunction<? super T> weight,
            ThrowingFunction<? super T, ? extends R> fn, boolean collect) {
        this.operation = operation;
        this.semaphore = semaphore;
        this.weight = weight;
        this.fn = fn;
        this.collect = collect;
        this.gate = new Gate(operation);
    }

    /** Runs every item; returns the results in input order (null when not collecting). */
    List<R> run(Iterable<? extends T> items) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before " + operation + " started");
        }
        try {
            pull(items);
        } finally {
            awaitCalls(); // keeps P4, whatever pull() threw
        }
        return outcome();
    }

    // ---------------------------------------------------------------- coordinator

    private void pull(Iterable<? extends T> items) {
        Iterator<? extends T> it;
        try {
            it = Objects.requireNonNull(items.iterator(), "items.iterator() returned null");
        } catch (Throwable t) {
            fail(t);
            return;
        }
        while (!failFast.stopped()) {
            T item;
            try {
                if (!it.hasNext()) {
                    return;
                }
                item = it.next();
            } catch (Throwable t) {
                fail(t);
                return;
            }
            long permits = 1;
            if (weight != null) {
                try {
                    permits = weight.applyAsLong(item);
                } catch (Throwable t) {
                    fail(t);
                    return;
                }
                if (permits < 0 || permits > semaphore.maxPermits()) {
                    fail(new IllegalArgumentException(operation + ": item #" + started + " weighs " + permits
                            + " permits, but a weight must be between 0 and maxPermits (" + semaphore.maxPermits()
                            + ") of semaphore '" + semaphore.name() + "'"));
                    return;
                }
            }
            if (collect && started >= MAX_RESULTS) {
                fail(new IllegalStateException(operation + ": more than " + MAX_RESULTS
                        + " results do not fit in a list"));
                return;
            }
            Permit permit;
            try {
                permit = acquire(permits);
            } catch (InterruptedException e) {
                interrupted();
                return;
            }
            if (permit == null) {
                return; // stopped, or failed to acquire
            }
            start(item, permit);
        }
    }

    /**
     * Acquires permits, waiting until they are granted or the run stops. Returns null if the run stopped
     * (the permits, if granted meanwhile, are given back) or the acquire failed (recorded).
     */
    private Permit acquire(long permits) throws InterruptedException {
        CompletableFuture<Permit> f;
        try {
            f = semaphore.acquireAsync(permits);
        } catch (Throwable t) {
            fail(t);
            return null;
        }
        if (!f.isDone()) {
            pending = f;
            try {
                if (failFast.stopped()) {
                    f.cancel(false); // keeps P3: the stopper may have looked at `pending` before we set it
                }
                f.get();
            } catch (InterruptedException e) {
                giveBack(f);
                throw e;
            } catch (ExecutionException | CancellationException e) {
                // read below
            } finally {
                pending = null;
            }
        }
        switch (f.state()) {
            case SUCCESS -> {
                Permit p = f.resultNow();
                if (failFast.stopped()) {
                    p.close(); // granted while we were being stopped
                    return null;
                }
                return p;
            }
            case FAILED -> {
                fail(f.exceptionNow()); // e.g. SemaphoreClosedException from a shared semaphore
                return null;
            }
            default -> {
                return null; // CANCELLED: only a stopper cancels it
            }
        }
    }

    /** Withdraws a pending acquire; a grant that won the race is released. */
    private static void giveBack(CompletableFuture<Permit> f) {
        if (!f.cancel(false) && f.state() == Future.State.SUCCESS) {
            f.resultNow().close();
        }
    }

    private void start(T item, Permit permit) {
        Gate.Pass pass = gate.enter(); // the gate is closed only after pull() returns
        Object[] target = null;
        int at = 0;
        if (collect) {
            target = results.nextChunk();
            at = results.reserve();
        }
        started++;
        Call call = new Call(item, permit, pass, target, at);
        try {
            Thread thread = THREADS.newThread(call);
            call.thread = thread;
            running.add(call); // keeps P3: registered before it can run
            thread.start();
        } catch (Throwable t) { // cannot create or start a thread: it never ran
            running.remove(call);
            call.abandon();
            fail(t);
        }
    }

    /** The caller was interrupted while this run was not yet stopped (or racing with a stop). */
    private void interrupted() {
        if (failFast.stop(FailFast.INTERRUPTED)) {
            cancelAll();
        } else {
            Thread.currentThread().interrupt(); // stopped by a failure first: keep the interrupt for later
        }
    }

    /** Waits until every started call has ended (P4): interruptibly until the run stops, then not. */
    private void awaitCalls() {
        CompletableFuture<Void> allEnded = gate.close();
        if (!failFast.stopped()) {
            try {
                allEnded.get();
                return;
            } catch (InterruptedException e) {
                interrupted();
            } catch (ExecutionException e) {
                throw new AssertionError("a gate's close future does not fail", e);
            }
        }
        boolean interruptedAgain = false;
        for (;;) {
            try {
                allEnded.get();
                break;
            } catch (InterruptedException e) {
                interruptedAgain = true; // the calls must end first; the interrupt is kept below
            } catch (ExecutionException e) {
                throw new AssertionError("a gate's close future does not fail", e);
            }
        }
        if (interruptedAgain) {
            Thread.currentThread().interrupt();
        }
    }

    private List<R> outcome() throws InterruptedException {
        switch (failFast.reason()) {
            case FailFast.RUNNING -> {
                return collect ? results.<R>toList() : null;
            }
            case FailFast.INTERRUPTED -> {
                Thread.interrupted(); // reported by the exception, as java.util.concurrent does
                InterruptedException e = new InterruptedException("interrupted during " + operation + ": its "
                        + started + " started calls were cancelled and have ended");
                failFast.attachAllTo(e);
                throw e;
            }
            default -> {
                Throwable f = failFast.failure();
                if (f instanceof Error error) {
                    throw error;
                }
                throw (RuntimeException) f;
            }
        }
    }

    // ---------------------------------------------------------------- stopping

    /** Records a failure; the first one stops the run and cancels what is in flight. */
    private void fail(Throwable failure) {
        if (failFast.fail(failure)) {
            cancelAll();
        }
    }

    /** Interrupts every registered call and withdraws the coordinator's pending acquire (P3). */
    private void cancelAll() {
        for (Call call : running) {
            call.thread.interrupt();
        }
        CompletableFuture<Permit> f = pending;
        if (f != null) {
            f.cancel(false); // the coordinator sees the cancellation or, if the grant won, the stop
        }
    }

    /** One call of fn on its own virtual thread. */
    private final class Call implements Runnable {
        private T item;
        private final Permit permit;
        private final Gate.Pass pass;
        private final Object[] target;
        private final int at;
        Thread thread;

        Call(T item, Permit permit, Gate.Pass pass, Object[] target, int at) {
            this.item = item;
            this.permit = permit;
            this.pass = pass;
            this.target = target;
            this.at = at;
        }

        @Override
        public void run() {
            Throwable failure = null;
            Object result = null;
            try {
                if (!failFast.stopped()) { // keeps P3: no new call once stopped
                    result = fn.apply(item);
                }
            } catch (Throwable t) {
                failure = t;
            }
            item = null; // keeps P2
            try {
                running.remove(this);
                // Clear our own cancellation's interrupt before the releases below, whose completions may run
                // other waiters' code on this thread. (A stopper whose iteration began before we left
                // `running` may still interrupt us: harmless, this thread ends right after.)
                Thread.interrupted();
                if (failure != null) {
                    fail(failure);
                } else if (target != null) {
                    target[at] = result;
                }
            } finally {
                permit.close(); // P1: the slot is free for the next call
                pass.close(); // P4: the last action of a call
            }
        }

        /** For a call whose thread never started. */
        void abandon() {
            item = null;
            permit.close();
            pass.close();
        }
    }
}
