package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RefillTest {

    @Test
    void waiterIsServedOnceRefillsSuffice() throws Exception {
        Semaphore s = Semaphore.builder().permits(0).maxPermits(5).refill(1, Duration.ofMillis(5)).build();
        try (Permit p = s.acquire(3)) {
            assertThat(p.permits()).isEqualTo(3);
            assertThat(s.permits()).isGreaterThanOrEqualTo(3);
        }
        s.close();
    }

    @Test
    void creditAccruesUpToTheCeilingAndIsSpentByForget() throws Exception {
        // Refills race with the test thread, so the spend is seen through the listener, not by timing.
        java.util.List<long[]> changes = new java.util.concurrent.CopyOnWriteArrayList<>();
        Semaphore s = Semaphore.builder().permits(2).maxPermits(4).refill(1, Duration.ofMillis(2))
                .listener(new SemaphoreListener() {
                    @Override
                    public void limitChanged(Semaphore semaphore, long oldLimit, long newLimit) {
                        changes.add(new long[] {oldLimit, newLimit});
                    }
                }).build();
        s.acquire(2).forget();
        assertThat(changes).anySatisfy(c -> assertThat(c[1]).isEqualTo(c[0] - 2)); // forget spent 2 of credit
        assertThat(changes).allSatisfy(c -> assertThat(c[1]).isBetween(c[0] - 2, c[0] + 1));
        awaitUntil(() -> s.permits() == 4);
        assertThat(s.availablePermits()).isEqualTo(4);
        s.close();
    }

    @Test
    void closeStopsTheRefill() {
        Semaphore s = Semaphore.builder().permits(0).maxPermits(1000).refill(1, Duration.ofMillis(1)).build();
        ScheduledFuture<?> task = ((LocalSemaphore) s).refillTask;
        s.close();
        assertThat(task.isCancelled()).isTrue();
        long after = s.permits();
        assertThat(s.permits()).isEqualTo(after);
        assertThat(Scheduler.INSTANCE.getQueue()).doesNotContain((Runnable) task);
    }

    @Test
    void unreachableSemaphoreStopsItsRefill() throws Exception {
        Semaphore s = Semaphore.builder().permits(0).maxPermits(10).refill(1, Duration.ofMillis(1)).build();
        ScheduledFuture<?> task = ((LocalSemaphore) s).refillTask;
        WeakReference<Semaphore> ref = new WeakReference<>(s);
        s = null;
        awaitUntil(() -> {
            System.gc();
            return ref.get() == null && task.isCancelled();
        });
    }

    @Test
    void badRefillArgumentsAreRejected() {
        assertThatThrownBy(() -> Semaphore.builder().refill(0, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0");
        assertThatThrownBy(() -> Semaphore.builder().refill(Semaphore.MAX_PERMITS + 1, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Semaphore.builder().refill(1, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("period");
        assertThatThrownBy(() -> Semaphore.builder().refill(1, null)).isInstanceOf(NullPointerException.class);
    }

    private static void awaitUntil(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("condition not reached in time").isNegative();
            Thread.sleep(5); // polling an observable state; the condition decides
        }
    }
}
