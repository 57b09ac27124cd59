package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class ResizeTest {
    private final Attempts attempts = new Attempts();

    @AfterEach
    void noThreadLeftBehind() throws InterruptedException {
        attempts.close();
    }

    private static Semaphore semaphore(long permits, long maxPermits) {
        return Semaphore.builder().permits(permits).maxPermits(maxPermits).build();
    }

    @Test
    void setPermitsMovesTheLimitWithinItsBounds() {
        Semaphore s = semaphore(3, 10);
        s.setPermits(10);
        assertThat(s.permits()).isEqualTo(10);
        assertThat(s.availablePermits()).isEqualTo(10);
        s.setPermits(0);
        assertThat(s.permits()).isZero();
        assertThat(s.availablePermits()).isZero();
        s.setPermits(4);
        s.setPermits(4);
        assertThat(s.permits()).isEqualTo(4);
        assertThat(s.maxPermits()).isEqualTo(10);
        checkInvariants(s);
    }

    @ParameterizedTest
    @ValueSource(longs = {-1, 11, Long.MAX_VALUE, Long.MIN_VALUE, Semaphore.MAX_PERMITS + 1})
    void setPermitsOutsideZeroToCeilingThrowsNamingBothNumbersAndChangesNothing(long bad) {
        Semaphore s = semaphore(3, 10);
        Permit held = s.tryAcquire(1).orElseThrow();
        assertThatThrownBy(() -> s.setPermits(bad))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Long.toString(bad))
                .hasMessageContaining("10");
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.availablePermits()).isEqualTo(2);
        held.close();
        checkInvariants(s);
    }

    @Test
    void addPermitsRaisesTheLimitAndSaturatesAtTheCeiling() {
        Semaphore s = semaphore(3, 10);
        assertThat(s.addPermits(0)).isZero();
        assertThat(s.addPermits(4)).isEqualTo(4);
        assertThat(s.permits()).isEqualTo(7);
        assertThat(s.addPermits(5)).isEqualTo(3);
        assertThat(s.permits()).isEqualTo(10);
        assertThat(s.availablePermits()).isEqualTo(10);
        assertThat(s.addPermits(1)).isZero();
        assertThat(s.permits()).isEqualTo(10);
        checkInvariants(s);
    }

    @Test
    void addPermitsOfLongMaxValueFillsToTheCeilingWithoutOverflow() {
        Semaphore s = semaphore(3, 10);
        Permit held = s.tryAcquire(2).orElseThrow();
        assertThat(s.addPermits(Long.MAX_VALUE)).isEqualTo(7);
        assertThat(s.permits()).isEqualTo(10);
        assertThat(s.availablePermits()).isEqualTo(8);
        assertThat(s.addPermits(Long.MAX_VALUE)).isZero();
        assertThat(s.permits()).isEqualTo(10);

        Semaphore big = semaphore(Semaphore.MAX_PERMITS - 1, Semaphore.MAX_PERMITS);
        assertThat(big.addPermits(Long.MAX_VALUE)).isEqualTo(1);
        assertThat(big.permits()).isEqualTo(Semaphore.MAX_PERMITS);
        held.close();
        checkInvariants(s);
        checkInvariants(big);
    }

    @Test
    void reducePermitsLowersTheLimitNotBelowZero() {
        Semaphore s = semaphore(5, 10);
        assertThat(s.reducePermits(0)).isZero();
        assertThat(s.reducePermits(2)).isEqualTo(2);
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.reducePermits(7)).isEqualTo(3);
        assertThat(s.permits()).isZero();
        assertThat(s.reducePermits(1)).isZero();
        s.setPermits(4);
        assertThat(s.reducePermits(Long.MAX_VALUE)).isEqualTo(4);
        assertThat(s.permits()).isZero();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.maxPermits()).isEqualTo(10);
        checkInvariants(s);
    }

    @ParameterizedTest
    @ValueSource(longs = {-1, Long.MIN_VALUE})
    void negativeAddOrReduceThrowsAndChangesNothing(long bad) {
        Semaphore s = semaphore(5, 10);
        assertThatThrownBy(() -> s.addPermits(bad)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Long.toString(bad));
        assertThatThrownBy(() -> s.reducePermits(bad)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Long.toString(bad));
        assertThat(s.permits()).isEqualTo(5);
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void loweringBelowWhatIsHeldMakesAvailableNegativeAndLaterRequestsWait(AcquireStyle style) {
        Semaphore s = semaphore(5, 5);
        Permit held = s.tryAcquire(4).orElseThrow();
        s.setPermits(1);
        assertThat(s.permits()).isEqualTo(1);
        assertThat(s.availablePermits()).isEqualTo(-3);
        assertThat(held.permits()).as("held permits are never revoked").isEqualTo(4);
        assertThat(s.tryAcquire()).isEmpty();
        checkInvariants(s);

        Attempt<Permit> a = style.startQueued(attempts, s, 1);
        held.release(3);
        assertThat(s.availablePermits()).isZero();
        assertThat(s.queueLength()).isEqualTo(1);
        held.release(1);
        Permit p = a.join();
        assertThat(s.availablePermits()).isZero();
        p.close();
        assertThat(s.availablePermits()).isEqualTo(1);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void aReleaseThatLiftsANegativeAvailablePastTheHeadGrantsItAndLeavesTheRest(AcquireStyle style) {
        Semaphore s = semaphore(5, 5);
        Permit held = s.tryAcquire(5).orElseThrow();
        s.setPermits(4);
        assertThat(s.availablePermits()).isEqualTo(-1);
        Attempt<Permit> a = style.startQueued(attempts, s, 1);
        held.release(1);
        assertThat(s.availablePermits()).isZero();
        assertThat(s.queueLength()).as("0 free serves nobody").isEqualTo(1);
        held.release(3); // 3 free: the head takes 1, 2 stay free
        Permit p = a.join();
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(held.permits()).isEqualTo(1);
        checkInvariants(s);
        p.close();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(4);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void oneReleaseServesTheHeadsItCoversTogetherWithWhatIsFreeAndLeavesTheRestFree(AcquireStyle style) {
        Semaphore s = semaphore(8, 8);
        Permit held = s.tryAcquire(7).orElseThrow();
        Attempt<Permit> a = style.startQueued(attempts, s, 3);
        Attempt<Permit> b = style.startQueued(attempts, s, 2);
        Attempt<Permit> c = style.startQueued(attempts, s, 4);
        held.release(1);
        assertThat(s.availablePermits()).as("1 released + 1 free < 3").isEqualTo(2);
        assertThat(s.queueLength()).isEqualTo(3);
        held.release(5); // 7 free: a takes 3 (1 of them was free before), b takes 2, c (4) does not fit
        Permit pa = a.join();
        Permit pb = b.join();
        assertThat(s.availablePermits()).isEqualTo(2);
        assertThat(s.queueLength()).isEqualTo(1);
        checkInvariants(s);
        pa.close(); // 5 free: c takes 4
        Permit pc = c.join();
        assertThat(s.availablePermits()).isEqualTo(1);
        pb.close();
        pc.close();
        held.close();
        assertThat(s.availablePermits()).isEqualTo(8);
        checkInvariants(s);
    }

    @Test
    void reducePermitsBelowWhatIsHeldNeverRevokes() {
        Semaphore s = semaphore(4, 4);
        Permit held = s.tryAcquire(3).orElseThrow();
        assertThat(s.reducePermits(4)).isEqualTo(4);
        assertThat(s.permits()).isZero();
        assertThat(s.availablePermits()).isEqualTo(-3);
        assertThat(held.permits()).isEqualTo(3);
        checkInvariants(s);
        held.close();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.addPermits(2)).isEqualTo(2);
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(AcquireStyle.class)
    void raisingTheLimitServesWaitersAtOnce(AcquireStyle style) {
        Semaphore s = semaphore(0, 10);
        Attempt<Permit> a = style.startQueued(attempts, s, 2);
        Attempt<Permit> b = style.startQueued(attempts, s, 3);
        Attempt<Permit> c = style.startQueued(attempts, s, 4);
        assertThat(s.addPermits(5)).isEqualTo(5);
        Permit pa = a.join();
        Permit pb = b.join();
        assertThat(s.queueLength()).isEqualTo(1);
        s.setPermits(9);
        Permit pc = c.join();
        assertThat(s.availablePermits()).isZero();
        assertThat(s.queueLength()).isZero();
        pa.close();
        pb.close();
        pc.close();
        assertThat(s.availablePermits()).isEqualTo(9);
        checkInvariants(s);
    }

    @Test
    void raisingTheLimitCompletesFuturesBeforeReturning() {
        Semaphore s = semaphore(0, 10);
        CompletableFuture<Permit> a = s.acquireAsync(2);
        CompletableFuture<Permit> b = s.acquireAsync(2);
        s.setPermits(2);
        assertThat(a).isCompleted();
        assertThat(b).isNotDone();
        assertThat(s.addPermits(2)).isEqualTo(2);
        assertThat(b).isCompleted();
        a.join().close();
        b.join().close();
        checkInvariants(s);
    }

    @Test
    void loweringTheLimitServesNobodyAndKeepsTheQueue() {
        Semaphore s = semaphore(3, 10);
        Permit held = s.tryAcquire(3).orElseThrow();
        CompletableFuture<Permit> a = s.acquireAsync(2);
        s.setPermits(1);
        assertThat(s.reducePermits(1)).isEqualTo(1);
        assertThat(a).isNotDone();
        assertThat(s.queueLength()).isEqualTo(1);
        checkInvariants(s);
        held.close();
        assertThat(s.availablePermits()).isZero();
        assertThat(a).isNotDone();
        s.setPermits(2);
        assertThat(a).isCompleted();
        a.join().close();
        checkInvariants(s);
    }

    @Test
    void addPermitsThatSaturatesStillServesWaiters() {
        Semaphore s = semaphore(1, 3);
        Permit held = s.tryAcquire(1).orElseThrow();
        CompletableFuture<Permit> a = s.acquireAsync(3);
        assertThat(s.addPermits(100)).isEqualTo(2);
        assertThat(a).isNotDone(); // 2 of 3 free while 1 is held
        held.close();
        assertThat(a).isCompleted();
        a.join().close();
        assertThat(s.availablePermits()).isEqualTo(3);
        checkInvariants(s);
    }

    @Test
    void resizingNeverBlocksEvenWithWaitersQueued() throws Exception {
        Semaphore s = semaphore(2, 4);
        Permit held = s.acquire(2);
        Attempt<Permit> waiter = AcquireStyle.BLOCKING.startQueued(attempts, s, 4);
        Attempt<Long> resizer = attempts.blocking("resizer", () -> {
            s.setPermits(0);
            s.reducePermits(3);
            s.setPermits(3);
            return s.addPermits(0);
        });
        assertThat(resizer.join()).isZero();
        assertThat(s.permits()).isEqualTo(3);
        assertThat(s.queueLength()).isEqualTo(1);
        s.addPermits(1);
        held.close();
        waiter.join().close();
        assertThat(s.availablePermits()).isEqualTo(4);
        checkInvariants(s);
    }
}
