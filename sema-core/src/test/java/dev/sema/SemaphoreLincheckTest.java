package dev.sema;

import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import kotlin.jvm.functions.Function0;
import org.jetbrains.kotlinx.lincheck.LinChecker;
import org.jetbrains.kotlinx.lincheck.LincheckKt;
import org.jetbrains.kotlinx.lincheck.annotations.Operation;
import org.jetbrains.kotlinx.lincheck.annotations.Param;
import org.jetbrains.kotlinx.lincheck.annotations.Validate;
import org.jetbrains.kotlinx.lincheck.paramgen.IntGen;
import org.jetbrains.kotlinx.lincheck.strategy.managed.modelchecking.ModelCheckingOptions;
import org.jetbrains.kotlinx.lincheck.strategy.stress.StressOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Linearizability and interleaving checks with Lincheck.
 *
 * <p>Data-structure mode: the non-blocking operations ({@code tryAcquire}, releasing through the Permits,
 * {@code forget}, {@code availablePermits}, {@code setPermits}, {@code close}, {@code queueLength}) against the
 * sequential {@link Model}, in both model-checking mode (every interleaving of the instrumented accesses,
 * under sequential consistency) and stress mode (real threads, which can also catch a missing
 * {@code volatile}). The Permits obtained by one Lincheck thread are kept in a per-group stack: operations of
 * a {@code nonParallelGroup} all run on one thread, so the stacks themselves are never raced.
 *
 * <p>Scenario mode ({@code runConcurrentTest}): blocking and async acquires racing with releases, cancel,
 * interrupt, close and resizes, each explored over many interleavings, asserting the outcome and the
 * invariants after the joins. Blocks and thread bodies are named classes: Lincheck instruments classes, and
 * the hidden classes of Java lambdas are not instrumented (their threads would run unexplored).
 */
@Tag("lincheck")
class SemaphoreLincheckTest {

    // =====================================================================================================
    // Data-structure mode
    // =====================================================================================================

    @Test
    @Timeout(120)
    void nonBlockingOperationsAreLinearizableFifoModelChecking() {
        LinChecker.check(FifoOperations.class, modelChecking());
    }

    @Test
    @Timeout(120)
    void nonBlockingOperationsAreLinearizableFifoStress() {
        LinChecker.check(FifoOperations.class, stress());
    }

    @Test
    @Timeout(120)
    void nonBlockingOperationsAreLinearizableBargingModelChecking() {
        LinChecker.check(BargingOperations.class, modelChecking());
    }

    @Test
    @Timeout(120)
    void nonBlockingOperationsAreLinearizableBargingStress() {
        LinChecker.check(BargingOperations.class, stress());
    }

    private static ModelCheckingOptions modelChecking() {
        return new ModelCheckingOptions().iterations(8).invocationsPerIteration(100).threads(3).actorsPerThread(3)
                .actorsBefore(2).actorsAfter(2).sequentialSpecification(Model.class);
    }

    private static StressOptions stress() {
        // A failing stress run is reported unminimized: minimizing real-thread runs can take many minutes.
        return new StressOptions().iterations(30).invocationsPerIteration(1_500).threads(3).actorsPerThread(3)
                .actorsBefore(2).actorsAfter(2).sequentialSpecification(Model.class).minimizeFailedScenario(false);
    }

    /** The operations under test; subclasses pick the fairness (Lincheck creates them by their no-arg constructor). */
    public abstract static class Operations {
        private final Semaphore s;
        private final ArrayDeque<Permit> a = new ArrayDeque<>();
        private final ArrayDeque<Permit> b = new ArrayDeque<>();

        Operations(Fairness fairness) {
            s = Semaphore.builder().permits(2).maxPermits(3).fairness(fairness).name("lincheck").build();
        }

        @Operation(nonParallelGroup = "a")
        public String tryAcquireA(@Param(gen = IntGen.class, conf = "1:3") int n) {
            return tryAcquire(a, n);
        }

        @Operation(nonParallelGroup = "a")
        public long releaseA() {
            return release(a);
        }

        @Operation(nonParallelGroup = "a")
        public long releaseOneA() {
            return releaseOne(a);
        }

        @Operation(nonParallelGroup = "a")
        public long forgetA() {
            return forget(a);
        }

