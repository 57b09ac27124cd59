package dev.sema;

import dev.sema.contract.SemaphoreContract;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Nested;

/**
 * The shared contract on a key of a keyed semaphore: every request goes through a view of key "k" of a family of
 * its own, and another handle is another view of the key (got again, perhaps after the key was retired and made
 * again between the scenario's steps). A key cannot be resized, and its ceiling is its limit (API.md §11b), so the
 * scenarios that resize are skipped; closing closes the family, which has no cause to give; listeners are the
 * family's. With and without a parent (a limit far above the key's, so that it never decides).
 */
class KeyViewContractTest {
    private static final String KEY = "k";

    @Nested
    class Alone extends KeyContract {
        @Override
        KeyedSemaphore.Builder<String> family(long permits) {
            return KeyedSemaphore.<String>builder().name("keys").permits(permits);
        }
    }

    @Nested
    class WithAParent extends KeyContract {
        @Override
        KeyedSemaphore.Builder<String> family(long permits) {
            Semaphore parent = Semaphore.builder().name("parent").permits(Semaphore.MAX_PERMITS).build();
            return KeyedSemaphore.<String>builder().name("keys").permits(permits).parent(parent);
        }
    }

    abstract static class KeyContract extends SemaphoreContract {
        abstract KeyedSemaphore.Builder<String> family(long permits);

        @Override
        protected Semaphore create(long permits, long maxPermits) {
            return new KeyUnderTest((LocalKeyedSemaphore<String>) family(permits).build(), KEY);
        }

        @Override
        protected Semaphore other(Semaphore s) {
            return new KeyUnderTest(((KeyUnderTest) s).family, KEY);
        }

        @Override
        protected boolean resizable() {
            return false;
        }

        @Override
        protected boolean closableWithCause() {
            return false;
        }

        /** The key's engine's invariants, and K3: a live key of an open family holds permits or has waiters. */
        @Override
        protected void checkInvariants(Semaphore s) {
            LocalKeyedSemaphore<String> family = ((KeyUnderTest) s).family;
            LocalKeyedSemaphore.Entry<String> e = family.peek(KEY);
            if (e == null) {
                return;
            }
            e.engine.checkInvariants();
            if (!family.isClosed() && e.engine.availablePermits() == e.engine.permits()
                    && e.engine.queueLength() == 0) {
                throw new AssertionError("key " + KEY + " is idle but still live: " + family);
            }
        }
    }

    /** A view of the key, got again at each request; the family's close and listeners. */
    private record KeyUnderTest(LocalKeyedSemaphore<String> family, String key) implements Semaphore {
        private Semaphore view() {
            return family.get(key);
        }

        @Override
        public Permit acquire(long permits) throws InterruptedException {
            return view().acquire(permits);
        }

        @Override
        public Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
            return view().acquire(permits, timeout);
        }

        @Override
        public Permit acquireUninterruptibly(long permits) {
            return view().acquireUninterruptibly(permits);
        }

        @Override
        public Permit drainPermits() {
            return view().drainPermits();
        }

        @Override
        public Optional<Permit> tryAcquire(long permits) {
            return view().tryAcquire(permits);
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long permits) {
            return view().acquireAsync(permits);
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
            return view().acquireAsync(permits, timeout);
        }

        @Override
        public void awaitIdle() throws InterruptedException {
            view().awaitIdle();
        }

        @Override
        public CompletableFuture<Void> awaitIdleAsync() {
            return view().awaitIdleAsync();
        }

        @Override
        public long permits() {
            return view().permits();
        }

        @Override
        public long maxPermits() {
            return view().maxPermits();
        }

        @Override
        public long availablePermits() {
            return view().availablePermits();
        }

        @Override
        public void setPermits(long limit) {
            view().setPermits(limit);
        }

        @Override
        public long addPermits(long n) {
            return view().addPermits(n);
        }

        @Override
        public long reducePermits(long n) {
            return view().reducePermits(n);
        }

        @Override
        public int queueLength() {
            return view().queueLength();
        }

        @Override
        public Fairness fairness() {
            return view().fairness();
        }

        @Override
        public void close() {
            family.close();
        }

        @Override
        public void close(Throwable cause) {
            view().close(cause);
        }

        @Override
        public boolean isClosed() {
            return view().isClosed();
        }

        @Override
        public void addListener(SemaphoreListener listener) {
            family.addListener(listener);
        }

        @Override
        public boolean removeListener(SemaphoreListener listener) {
            return family.removeListener(listener);
        }

        @Override
        public String name() {
            return view().name();
        }

        @Override
        public String toString() {
            return view().toString();
        }
    }
}
