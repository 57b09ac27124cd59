package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SemaphoreBuilderTest {

    @Test
    void createMakesFifoSemaphoreWhoseLimitIsItsCeiling() {
        Semaphore s = Semaphore.create(5);
        assertThat(s.permits()).isEqualTo(5);
        assertThat(s.maxPermits()).isEqualTo(5);
        assertThat(s.availablePermits()).isEqualTo(5);
        assertThat(s.fairness()).isEqualTo(Fairness.FIFO);
        assertThat(s.queueLength()).isZero();
        assertThat(s.isClosed()).isFalse();
        assertThat(s.name()).isNotBlank();
        checkInvariants(s);
    }

    @Test
    void builderDefaultsToEmptyFifoSemaphoreWithCeilingZero() {
        Semaphore s = Semaphore.builder().build();
        assertThat(s.permits()).isZero();
        assertThat(s.maxPermits()).isZero();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.fairness()).isEqualTo(Fairness.FIFO);
        assertThat(s.name()).isNotBlank();
        checkInvariants(s);
    }

    @Test
    void builderCeilingDefaultsToTheLimit() {
        Semaphore s = Semaphore.builder().permits(7).build();
        assertThat(s.permits()).isEqualTo(7);
        assertThat(s.maxPermits()).isEqualTo(7);
        assertThat(s.addPermits(1)).isZero();
        checkInvariants(s);
    }

    @Test
    void builderWithHigherCeilingStartsEmptyAndIsFilledLater() throws Exception {
        Semaphore s = Semaphore.builder().maxPermits(10).build();
        assertThat(s.permits()).isZero();
        assertThat(s.maxPermits()).isEqualTo(10);
        CompletableFuture<Permit> f = s.acquireAsync(3);
        assertThat(f).isNotDone();
        assertThat(s.addPermits(4)).isEqualTo(4);
        assertThat(f).isCompleted();
        assertThat(s.availablePermits()).isEqualTo(1);
        f.join().close();
        assertThat(s.availablePermits()).isEqualTo(4);
        checkInvariants(s);
    }

    @Test
    void builderSetsEverything() {
        Semaphore s = Semaphore.builder().permits(3).maxPermits(8).fairness(Fairness.BARGING).name("db-pool").build();
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.maxPermits()).isEqualTo(8);
        assertThat(s.availablePermits()).isEqualTo(3);
        assertThat(s.fairness()).isEqualTo(Fairness.BARGING);
        assertThat(s.name()).isEqualTo("db-pool");
        checkInvariants(s);
    }

    @Test
    void setterOrderDoesNotMatter() {
        Semaphore s = Semaphore.builder().maxPermits(8).permits(3).build();
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.maxPermits()).isEqualTo(8);
        checkInvariants(s);
    }

    @Test
    void createZeroMakesSemaphoreWhoseCeilingIsZero() throws Exception {
        Semaphore s = Semaphore.create(0);
        assertThat(s.maxPermits()).isZero();
        try (Permit p = s.acquire(0)) {
            assertThat(p.permits()).isZero();
        }
        assertThatThrownBy(() -> s.acquire(1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.acquireAsync(1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(s.addPermits(1)).isZero();
        checkInvariants(s);
    }

    @Test
    void maxPermitsIsAtLeastTwoToTheThirtyFirstAndUsable() throws Exception {
        assertThat(Semaphore.MAX_PERMITS).isGreaterThanOrEqualTo(1L << 31);
        Semaphore s = Semaphore.create(Semaphore.MAX_PERMITS);
        assertThat(s.permits()).isEqualTo(Semaphore.MAX_PERMITS);
        Permit all = s.acquire(Semaphore.MAX_PERMITS);
        assertThat(s.availablePermits()).isZero();
        s.setPermits(0);
        assertThat(s.availablePermits()).isEqualTo(-Semaphore.MAX_PERMITS);
        checkInvariants(s);
        all.close();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.addPermits(Long.MAX_VALUE)).isEqualTo(Semaphore.MAX_PERMITS);
        assertThat(s.availablePermits()).isEqualTo(Semaphore.MAX_PERMITS);
        checkInvariants(s);
    }

    @ParameterizedTest
    @ValueSource(longs = {-1, Long.MIN_VALUE, Semaphore.MAX_PERMITS + 1, Long.MAX_VALUE})
    void outOfRangeCountsAreRejectedAtOnce(long bad) {
        String number = Long.toString(bad);
        assertThatThrownBy(() -> Semaphore.create(bad))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(number);
        assertThatThrownBy(() -> Semaphore.builder().permits(bad))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(number);
        assertThatThrownBy(() -> Semaphore.builder().maxPermits(bad))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(number);
    }

    @Test
    void countAboveMaxPermitsNamesTheBound() {
        assertThatThrownBy(() -> Semaphore.create(Semaphore.MAX_PERMITS + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Long.toString(Semaphore.MAX_PERMITS + 1))
                .hasMessageContaining(Long.toString(Semaphore.MAX_PERMITS));
    }

    @Test
    void limitAboveCeilingIsRejectedNamingBothNumbers() {
        Semaphore.Builder b = Semaphore.builder().permits(12).maxPermits(9);
        assertThatThrownBy(b::build)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("12")
                .hasMessageContaining("9");
        assertThatThrownBy(() -> Semaphore.builder().maxPermits(9).permits(12).build())
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void nullFairnessAndNameAreRejected() {
        assertThatThrownBy(() -> Semaphore.builder().fairness(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> Semaphore.builder().name(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void blankNameIsRejected() {
        assertThatThrownBy(() -> Semaphore.builder().name(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Semaphore.builder().name("")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void generatedNamesAreUnique() {
        Set<String> names = new HashSet<>();
        for (int i = 0; i < 1000; i++) {
            Semaphore s = i % 2 == 0 ? Semaphore.create(1) : Semaphore.builder().build();
            assertThat(names.add(s.name())).as("name %s is new", s.name()).isTrue();
            assertThat(s.name()).isNotBlank();
            checkInvariants(s);
        }
    }

    @Test
    void eachBuildMakesAnIndependentSemaphore() throws Exception {
        Semaphore.Builder b = Semaphore.builder().permits(2);
        Semaphore a = b.build();
        Semaphore c = b.build();
        assertThat(a).isNotSameAs(c);
        try (Permit p = a.acquire(2)) {
            assertThat(c.availablePermits()).isEqualTo(2);
        }
        checkInvariants(a);
        checkInvariants(c);
    }
}
