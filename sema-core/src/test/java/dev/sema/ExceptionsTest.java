package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class ExceptionsTest {

    @Test
    void semaphoreClosedExceptionIsAnUncheckedIllegalStateException() {
        assertThat(IllegalStateException.class).isAssignableFrom(SemaphoreClosedException.class);
        SemaphoreClosedException e = new SemaphoreClosedException("semaphore 'x' is closed");
        assertThat(e).isInstanceOf(RuntimeException.class).hasMessage("semaphore 'x' is closed");
    }

    @Test
    void closedMessagesNameTheSemaphoreAndWhatWasAsked() throws Exception {
        Semaphore s = Semaphore.builder().permits(9).name("jobs").build();
        s.close();
        assertThatThrownBy(() -> s.acquire(3)).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("jobs").hasMessageContaining("acquire").hasMessageContaining("3");
        assertThatThrownBy(() -> s.acquire(6, Duration.ofSeconds(1))).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("jobs").hasMessageContaining("acquire").hasMessageContaining("6");
        assertThatThrownBy(() -> s.tryAcquire(4)).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("jobs").hasMessageContaining("tryAcquire").hasMessageContaining("4");
        assertThat(Attempt.async("f", s.acquireAsync(5)).failure()).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("jobs").hasMessageContaining("acquire").hasMessageContaining("5");
        checkInvariants(s);
    }

    @Test
    void waitersFailedByCloseAreToldWhichSemaphoreAndWhatTheyAsked() throws Exception {
        Semaphore s = Semaphore.builder().permits(9).name("uploads").build();
        Permit held = s.acquire(9);
        CompletableFuture<Permit> waiter = s.acquireAsync(7);
        s.close();
        assertThat(Attempt.async("waiter", waiter).failure()).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("uploads").hasMessageContaining("7");
        held.close();
        checkInvariants(s);
    }

    @Test
    void requestMessagesNameBothNumbers() {
        Semaphore s = Semaphore.builder().permits(20).maxPermits(37).name("pool").build();
        assertThatThrownBy(() -> s.acquire(41)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("41").hasMessageContaining("37");
        assertThatThrownBy(() -> s.acquire(-5)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-5").hasMessageContaining("37");
        assertThatThrownBy(() -> s.acquireAsync(41, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("41").hasMessageContaining("37");
        assertThatThrownBy(() -> s.setPermits(41)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("41").hasMessageContaining("37");
        assertThatThrownBy(() -> Semaphore.builder().permits(41).maxPermits(37).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("41").hasMessageContaining("37");
        checkInvariants(s);
    }

    @Test
    void permitMessagesNameBothNumbers() throws Exception {
        Semaphore s = Semaphore.create(30);
        Permit p = s.acquire(23);
        assertThatThrownBy(() -> p.release(29)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("29").hasMessageContaining("23");
        assertThatThrownBy(() -> p.split(29)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("29").hasMessageContaining("23");
        p.close();
        checkInvariants(s);
    }
}
