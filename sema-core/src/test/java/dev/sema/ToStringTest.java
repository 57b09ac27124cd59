package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class ToStringTest {

    @Test
    void showsNameLimitAvailableQueueLengthAndWhetherClosed() throws Exception {
        Semaphore s = Semaphore.builder().permits(17).maxPermits(40).name("render-farm").build();
        Permit held = s.acquire(5);
        CompletableFuture<Permit> a = s.acquireAsync(13);
        CompletableFuture<Permit> b = s.acquireAsync(1);
        CompletableFuture<Void> idle = s.awaitIdleAsync();
        assertThat(s.toString())
                .contains("render-farm")
                .contains("permits=17")
                .contains("available=12")
                .contains("queued=3")
                .contains("closed=false");

        s.setPermits(2);
        s.close();
        assertThat(a).isCompletedExceptionally();
        assertThat(b).isCompletedExceptionally();
        assertThat(s.toString())
                .contains("render-farm")
                .contains("permits=2")
                .contains("available=-3")
                .contains("queued=1")
                .contains("closed=true");
        held.close();
        assertThat(idle).isCompleted();
        assertThat(s.toString()).contains("available=2").contains("queued=0");
        checkInvariants(s);
    }

    @Test
    void permitToStringNamesItsSemaphoreAndCount() throws Exception {
        Semaphore s = Semaphore.builder().permits(9).name("uploads").build();
        Permit p = s.acquire(4);
        assertThat(p.toString()).contains("uploads").contains("4");
        p.close();
        checkInvariants(s);
    }
}
