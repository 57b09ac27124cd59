package dev.sema;

import static dev.sema.SemaphoreLincheckTest.check;
import static dev.sema.SemaphoreLincheckTest.join;
import static dev.sema.SemaphoreLincheckTest.start;

import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
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
 * Lincheck on a partitioned semaphore. Data-structure mode: the non-blocking operations of two partitions and
 * of the parent's own requests ({@code tryAcquire}, releasing, forgetting, {@code availablePermits} of a view
 * and of the parent, {@code setPermits}, {@code close}) against a sequential model: with nobody queued, a
 * request of any partition is served exactly when it fits in what is free, and a view's available permits are
 * what is free (never negative). Scenario mode: a release racing with a lower partition's tryAcquire while a
 * partition is owed what is released (the tryAcquire must fail in every interleaving), and a grant racing with
 * a cancel inside a partition.
 */
@Tag("lincheck")
class PartitionsLincheckTest {

    @Test
    @Timeout(120)
    void nonBlockingOperationsAreLinearizableModelChecking() {
        LinChecker.check(Operations.class, new ModelCheckingOptions().iterations(8).invocationsPerIteration(100)
                .threads(3).actorsPerThread(3).actorsBefore(2).actorsAfter(2).sequentialSpecification(Model.class));
    }

    @Test
    @Timeout(120)
    void nonBlockingOperationsAreLinearizableStress() {
        LinChecker.check(Operations.class, new StressOptions().iterations(8).invocationsPerIteration(1_000)
                .threads(3).actorsPerThread(3).actorsBefore(2).actorsAfter(2).sequentialSpecification(Model.class)
                .minimizeFailedScenario(false));
    }

    @Test
    @Timeout(120)
    void permitsOwedToAWaitingPartitionAreNeverLentWhateverTheInterleaving() {
        explore(200, new ReleaseRacesWithLowerTryAcquire());
    }

    @Test
    @Timeout(120)
    void aGrantRacingWithACancelInAPartitionEndsOneWayAndReturnsThePermits() {
        explore(200, new GrantRacesWithCancelInPartition());
    }

    private static void explore(int invocations, Runnable scenario) {
        try {
            LincheckKt.runConcurrentTest(invocations, new SemaphoreLincheckTest.InFreshThread(scenario));
        } catch (Throwable e) {
            throw new AssertionError("an interleaving of " + scenario.getClass().getSimpleName() + " fails (the "
                    + "failed check, if any, is printed above; else it is a deadlock or an unexpected exception)", e);
        }
    }

    /** Limit 2 (ceiling 3): partition "a" of share 0.5, "b" of share 0.5, and the parent's own requests. */
    public static final class Operations {
        private final Semaphore s = Semaphore.builder().permits(2).maxPermits(3).name("lincheck")
                .partition("a", 0.5).partition("b", 0.5).build();
        private final Semaphore a = s.partition("a");
        private final Semaphore b = s.partition("b");
        private final ArrayDeque<Permit> heldA = new ArrayDeque<>();
        private final ArrayDeque<Permit> heldB = new ArrayDeque<>();
        private final ArrayDeque<Permit> heldOwn = new ArrayDeque<>();

        public Operations() {
        }

        @Operation(nonParallelGroup = "a")
        public String tryAcquireA(@Param(gen = IntGen.class, conf = "1:3") int n) {
            return tryAcquire(a, heldA, n);
        }

        @Operation(nonParallelGroup = "a")
        public long releaseA() {
            return release(heldA);
        }

        @Operation(nonParallelGroup = "a")
        public long forgetA() {
            Permit p = heldA.poll();
            if (p == null) {
                return -1;
            }
            long n = p.permits();
            p.forget();
            return n;
        }

        @Operation(nonParallelGroup = "b")
        public String tryAcquireB(@Param(gen = IntGen.class, conf = "1:3") int n) {
            return tryAcquire(b, heldB, n);
        }

        @Operation(nonParallelGroup = "b")
        public long releaseB() {
            return release(heldB);
        }

        @Operation(nonParallelGroup = "own")
        public String tryAcquireOwn(@Param(gen = IntGen.class, conf = "1:3") int n) {
            return tryAcquire(s, heldOwn, n);
        }

        @Operation(nonParallelGroup = "own")
        public long releaseOwn() {
            return release(heldOwn);
        }

        @Operation
        public long availablePermits() {
            return s.availablePermits();
        }

        @Operation
        public long availableToB() {
            return b.availablePermits();
        }

