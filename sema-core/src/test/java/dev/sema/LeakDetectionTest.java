package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LeakDetectionTest {
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void captureLog() {
        Logger.getLogger("dev.sema").addHandler(capture);
    }

    @AfterEach
    void releaseLog() {
        Logger.getLogger("dev.sema").removeHandler(capture);
    }

    @Test
    void leakedPermitIsReportedWithItsStackAndReturnedAtParanoid() throws Exception {
        Semaphore s = Semaphore.builder().permits(3).name("leaky").leakDetection(LeakDetection.PARANOID).build();
        leak(s, 2);
        CompletableFuture<Permit> waiter = s.acquireAsync(3); // cannot run until the leak is found
        awaitGc(() -> waiter.isDone());

        assertThat(((LocalSemaphore) s).leakedPermits()).isEqualTo(2);
        assertThat(records).anySatisfy(r -> {
            assertThat(r.getMessage()).contains("leaky").contains("2 permits");
            assertThat(r.getThrown()).isNotNull();
            assertThat(r.getThrown().getStackTrace())
                    .anySatisfy(e -> assertThat(e.getMethodName()).isEqualTo("leak"));
        });
        waiter.join().close();
        assertThat(s.availablePermits()).isEqualTo(3);
        ((LocalSemaphore) s).checkInvariants();
    }

    @Test
    void sampledLevelReturnsEveryLeakedPermit() throws Exception {
        Semaphore s = Semaphore.builder().permits(5).leakDetection(LeakDetection.SAMPLED).build();
        for (int i = 0; i < 5; i++) {
            leak(s, 1);
        }
        awaitGc(() -> s.availablePermits() == 5);
        assertThat(((LocalSemaphore) s).leakedPermits()).isEqualTo(5);
    }

    @Test
    void closedSplitAndMergedPermitsAreNotReported() throws Exception {
        Semaphore s = Semaphore.builder().permits(4).leakDetection(LeakDetection.PARANOID).build();
        Permit a = s.acquire(4);
        Permit b = a.split(2);
        Permit c = s.acquire(0);
        c.merge(b);
        a.close();
        c.close();
        a = b = c = null;
        // A tracked leak of one permit is the canary: once it is found, the others were seen too.
        leak(s, 1);
        awaitGc(() -> ((LocalSemaphore) s).leakedPermits() > 0);
        assertThat(((LocalSemaphore) s).leakedPermits()).isEqualTo(1);
        assertThat(s.availablePermits()).isEqualTo(4);
    }

    @Test
    void offIsTheDefaultAndTracksNothing() throws Exception {
        Semaphore s = Semaphore.create(1);
        try (Permit p = s.acquire()) {
            assertThat(p).isInstanceOf(PlainPermit.class);
        }
        assertThatThrownBy(() -> Semaphore.builder().leakDetection(null)).isInstanceOf(NullPointerException.class);
    }

    private static void leak(Semaphore s, long permits) throws InterruptedException {
        s.acquire(permits); // dropped on the floor
    }

    private static void awaitGc(BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("leak not detected in time").isNegative();
            System.gc();
            Thread.sleep(10); // gives the cleaner thread a chance; the condition decides, not the time
        }
    }
}
