package dev.sema.redis;

import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The shared contract on a partition's view of a Redis semaphore, as LocalPartitionViewContractTest runs it on
 * the local engine: every request goes through the view of the one partition ("all", share 1), and what the
 * contract does to the semaphore itself (resizing, closing, listening), which a view refuses, goes to its
 * parent. The second process's handle is the view of a handle that declares no partitions and takes the stored
 * one. {@link Redis62PartitionViewContractTest} runs it on Redis 6.2.
 */
class RedisPartitionViewContractTest extends RedisContractTest {
    private static final AtomicInteger NAMES = new AtomicInteger();

    @Override
    protected Semaphore create(long permits, long maxPermits) {
        RedisSemaphore parent = a.semaphore("view-contract-" + NAMES.incrementAndGet()).permits(permits)
                .maxPermits(maxPermits).partition("all", 1.0).build();
        return new ViewUnderTest(parent, parent.partition("all"));
    }

    @Override
    protected Semaphore other(Semaphore s) {
        RedisSemaphore parent = b.semaphore(((ViewUnderTest) s).parent.name()).build();
        return new ViewUnderTest(parent, parent.partition("all"));
    }

    @Override
    protected void checkInvariants(Semaphore s) {
        RedisTestSupport.checkPartitionInvariants(RedisTestSupport.redis, ((ViewUnderTest) s).parent.name());
    }

    /** A view, with the parent's resizing, closing and listeners. */
    private record ViewUnderTest(Semaphore parent, Semaphore view) implements Semaphore {
        @Override
        public Permit acquire(long permits) throws InterruptedException {
            return view.acquire(permits);
        }

        @Override
        public Permit acquire(long permits, Duration timeout) throws InterruptedException, TimeoutException {
            return view.acquire(permits, timeout);
        }

        @Override
        public Permit acquireUninterruptibly(long permits) {
            return view.acquireUninterruptibly(permits);
        }

        @Override
        public Permit drainPermits() {
            return view.drainPermits();
        }

        @Override
        public Optional<Permit> tryAcquire(long permits) {
            return view.tryAcquire(permits);
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long permits) {
            return view.acquireAsync(permits);
        }

        @Override
        public CompletableFuture<Permit> acquireAsync(long permits, Duration timeout) {
            return view.acquireAsync(permits, timeout);
        }

        @Override
        public void awaitIdle() throws InterruptedException {
            view.awaitIdle();
        }

        @Override
        public CompletableFuture<Void> awaitIdleAsync() {
            return view.awaitIdleAsync();
        }

        @Override
        public long permits() {
            return view.permits();
        }

        @Override
        public long maxPermits() {
            return view.maxPermits();
        }

        @Override
        public long availablePermits() {
            return parent.availablePermits(); // a view's is what it could take, never negative (PartitionsTest)
        }

        @Override
        public void setPermits(long limit) {
            parent.setPermits(limit);
        }

        @Override
        public long addPermits(long n) {
            return parent.addPermits(n);
        }

        @Override
        public long reducePermits(long n) {
            return parent.reducePermits(n);
        }

        @Override
        public int queueLength() {
            return view.queueLength();
        }

        @Override
        public Fairness fairness() {
            return view.fairness();
        }

        @Override
        public void close() {
            parent.close();
        }

        @Override
        public void close(Throwable cause) {
            parent.close(cause);
        }

        @Override
        public boolean isClosed() {
            return view.isClosed();
        }

        @Override
        public void addListener(SemaphoreListener listener) {
            parent.addListener(listener);
        }

        @Override
        public boolean removeListener(SemaphoreListener listener) {
            return parent.removeListener(listener);
        }

        @Override
        public String name() {
            return view.name();
        }
    }
}