        @Operation
        public void setPermits(@Param(gen = IntGen.class, conf = "0:3") int limit) {
            s.setPermits(limit);
        }

        @Operation
        public void close() {
            s.close();
        }

        @Validate
        public void invariants() {
            ((LocalSemaphore) s).checkInvariants();
        }

        private static String tryAcquire(Semaphore s, ArrayDeque<Permit> stack, int n) {
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
    }

    /** The sequential specification: a limit, what is held, each group's stack of Permit sizes. */
    public static final class Model {
        private long limit = 2;
        private long held;
        private boolean closed;
        private final ArrayDeque<Long> heldA = new ArrayDeque<>();
        private final ArrayDeque<Long> heldB = new ArrayDeque<>();
        private final ArrayDeque<Long> heldOwn = new ArrayDeque<>();

        public Model() {
        }

        public String tryAcquireA(int n) {
            return tryAcquire(heldA, n);
        }

        public long releaseA() {
            return release(heldA);
        }

        public long forgetA() {
            Long n = heldA.poll();
            if (n == null) {
                return -1;
            }
            held -= n;
            limit = Math.max(0, limit - n);
            return n;
        }

        public String tryAcquireB(int n) {
            return tryAcquire(heldB, n);
        }

        public long releaseB() {
            return release(heldB);
        }

        public String tryAcquireOwn(int n) {
            return tryAcquire(heldOwn, n);
        }

        public long releaseOwn() {
            return release(heldOwn);
        }

        public long availablePermits() {
            return limit - held;
        }

        public long availableToB() {
            return Math.max(0, limit - held);
        }

        public void setPermits(int newLimit) {
            limit = newLimit;
        }

        public void close() {
            closed = true;
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
    }

    /**
     * Limit 2, "a" and "b" of share 0.5 each. "b" borrowed both permits; "a" waits for 1 (within its guarantee
     * of 1). "b" releases one while "b" also tries to take one back: the permit is owed to "a", so the
     * tryAcquire fails in every interleaving, and "a" is granted.
     */
    static final class ReleaseRacesWithLowerTryAcquire implements Runnable {
        @Override
        public void run() {
            Semaphore s = Semaphore.builder().permits(2).name("scenario").partition("a", 0.5).partition("b", 0.5)
                    .build();
            Semaphore a = s.partition("a");
            Semaphore b = s.partition("b");
            Permit borrowed = b.tryAcquire(2).orElseThrow();
            CompletableFuture<Permit> owed = a.acquireAsync(1);
            Permit part = borrowed.split(1);
            TryAcquire taker = new TryAcquire(b, 1);
            Thread thief = start(taker);
            part.close();
            join(thief);
            Optional<Permit> taken = taker.result;
            check(taken.isEmpty(), "b took a permit owed to a: " + s);
            check(owed.isDone() && !owed.isCompletedExceptionally(), "a was not granted: " + s);
            owed.join().close();
            borrowed.close();
            check(s.availablePermits() == 2 && s.queueLength() == 0, "not all back: " + s);
            ((LocalSemaphore) s).checkInvariants();
        }
    }

    /** A tryAcquire on a thread of its own (a named class: Lincheck does not explore lambdas' threads). */
    static final class TryAcquire implements Runnable {
        final Semaphore s;
        final long n;
        volatile Optional<Permit> result;

        TryAcquire(Semaphore s, long n) {
            this.s = s;
            this.n = n;
        }

        @Override
        public void run() {
            result = s.tryAcquire(n);
        }
    }

    /** A partition's only waiter is cancelled while the permit it waits for is released. */
    static final class GrantRacesWithCancelInPartition implements Runnable {
        @Override
        public void run() {
            Semaphore s = Semaphore.builder().permits(1).name("scenario").partition("a", 0.5).build();
            Semaphore a = s.partition("a");
            Permit p = s.tryAcquire(1).orElseThrow();
            CompletableFuture<Permit> f = a.acquireAsync(1);
            Thread releaser = start(new SemaphoreLincheckTest.ClosePermit(p));
            boolean cancelled = f.cancel(false);
            join(releaser);
            check(f.isDone(), "future not done after release and cancel: " + s);
            if (!cancelled) {
                f.join().close();
            }
            check(s.availablePermits() == 1 && s.queueLength() == 0 && a.queueLength() == 0, "not all back: " + s);
            ((LocalSemaphore) s).checkInvariants();
        }
    }
}
