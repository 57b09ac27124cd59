package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class SmokeTest {
    @Test
    void acquireReleaseAndQueue() throws Exception {
        Semaphore s = Semaphore.create(2);
        Permit a = s.acquire(2);
        CompletableFuture<Permit> f = s.acquireAsync(1);
        assertThat(f).isNotDone();
        assertThat(s.queueLength()).isEqualTo(1);
        a.release(1);
        assertThat(f).isDone();
        f.join().close();
        a.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        ((LocalSemaphore) s).checkInvariants();
    }

    @Test
    void longChainOfAsyncWaitersDoesNotOverflowTheStack() throws Exception {
        Semaphore s = Semaphore.create(1);
        Permit first = s.acquire();
        int n = 100_000;
        CompletableFuture<?>[] all = new CompletableFuture<?>[n];
        for (int i = 0; i < n; i++) {
            all[i] = s.acquireAsync().thenAccept(Permit::close);
        }
        first.close();
        CompletableFuture.allOf(all).join();
        assertThat(s.availablePermits()).isEqualTo(1);
        ((LocalSemaphore) s).checkInvariants();
    }
}