        @Operation(nonParallelGroup = "b")
        public String tryAcquireB(@Param(gen = IntGen.class, conf = "1:3") int n) {
            return tryAcquire(b, n);
        }

        @Operation(nonParallelGroup = "b")
        public long releaseB() {
            return release(b);
        }

        @Operation(nonParallelGroup = "b")
        public long releaseOneB() {
            return releaseOne(b);
        }

        @Operation
        public long availablePermits() {
            return s.availablePermits();
        }

        @Operation
        public void setPermits(@Param(gen = IntGen.class, conf = "0:3") int limit) {
            s.setPermits(limit);
        }

        @Operation
        public void close() {
            s.close();
        }

        @Operation
        public int queueLength() {
            return s.queueLength();
        }

        @Validate
        public void invariants() {
            ((LocalSemaphore) s).checkInvariants();
        }

        private String tryAcquire(ArrayDeque<Permit> stack, int n) {
            Optional<Permit> p;
            try {
                p = s.tryAcquire(n);
            } catch (SemaphoreClosedException e) {
                return "closed";
            }
            if (p.isEmpty()) {
                return "refused";
            }
            stack.push(p.get());
            return "acquired";
        }

        private static long release(ArrayDeque<Permit> stack) {
            Permit p = stack.poll();
            if (p == null) {
                return -1;
            }
            long n = p.permits();
            p.close();
            return n;
        }

        private static long releaseOne(ArrayDeque<Permit> stack) {
            Permit p = stack.peek();
            if (p == null || p.permits() == 0) {
                return -1;
            }
            p.release(1);
            return p.permits();
        }

        private static long forget(ArrayDeque<Permit> stack) {
            Permit p = stack.poll();
            if (p == null) {
                return -1;
            }
            long n = p.permits();
            p.forget();
            return n;
        }
    }

    public static final class FifoOperations extends Operations {
        public FifoOperations() {
            super(Fairness.FIFO);
        }
    }

    public static final class BargingOperations extends Operations {
        public BargingOperations() {
            super(Fairness.BARGING);
        }
    }

    /** The sequential specification: a limit, what is held, and each group's stack of Permit sizes. */
    public static final class Model {
        private long limit = 2;
        private long held;
        private boolean closed;
        private final ArrayDeque<Long> a = new ArrayDeque<>();
        private final ArrayDeque<Long> b = new ArrayDeque<>();

        public Model() {
        }

        public String tryAcquireA(int n) {
            return tryAcquire(a, n);
        }

        public long releaseA() {
            return release(a);
        }

        public long releaseOneA() {
            return releaseOne(a);
        }

        public long forgetA() {
            Long n = a.poll();
            if (n == null) {
                return -1;
            }
            held -= n;
            limit = Math.max(0, limit - n);
            return n;
        }

        public String tryAcquireB(int n) {
            return tryAcquire(b, n);
        }

        public long releaseB() {
            return release(b);
        }

        public long releaseOneB() {
            return releaseOne(b);
        }

        public long availablePermits() {
            return limit - held;
        }

        public void setPermits(int newLimit) {
            limit = newLimit;
        }

        public void close() {
            closed = true;
        }

        public int queueLength() {
            return 0;
        }

        private String tryAcquire(ArrayDeque<Long> stack, long n) {
            if (closed) {
                return "closed";
            }
            if (limit - held < n) {
                return "refused";
            }
            held += n;
            stack.push(n);
            return "acquired";
        }

        private long release(ArrayDeque<Long> stack) {
            Long n = stack.poll();
            if (n == null) {
                return -1;
            }
            held -= n;
            return n;
        }

        private long releaseOne(ArrayDeque<Long> stack) {
            Long n = stack.peek();
            if (n == null || n == 0) {
                return -1;
            }
            stack.pop();
            stack.push(n - 1);
            held -= 1;
            return n - 1;
        }
    }

    // =====================================================================================================
    // Scenario mode: blocking and async acquires racing with release, cancel, interrupt, close, resize
    // =====================================================================================================

    @Test
    @Timeout(120)
    void grantRacingWithCancelEndsOneWayAndReturnsThePermits() {
        explore(300, new GrantRacesWithCancel());
    }

    @Test
    @Timeout(120)
    void aQueuedGrantThatIsItsOwnPermitIsReleasedOnceWhateverRacesIt() {
        explore(300, new QueuedGrantRacesWithCancelMergeAndClose());
    }

