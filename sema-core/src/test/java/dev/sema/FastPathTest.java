package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.internal.FastPath;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link FastPath}, the uncontended acquire alone that sema-kotlin tries before it suspends: a grant when the
 * lock-free path applies, reported as one; otherwise nothing done and nothing reported (not a refusal).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FastPathTest {

    private final ListenerTest.Recorder recorder = new ListenerTest.Recorder();

    private FastPath observed(Fairness fairness, long permits, long max) {
        return (FastPath) Semaphore.builder().permits(permits).maxPermits(max).fairness(fairness)
                .listener(recorder).build();
    }

    @Test
    void freePermitsAreGrantedAndReportedAsAGrant() {
        FastPath fast = observed(Fairness.FIFO, 2, 2);
        Semaphore s = (Semaphore) fast;
        Permit p = fast.tryFastPath(2);
        assertThat(p).isNotNull();
        assertThat(p.permits()).isEqualTo(2);
        assertThat(s.availablePermits()).isZero();
        p.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(recorder.events).containsExactly("acquired 2", "released 2");
        ((LocalSemaphore) s).checkInvariants();
    }

    @Test
    void notEnoughFreeChangesAndReportsNothing() {
        FastPath fast = observed(Fairness.FIFO, 1, 4);
        Semaphore s = (Semaphore) fast;
        assertThat(fast.tryFastPath(2)).isNull();
        assertThat(s.availablePermits()).isEqualTo(1);
        assertThat(recorder.events).isEmpty();
        ((LocalSemaphore) s).checkInvariants();
    }

    @Test
    void aQueuedWaiterKeepsFifoNewcomersOffTheFastPath() {
        FastPath fast = observed(Fairness.FIFO, 2, 2);
        Semaphore s = (Semaphore) fast;
        Permit one = s.tryAcquire().orElseThrow();
        CompletableFuture<Permit> two = s.acquireAsync(2);
        assertThat(fast.tryFastPath(1)).isNull(); // one permit is free, but the head waits for two
        assertThat(s.availablePermits()).isEqualTo(1);
        one.close();
        two.join().close();
        assertThat(recorder.events).containsExactly("acquired 1", "released 1", "acquired 2", "released 2");
        ((LocalSemaphore) s).checkInvariants();
    }

    @Test
    void aClosedSemaphoreIsLeftToTheOrdinaryRequest() {
        FastPath fast = observed(Fairness.BARGING, 2, 2);
        Semaphore s = (Semaphore) fast;
        s.close();
        assertThat(fast.tryFastPath(1)).isNull();
        assertThat(recorder.events).containsExactly("closed");
    }

    @Test
    void anOutOfRangeRequestIsRefusedAsEveryAcquireRefusesIt() {
        FastPath fast = observed(Fairness.FIFO, 2, 2);
        assertThatThrownBy(() -> fast.tryFastPath(3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> fast.tryFastPath(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(fast.tryFastPath(0)).isNotNull();
    }
}
