package dev.sema;

import static dev.sema.SemaphoreLincheckTest.check;
import static dev.sema.SemaphoreLincheckTest.join;
import static dev.sema.SemaphoreLincheckTest.start;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
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
 * Lincheck on a keyed semaphore over two keys (the removal protocol, K1-K6 of {@link LocalKeyedSemaphore}).
 * Data-structure mode: each key's tryAcquire and release, and each key's availablePermits, against a sequential
 * model (a key grants exactly what fits in its limit), with the live keys checked after every scenario. Scenario
 * mode: requests for one key race with the release that makes it idle, so that the key is removed and made
 * again between one request's lookup and another's grant: never more than the key's limit is held, in any
 * interleaving. The same scenario on the deliberately broken copy (an idle key taken out without closing its engine)
 * is caught.
 */
@Tag("lincheck")
class KeyedLincheckTest {

    @Test
    @Timeout(120)
    void keysAreLinearizableModelChecking() {
        LinChecker.check(Operations.class, new ModelCheckingOptions().iterations(10).invocationsPerIteration(100)
                .threads(3).actorsPerThread(3).actorsBefore(1).actorsAfter(1).sequentialSpecification(Model.class));
    }

    @Test
    @Timeout(120)
    void keysAreLinearizableStress() {
        LinChecker.check(Operations.class, new StressOptions().iterations(10).invocationsPerIteration(1_000)
                .threads(3).actorsPerThread(3).actorsBefore(1).actorsAfter(1).sequentialSpecification(Model.class)
                .minimizeFailedScenario(false));
    }

    @Test
    @Timeout(120)
    void aKeyRemovedAndMadeAgainBetweenALookupAndAGrantNeverHoldsMoreThanItsLimit() {
        explore(1_000, new LookupRacesWithRemoval());
    }

    @Test
    @Timeout(120)
    void theBrokenCopyIsCaughtHoldingMoreThanAKeysLimit() {
        LocalKeyedSemaphore.removeWithoutClosingForTests = true;
        try {
            java.io.PrintStream err = System.err;
            java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
            System.setErr(new java.io.PrintStream(said, true, java.nio.charset.StandardCharsets.UTF_8));
            try {
                assertThatThrownBy(() -> explore(1_000, new LookupRacesWithRemoval()))
                        .isInstanceOf(AssertionError.class);
            } finally {
                System.setErr(err);
            }
            String failure = said.toString(java.nio.charset.StandardCharsets.UTF_8);
            err.print(failure);
            assertThat(failure).as("the check that failed").contains("was held by 2 requests at once");
        } finally {
            LocalKeyedSemaphore.removeWithoutClosingForTests = false;
        }
    }

    private static void explore(int invocations, Runnable scenario) {
        try {
            LincheckKt.runConcurrentTest(invocations, new SemaphoreLincheckTest.InFreshThread(scenario));
        } catch (Throwable e) {
            throw new AssertionError("an interleaving of " + scenario.getClass().getSimpleName() + " fails (the "
                    + "failed check, if any, is printed above; else it is a deadlock or an unexpected exception)", e);
        }
    }

    /** Limit 2 per key, keys 0 and 1; each key's Permits are kept by one thread (its group). */
    public static final class Operations {
        private final KeyedSemaphore<Integer> family = KeyedSemaphore.<Integer>builder().name("lincheck").permits(2)
                .build();
        private final ArrayDeque<Permit> held0 = new ArrayDeque<>();
        private final ArrayDeque<Permit> held1 = new ArrayDeque<>();
        /** Key 0's view as tryAcquire0 last got it: by now perhaps of an entry since retired (K7). */
        private Semaphore kept0 = family.get(0);

        public Operations() {
        }

        @Operation(nonParallelGroup = "0")
        public String tryAcquire0(@Param(gen = IntGen.class, conf = "1:2") int n) {
            return tryAcquire(0, held0, n);
        }

        @Operation(nonParallelGroup = "0")
        public long release0() {
            return release(held0);
        }

        @Operation(nonParallelGroup = "0")
        public String tryAcquireKept0(@Param(gen = IntGen.class, conf = "1:2") int n) {
            Optional<Permit> p = kept0.tryAcquire(n);
            if (p.isEmpty()) {
                return "refused";
            }
            held0.push(p.get());
            return "acquired";
        }