    @Test
    @Timeout(120)
    void grantRacingWithInterruptGrantsOrThrowsNeverBoth() {
        explore(150, new GrantRacesWithInterrupt());
    }

    @Test
    @Timeout(120)
    void closeRacingWithGrantsGrantsOrRefusesEveryWaiter() {
        explore(40, new CloseRacesWithGrants());
    }

    @Test
    @Timeout(120)
    void cancelledHeadWaiterWakesTheNextOne() {
        explore(40, new CancelledHeadWakesNext());
    }

    @Test
    @Timeout(120)
    void releaseRacingWithQueueingLosesNoWakeUp() {
        explore(30, new ReleaseRacesWithQueueing(Fairness.FIFO));
        explore(30, new ReleaseRacesWithQueueing(Fairness.BARGING));
    }

    @Test
    @Timeout(120)
    void bargerRacingWithAWokenHeadLosesNoWakeUp() {
        explore(40, new BargerRacesWithWokenHead());
    }

    @Test
    @Timeout(120)
    void closeRacingWithAWokenHeadEndsIt() {
        explore(40, new CloseRacesWithWokenHead());
    }

    @Test
    @Timeout(120)
    void releasesWithoutTheLockWhileTheHeadIsWokenServeTheWaitersBehindIt() {
        explore(40, new ReleasesBehindWokenHead());
    }

    @Test
    @Timeout(120)
    void raisedLimitAndReleaseServeTheWaiterThenIdle() {
        explore(40, new RaiseAndReleaseServeWaiterThenIdle());
    }

    /**
     * Explores interleavings of {@code scenario}. Lincheck restores static fields between invocations and its
     * own failure report cannot render these scenarios, so a failed check is also printed to stderr.
     */
    private static void explore(int invocations, Runnable scenario) {
        try {
            LincheckKt.runConcurrentTest(invocations, new InFreshThread(scenario));
        } catch (Throwable e) {
            throw new AssertionError("an interleaving of " + scenario.getClass().getSimpleName() + " fails (the "
                    + "failed check, if any, is printed above; else it is a deadlock or an unexpected exception)", e);
        }
    }

    /**
     * Runs the scenario on a thread of its own. Lincheck runs every invocation's block on the same thread and
     * abandons some invocations midway (it aborts and replays a run in which it suspects a spin loop), so
     * thread-local state of an abandoned run, such as a Trampoline whose {@code finally} did not complete, would
     * leak into the next one; the threads a block starts are new in every invocation.
     */
    static final class InFreshThread implements Function0<Object> {
        private final Runnable scenario;

        InFreshThread(Runnable scenario) {
            this.scenario = scenario;
        }

        @Override
        public Object invoke() {
            Outcome outcome = new Outcome(scenario);
            join(start(outcome));
            if (outcome.failure instanceof RuntimeException e) {
                throw e;
            }
            if (outcome.failure instanceof Error e) {
                throw e;
            }
            return null;
        }
    }

    static final class Outcome implements Runnable {
        private final Runnable scenario;
        volatile Throwable failure;

        Outcome(Runnable scenario) {
            this.scenario = scenario;
        }

        @Override
        public void run() {
            try {
                scenario.run();
            } catch (Throwable e) {
                failure = e;
            }
        }
    }

    static void check(boolean ok, String message) {
        if (!ok) {
            System.err.println("lincheck scenario check failed: " + message);
            throw new AssertionError(message);
        }
    }

