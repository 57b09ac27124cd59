package dev.sema;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Waits for in-flight work and refuses new work: each unit of work holds a {@link Pass} while it
 * runs, and {@link #close()} stops new passes and returns a future that completes once every open
 * pass is closed. A gate is a shutdown barrier for a service, a connection or a loop that has started
 * work it does not otherwise track.
 *
 * {@snippet :
 * Gate gate = new Gate("requests");
 *
 * // for each request, on any thread:
 * try (Gate.Pass pass = gate.enter()) {   // throws GateClosedException once closed
 *     handle(request);
 * }
 *
 * // on shutdown:
 * gate.close().get(30, TimeUnit.SECONDS); // no new requests; wait for the ones inside
 * }
 *
 * <h2>Entering and leaving</h2>
 * {@link #enter()} and {@link #tryEnter()} never block: they open a pass at once unless the gate is
 * closed. {@link Pass#close()} is idempotent, so a pass closed twice (or by two racing threads) leaves
 * once. Entering and leaving cost one atomic update of one counter and take no lock, so many threads
 * may enter and leave at once. A gate counts at most 2<sup>62</sup> open passes, more than can exist.
 *
 * <h2>Closing</h2>
 * {@link #close()} is idempotent; from the first call on, {@code enter()} throws
 * {@link GateClosedException} and {@code tryEnter()} returns empty. Passes already open stay valid.
 * Every call returns a future that completes (normally, with {@code null}) once {@link #inside()}
 * has dropped to 0: at once when nothing is inside, otherwise on the thread that closes the last
 * pass, which then runs the future's dependent actions. It is completed outside any lock.
 *
 * <h2>Memory consistency effects</h2>
 * Actions in a thread before it closes a {@code Pass} happen-before the actions that follow the
 * completion of a future returned by {@link #close()} (its dependent actions, or a return from
 * {@code get()}/{@code join()}).
 *
 * <h2>Cancellation</h2>
 * Each call of {@link #close()} returns its own future: cancelling it, or completing it in any other
 * way, affects only that future. The gate stays closed, and the futures returned to other callers
 * still complete when the last pass is closed.
 *
 * <h2>Interruption</h2>
 * No method of a gate blocks, so none responds to interrupts. To wait with a timeout, or
 * interruptibly, use the future: {@code gate.close().get(timeout, unit)}.
 *
 * <h2>Examples</h2>
 * Refuse new work without an exception, and stop accepting before waiting:
 * {@snippet :
 * Optional<Gate.Pass> pass = gate.tryEnter();
 * if (pass.isEmpty()) {
 *     return reject(request);            // shutting down
 * }
 * try (Gate.Pass p = pass.get()) {
 *     return handle(request);
 * }
 * }
 * A pass may be closed on another thread than the one that opened it, for work that completes
 * asynchronously:
 * {@snippet :
 * Gate.Pass pass = gate.enter();
 * client.sendAsync(request).whenComplete((response, failure) -> pass.close());
 * }
 */
public final class Gate {

    /*
     * Implementation overview
     *
     * State word (`state`, one AtomicLong): the number of open passes in bits 63..1 and CLOSED in bit 0.
     *
     * Invariants:
     *  G1: count == the number of passes opened and not yet closed, >= 0. enter() adds ONE by CAS only
     *      while CLOSED is clear; Pass.close() subtracts ONE at most once per pass (its own CAS on
     *      Pass.open from 1 to 0).
     *  G2: CLOSED, once set, stays set; so after it is set the count only falls.
     *  G3: `done` is completed exactly when CLOSED is set and count == 0: by close() if it sets CLOSED
     *      while count == 0, otherwise by the one leave that moves the state to exactly CLOSED (by G2
     *      no enter can follow, so that transition happens once). complete() is idempotent anyway.
     *
     * There is no lock: enter is a CAS loop (it must see CLOSED clear), leave a single getAndAdd,
     * close a CAS loop setting CLOSED. `done` is completed with no lock held, on the thread that made
     * G3 true. Callers get copies of `done`, so nobody outside can complete or cancel it.
     *
     * field        read          write
     * state        volatile      CAS / getAndAdd
     * done         final         completed once (G3)
     * Pass.open    volatile      CAS 1 -> 0
     */

    private static final long CLOSED = 1L;
    private static final long ONE = 2L;
    private static final AtomicLong NAMES = new AtomicLong();

    private final String name;
    private final AtomicLong state = new AtomicLong();
    private final CompletableFuture<Void> done = new CompletableFuture<>();

    /**
     * Creates an open gate with a generated unique name.
     */
    public Gate() {
        this.name = "gate-" + NAMES.incrementAndGet();
    }

    /**
     * Creates an open gate.
     *
     * @param name shown in {@link #toString()} and in the message of {@link GateClosedException}
     * @throws NullPointerException if {@code name} is {@code null}
     * @throws IllegalArgumentException if {@code name} is blank
     */
    public Gate(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("name must not be blank");
        }
        this.name = name;
    }

    /**
     * Opens a pass, which the caller must close when its work is done.
     *
     * @return a new open pass
     * @throws GateClosedException if the gate is closed
     */
    public Pass enter() {
        if (!tryIncrement()) {
            throw new GateClosedException(describe() + " is closed: enter() refused");
        }
        return new GatePass(this);
    }

    /**
     * Opens a pass unless the gate is closed. Never throws {@link GateClosedException}.
     *
     * @return a new open pass, or empty once the gate is closed
     */
    public Optional<Pass> tryEnter() {
        return tryIncrement() ? Optional.of(new GatePass(this)) : Optional.empty();
    }

    private boolean tryIncrement() {
        for (;;) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                return false;
            }
            // keeps G1, G2: the count grows only while CLOSED is clear in the very word we replace
            if (state.compareAndSet(s, s + ONE)) {
                return true;
            }
        }
    }

    /** Called once per pass (G1). */
    private void leave() {
        long s = state.addAndGet(-ONE);
        if (s == CLOSED) {
            done.complete(null); // keeps G3: the last pass left a closed gate
        }
    }

    /**
     * Closes the gate for good: no pass can be opened from now on. Idempotent. Never blocks.
     *
     * @return a new future, completed with {@code null} once every open pass is closed (at once if
     *         none is); completing or cancelling it affects no other caller
     */
    public CompletableFuture<Void> close() {
        long s;
        do {
            s = state.get();
        } while ((s & CLOSED) == 0 && !state.compareAndSet(s, s | CLOSED));
        if (s == 0) {
            done.complete(null); // keeps G3: this call set CLOSED while nothing was inside
        }
        return done.copy();
    }

    /**
     * Tells whether {@link #close()} was called.
     *
     * @return {@code true} once closed
     */
    public boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    /**
     * Returns how many passes are open now.
     *
     * @return the passes opened and not yet closed, {@code >= 0}
     */
    public long inside() {
        return state.get() >>> 1;
    }

    /**
     * Returns the name given at construction, or a generated unique one.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * Returns a description with the name, the passes open and whether the gate is closed.
     *
     * @return for example {@code Gate[name=requests, inside=3, closed=false]}
     */
    @Override
    public String toString() {
        long s = state.get();
        return "Gate[name=" + name + ", inside=" + (s >>> 1) + ", closed=" + ((s & CLOSED) != 0) + "]";
    }

    private String describe() {
        return "gate '" + name + "'";
    }

    /**
     * Checks G1-G3; for tests, at quiescence.
     *
     * @throws AssertionError naming the broken invariant
     */
    void checkInvariants() {
        long s = state.get();
        if (s < 0) {
            throw new AssertionError("G1: negative count in " + this);
        }
        boolean idleAndClosed = s == CLOSED;
        if (idleAndClosed != done.isDone()) {
            throw new AssertionError("G3: closed with nothing inside is " + idleAndClosed
                    + " but the close future is done=" + done.isDone() + " in " + this);
        }
    }

    /**
     * The right to be inside a {@link Gate}: held while work runs, closed when it is done. A
     * gate's {@link Gate#close()} future completes once every pass is closed.
     */
    public sealed interface Pass extends AutoCloseable permits GatePass {
        /**
         * Leaves the gate. Idempotent and thread-safe: only the first call leaves, later or racing
         * calls do nothing. Never fails, also after the gate was closed.
         */
        @Override
        void close();
    }

    /** A pass of one gate; `open` goes 1 -> 0 once, by CAS, so the gate is left once (G1). */
    private static final class GatePass implements Pass {
        private static final VarHandle OPEN;

        static {
            try {
                OPEN = MethodHandles.lookup().findVarHandle(GatePass.class, "open", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final Gate gate;
        private volatile int open = 1;

        GatePass(Gate gate) {
            this.gate = gate;
        }

        @Override
        public void close() {
            // A plain volatile read first: a closed pass costs no CAS on a second close.
            if (open != 0 && OPEN.compareAndSet(this, 1, 0)) {
                gate.leave();
            }
        }

        @Override
        public String toString() {
            return "Pass[gate=" + gate.name + ", open=" + (open != 0) + "]";
        }
    }
}