        @Operation(nonParallelGroup = "1")
        public String tryAcquire1(@Param(gen = IntGen.class, conf = "1:2") int n) {
            return tryAcquire(1, held1, n);
        }

        @Operation(nonParallelGroup = "1")
        public long release1() {
            return release(held1);
        }

        @Operation
        public long available0() {
            return family.get(0).availablePermits();
        }

        @Operation
        public long available1() {
            return family.get(1).availablePermits();
        }

        @Validate
        public void liveKeys() {
            int live = (held0.isEmpty() ? 0 : 1) + (held1.isEmpty() ? 0 : 1);
            check(family.size() == live, "live keys " + family.size() + ", expected " + live);
            check(((LocalKeyedSemaphore<Integer>) family).entriesForTests() == live, "entries left: " + family);
        }

        private String tryAcquire(int key, ArrayDeque<Permit> stack, int n) {
            Semaphore view = family.get(key);
            if (key == 0) {
                kept0 = view;
            }
            Optional<Permit> p = view.tryAcquire(n);
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

    /** The sequential specification: what each key holds, as a stack of Permit sizes. */
    public static final class Model {
        private final ArrayDeque<Long> held0 = new ArrayDeque<>();
        private final ArrayDeque<Long> held1 = new ArrayDeque<>();

        public Model() {
        }

        public String tryAcquire0(int n) {
            return tryAcquire(held0, n);
        }

        public long release0() {
            return release(held0);
        }

        public String tryAcquireKept0(int n) {
            return tryAcquire(held0, n);
        }

        public String tryAcquire1(int n) {
            return tryAcquire(held1, n);
        }

        public long release1() {
            return release(held1);
        }

        public long available0() {
            return 2 - sum(held0);
        }

        public long available1() {
            return 2 - sum(held1);
        }

        private static long sum(ArrayDeque<Long> stack) {
            return stack.stream().mapToLong(Long::longValue).sum();
        }

        private static String tryAcquire(ArrayDeque<Long> stack, long n) {
            if (2 - sum(stack) < n) {
                return "refused";
            }
            stack.push(n);
            return "acquired";
        }

        private static long release(ArrayDeque<Long> stack) {
            Long n = stack.poll();
            return n == null ? -1 : n;
        }
    }

    /**
     * Limit 1 for key "k". This thread holds it while another thread tries to take it; this thread then
     * releases it, which makes the key idle and removes it, and takes it again, which makes it anew, holding it
     * until the other request ended: all while the other request may be between its lookup and its grant. At no
     * instant may two requests hold it.
     */
    static final class LookupRacesWithRemoval implements Runnable {
        @Override
        public void run() {
            KeyedSemaphore<String> family = KeyedSemaphore.<String>builder().name("scenario").permits(1).build();
            AtomicInteger holding = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            Permit first = family.get("k").tryAcquire(1).orElseThrow();
            holding.incrementAndGet();
            Taker other = new Taker(family, holding, most);
            Thread t = start(other);
            holding.decrementAndGet();
            first.close();
            Optional<Permit> again = family.get("k").tryAcquire(1); // held until the other request ended
            if (again.isPresent()) {
                most.accumulateAndGet(holding.incrementAndGet(), Math::max);
            }
            join(t);
            if (again.isPresent()) {
                holding.decrementAndGet();
                again.get().close();
            }
            check(most.get() <= 1, "key 'k' of limit 1 was held by " + most.get() + " requests at once");
            check(family.size() == 0, "live keys left: " + family);
            check(((LocalKeyedSemaphore<String>) family).entriesForTests() == 0, "entries left: " + family);
        }
    }

    /** Takes key "k" if it can, counts itself among the holders while it holds it, then releases. */
    static final class Taker implements Runnable {
        private final KeyedSemaphore<String> family;
        private final AtomicInteger holding;
        private final AtomicInteger most;

        Taker(KeyedSemaphore<String> family, AtomicInteger holding, AtomicInteger most) {
            this.family = family;
            this.holding = holding;
            this.most = most;
        }

        @Override
        public void run() {
            Optional<Permit> p = family.get("k").tryAcquire(1);
            if (p.isPresent()) {
                most.accumulateAndGet(holding.incrementAndGet(), Math::max);
                holding.decrementAndGet();
                p.get().close();
            }
        }
    }
}