    static void join(Thread... threads) {
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    static Thread start(Runnable body) {
        Thread t = new Thread(body);
        t.start();
        return t;
    }

    static void checkAllBack(Semaphore s, long limit) {
        check(s.availablePermits() == limit && s.permits() == limit, "permits not all back: " + s);
        check(s.queueLength() == 0, "still queued: " + s);
        try {
            ((LocalSemaphore) s).checkInvariants();
        } catch (AssertionError e) {
            check(false, e.getMessage());
        }
    }

    static Semaphore semaphore(long permits, long ceiling, Fairness fairness) {
        return Semaphore.builder().permits(permits).maxPermits(ceiling).fairness(fairness).name("scenario").build();
    }

    /** Blocking acquire(n); keeps the outcome; closes the permit itself. */
    static final class BlockingAcquire implements Runnable {
        final Semaphore s;
        final long n;
        volatile boolean granted;
        volatile Throwable failed;

        BlockingAcquire(Semaphore s, long n) {
            this.s = s;
            this.n = n;
        }

        @Override
        public void run() {
            try {
                Permit p = s.acquire(n);
                granted = true;
                p.close();
            } catch (InterruptedException | SemaphoreClosedException e) {
                failed = e;
            } catch (Throwable e) {
                System.err.println("lincheck scenario: unexpected " + e);
                e.printStackTrace();
                throw e;
            }
        }
    }

    static final class ClosePermit implements Runnable {
        final Permit p;

        ClosePermit(Permit p) {
            this.p = p;
        }

        @Override
        public void run() {
            p.close();
        }
    }

    static final class ReleasePart implements Runnable {
        final Permit p;
        final long n;

        ReleasePart(Permit p, long n) {
            this.p = p;
            this.n = n;
        }

        @Override
        public void run() {
            p.release(n);
        }
    }

    /**
     * Interrupts a thread. Reads the semaphore first: starting a thread and interrupting one are no switch
     * points for Lincheck, so without a shared read the interrupt always came before the waiter even ran.
     */
    static final class Interrupt implements Runnable {
        final Thread target;
        final Semaphore s;
        volatile int queuedBefore;

        Interrupt(Thread target, Semaphore s) {
            this.target = target;
            this.s = s;
        }

        @Override
        public void run() {
            queuedBefore = s.queueLength();
            target.interrupt();
        }
    }

    static final class CancelFuture implements Runnable {
        final CompletableFuture<?> f;

        CancelFuture(CompletableFuture<?> f) {
            this.f = f;
        }

        @Override
        public void run() {
            f.cancel(false);
        }
    }

    static final class CloseSemaphore implements Runnable {
        final Semaphore s;

        CloseSemaphore(Semaphore s) {
            this.s = s;
        }

        @Override
        public void run() {
            s.close();
        }
    }

    static final class SetPermits implements Runnable {
        final Semaphore s;
        final long limit;

        SetPermits(Semaphore s, long limit) {
            this.s = s;
            this.limit = limit;
        }

        @Override
        public void run() {
            s.setPermits(limit);
        }
    }

    /** acquireAsync(n) whose permit, when granted, is closed by whoever completes the future. */
    static final class AsyncAcquireAndClose implements Runnable {
        final Semaphore s;
        final long n;
        volatile CompletableFuture<Permit> future;

        AsyncAcquireAndClose(Semaphore s, long n) {
            this.s = s;
            this.n = n;
        }

        @Override
        public void run() {
            CompletableFuture<Permit> f = s.acquireAsync(n);
            future = f;
            f.whenComplete(new CloseWhenGranted());
        }
    }

    static final class CloseWhenGranted implements java.util.function.BiConsumer<Permit, Throwable> {
        @Override
        public void accept(Permit p, Throwable failure) {
            if (p != null) {
                p.close();
            }
        }
    }

    /** The last permit is released while its only waiter (async) is cancelled. */
    static final class GrantRacesWithCancel implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(1, 1, Fairness.FIFO);
            Permit p = s.tryAcquire(1).orElseThrow();
            CompletableFuture<Permit> f = s.acquireAsync(1);
            Thread releaser = start(new ClosePermit(p));
            boolean cancelled = f.cancel(false);
            join(releaser);
            check(f.isDone(), "future not done after release and cancel: " + s);
            check(cancelled == f.isCancelled(), "cancel() returned " + cancelled + " but isCancelled() is "
                    + f.isCancelled());
            if (!cancelled) {
                f.join().close();
            }
            checkAllBack(s, 1);
        }
    }

    /**
     * A queued async request is granted and becomes its own Permit (see Waiter) while its caller cancels it;
     * then, if it was granted, one thread closes that Permit while another merges it into one of its own:
     * every permit comes back exactly once.
     */
    static final class QueuedGrantRacesWithCancelMergeAndClose implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(3, 3, Fairness.FIFO);
            Permit p = s.tryAcquire(2).orElseThrow();
            Permit q = s.tryAcquire(1).orElseThrow();
            CompletableFuture<Permit> f = s.acquireAsync(2);
            Thread releaser = start(new ClosePermit(p));
            boolean cancelled = f.cancel(false);
            join(releaser);
            check(f.isDone(), "future not done after release and cancel: " + s);
            if (!cancelled) {
                Permit granted = f.join();
                Thread closer = start(new ClosePermit(granted));
                Thread merger = start(() -> q.merge(granted));
                join(closer, merger);
                check(granted.permits() == 0, "the granted Permit still holds: " + granted);
                check(q.permits() == 1 || q.permits() == 3, "merged a part: " + q);
            }
            q.close();
            checkAllBack(s, 3);
        }
    }

    /** The last permit is released while its only waiter (blocked) is interrupted. */
    static final class GrantRacesWithInterrupt implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(1, 1, Fairness.FIFO);
            Permit p = s.tryAcquire(1).orElseThrow();
            BlockingAcquire waiter = new BlockingAcquire(s, 1);
            Thread w = start(waiter);
            Thread releaser = start(new ClosePermit(p));
            Thread interrupter = start(new Interrupt(w, s));
            join(w, releaser, interrupter);
            check(waiter.granted != (waiter.failed != null), "granted " + waiter.granted + " and failed with "
                    + waiter.failed);
            check(waiter.failed == null || waiter.failed instanceof InterruptedException,
                    "unexpected failure " + waiter.failed);
            checkAllBack(s, 1);
        }
    }

    /** close() comes while a blocked and an async waiter wait and the last permit is released. */
    static final class CloseRacesWithGrants implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(1, 1, Fairness.FIFO);
            Permit p = s.tryAcquire(1).orElseThrow();
            CompletableFuture<Permit> f = s.acquireAsync(1);
            BlockingAcquire waiter = new BlockingAcquire(s, 1);
            Thread w = start(waiter);
            Thread closer = start(new CloseSemaphore(s));
            p.close();
            join(w, closer);
            check(waiter.granted != (waiter.failed != null), "blocked waiter: granted " + waiter.granted
                    + ", failed with " + waiter.failed);
            check(waiter.failed == null || waiter.failed instanceof SemaphoreClosedException,
                    "blocked waiter failed with " + waiter.failed);
            check(f.isDone(), "async waiter neither granted nor failed after close: " + s);
            try {
                f.join().close();
            } catch (CompletionException e) {
                check(e.getCause() instanceof SemaphoreClosedException, "async waiter failed with " + e.getCause());
            }
            check(s.isClosed(), "not closed");
            checkAllBack(s, 1);
        }
    }

    /** The head waiter (2) is cancelled while 1 permit is released: the next waiter (1) must be granted. */
    static final class CancelledHeadWakesNext implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(2, 2, Fairness.FIFO);
            Permit p = s.tryAcquire(2).orElseThrow();
            CompletableFuture<Permit> head = s.acquireAsync(2);
            CompletableFuture<Permit> next = s.acquireAsync(1);
            Thread canceller = start(new CancelFuture(head));
            Thread releaser = start(new ReleasePart(p, 1));
            join(canceller, releaser);
            check(head.isCancelled(), "head not cancelled: " + s);
            check(next.isDone() && !next.isCompletedExceptionally(), "next waiter not granted although the head "
                    + "left and a permit is free: " + s);
            next.join().close();
            p.close();
            checkAllBack(s, 2);
        }
    }

    /**
     * BARGING: the release wakes the blocked head to take the permit itself while a newcomer barges in and
     * may take it first; the head must then wait on and be woken again by the newcomer's release.
     */
    static final class BargerRacesWithWokenHead implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(1, 1, Fairness.BARGING);
            Permit p = s.tryAcquire(1).orElseThrow();
            BlockingAcquire head = new BlockingAcquire(s, 1);
            Thread h = start(head);
            while (s.queueLength() == 0) {
                Thread.yield(); // the head is queued before the race starts
            }
            Thread barger = start(new BargeAndClose(s));
            p.close();
            join(h, barger); // a lost wake-up leaves the head parked for good: Lincheck reports the deadlock
            check(head.granted, "head waiter failed with " + head.failed);
            checkAllBack(s, 1);
            check(s.queueLength() == 0, "queue not empty: " + s);
        }
    }

    /**
     * BARGING: the release wakes the blocked head while close() fails it; whichever wins, the head ends
     * (granted, or failed by the close) and no permit is lost. A wake-up used up by the head's wait for
     * the lock must not leave it parked.
     */
    static final class CloseRacesWithWokenHead implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(1, 1, Fairness.BARGING);
            Permit p = s.tryAcquire(1).orElseThrow();
            BlockingAcquire head = new BlockingAcquire(s, 1);
            Thread h = start(head);
            while (s.queueLength() == 0) {
                Thread.yield(); // the head is queued before the race starts
            }
            Thread closer = start(s::close);
            p.close();
            join(h, closer); // a head left parked: Lincheck reports the deadlock
            check(head.granted || head.failed instanceof SemaphoreClosedException,
                    "head waiter ended with " + head.failed);
            check(s.availablePermits() == 1 && s.queueLength() == 0, "permits not all back: " + s);
        }
    }

    /**
     * BARGING: one release wakes the blocked head; a second release, racing with it, may add its permit
     * without the lock while the head is woken (HEAD_WOKEN). The head takes one permit and must then serve
     * the second waiter with the other, whichever order the releases, the head and the barger run in.
     */
    static final class ReleasesBehindWokenHead implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(2, 2, Fairness.BARGING);
            Permit p1 = s.tryAcquire(1).orElseThrow();
            Permit p2 = s.tryAcquire(1).orElseThrow();
            BlockingAcquire head = new BlockingAcquire(s, 1);
            Thread h = start(head);
            while (s.queueLength() == 0) {
                Thread.yield();
            }
            BlockingAcquire second = new BlockingAcquire(s, 1);
            Thread w = start(second);
            while (s.queueLength() < 2) {
                Thread.yield();
            }
            Thread r2 = start(p2::close);
            p1.close();
            join(h, w, r2); // a permit added without the lock and never served: Lincheck reports the deadlock
            check(head.granted && second.granted, "waiters ended with " + head.failed + ", " + second.failed);
            checkAllBack(s, 2);
        }
    }

    static final class BargeAndClose implements Runnable {
        final Semaphore s;

        BargeAndClose(Semaphore s) {
            this.s = s;
        }

        @Override
        public void run() {
            for (;;) { // until it gets the permit: before the woken head, or after the head closed its own
                Optional<Permit> got = s.tryAcquire(1);
                if (got.isPresent()) {
                    got.get().close();
                    return;
                }
                Thread.yield();
            }
        }
    }

    /** The last permit is released while a blocking and an async acquirer arrive: no wake-up may be lost. */
    static final class ReleaseRacesWithQueueing implements Runnable {
        private final Fairness fairness;

        ReleaseRacesWithQueueing(Fairness fairness) {
            this.fairness = fairness;
        }

        @Override
        public void run() {
            Semaphore s = semaphore(1, 1, fairness);
            Permit p = s.tryAcquire(1).orElseThrow();
            BlockingAcquire blocking = new BlockingAcquire(s, 1);
            AsyncAcquireAndClose async = new AsyncAcquireAndClose(s, 1);
            Thread b = start(blocking);
            Thread a = start(async);
            p.close();
            join(a, b); // a lost wake-up leaves b parked for good: Lincheck reports the deadlock
            check(blocking.granted, "blocking acquirer failed with " + blocking.failed);
            check(async.future.isDone() && !async.future.isCompletedExceptionally(), "async acquirer not granted: "
                    + s);
            checkAllBack(s, 1);
        }
    }

    /**
     * A waiter for 2 needs both the limit raised to 2 and the held permit back, which race; awaitIdle queued
     * behind it ends only once its permits are back too.
     */
    static final class RaiseAndReleaseServeWaiterThenIdle implements Runnable {
        @Override
        public void run() {
            Semaphore s = semaphore(1, 2, Fairness.FIFO);
            Permit p = s.tryAcquire(1).orElseThrow();
            CompletableFuture<Permit> f = s.acquireAsync(2);
            CompletableFuture<Void> idle = s.awaitIdleAsync();
            Thread raiser = start(new SetPermits(s, 2));
            Thread releaser = start(new ClosePermit(p));
            join(raiser, releaser);
            check(f.isDone() && !f.isCompletedExceptionally(), "waiter for 2 not granted with 2 free: " + s);
            check(!idle.isDone(), "awaitIdle ended while 2 permits are held: " + s);
            f.join().close();
            check(idle.isDone() && !idle.isCompletedExceptionally(), "awaitIdle not ended with nothing held: " + s);
            checkAllBack(s, 2);
        }
    }
}
