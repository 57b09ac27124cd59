package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class GateTest {

    private final List<Gate> gates = new ArrayList<>();

    private Gate gate(String name) {
        Gate g = new Gate(name);
        gates.add(g);
        return g;
    }

    @AfterEach
    void invariantsHold() {
        gates.forEach(Gate::checkInvariants);
    }

    @Test
    void enterAndLeaveCountPassesInside() {
        Gate g = gate("g");
        Gate.Pass a = g.enter();
        Gate.Pass b = g.tryEnter().orElseThrow();
        assertThat(g.inside()).isEqualTo(2);
        a.close();
        assertThat(g.inside()).isEqualTo(1);
        b.close();
        assertThat(g.inside()).isZero();
        assertThat(g.isClosed()).isFalse();
    }

    @Test
    void closeWithNothingInsideCompletesAtOnce() {
        Gate g = gate("g");
        CompletableFuture<Void> closed = g.close();
        assertThat(closed).isCompletedWithValue(null);
        assertThat(g.isClosed()).isTrue();
    }

    @Test
    void closeCompletesOnlyWhenTheLastPassIsClosed() {
        Gate g = gate("g");
        Gate.Pass a = g.enter();
        Gate.Pass b = g.enter();
        CompletableFuture<Void> closed = g.close();
        assertThat(closed).isNotDone();
        a.close();
        assertThat(closed).isNotDone();
        assertThat(g.inside()).isEqualTo(1);
        b.close();
        assertThat(closed).isCompletedWithValue(null);
        assertThat(g.inside()).isZero();
    }

    @Test
    void enterOnAClosedGateThrowsNamingTheGate() {
        Gate g = gate("orders");
        g.close();
        assertThatThrownBy(g::enter)
                .isInstanceOf(GateClosedException.class)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("orders")
                .hasMessageContaining("enter()");
        assertThat(g.inside()).isZero();
    }

    @Test
    void tryEnterOnAClosedGateIsEmpty() {
        Gate g = gate("g");
        Gate.Pass open = g.enter();
        g.close();
        assertThat(g.tryEnter()).isEmpty();
        assertThat(g.inside()).isEqualTo(1);
        open.close();
    }

    @Test
    void passesOpenBeforeCloseStayValidAndMayCloseAfterIt() {
        Gate g = gate("g");
        Gate.Pass p = g.enter();
        CompletableFuture<Void> closed = g.close();
        assertThat(g.inside()).isEqualTo(1);
        p.close();
        assertThat(closed).isDone();
    }

    @Test
    void closingAPassTwiceLeavesOnce() {
        Gate g = gate("g");
        Gate.Pass a = g.enter();
        Gate.Pass b = g.enter();
        a.close();
        a.close();
        assertThat(g.inside()).isEqualTo(1);
        CompletableFuture<Void> closed = g.close();
        a.close();
        assertThat(closed).isNotDone();
        b.close();
        assertThat(closed).isDone();
    }

    @Test
    void racingClosesOfOnePassLeaveOnce() throws Exception {
        Gate g = gate("g");
        Gate.Pass keep = g.enter();
        for (int round = 0; round < 200; round++) {
            Gate.Pass p = g.enter();
            CountDownLatch go = new CountDownLatch(1);
            Runnable closer = () -> {
                awaitQuietly(go);
                p.close();
            };
            Thread t1 = Thread.ofPlatform().start(closer);
            Thread t2 = Thread.ofVirtual().start(closer);
            go.countDown();
            p.close();
            t1.join();
            t2.join();
            assertThat(g.inside()).as("round %d", round).isEqualTo(1);
        }
        keep.close();
        assertThat(g.inside()).isZero();
    }

    @Test
    void closeIsIdempotentAndEveryCallersFutureCompletes() {
        Gate g = gate("g");
        Gate.Pass p = g.enter();
        CompletableFuture<Void> first = g.close();
        CompletableFuture<Void> second = g.close();
        assertThat(first).isNotSameAs(second);
        assertThat(first).isNotDone();
        assertThat(second).isNotDone();
        p.close();
        assertThat(first).isCompletedWithValue(null);
        assertThat(second).isCompletedWithValue(null);
        assertThat(g.close()).isCompletedWithValue(null);
    }

    @Test
    void cancellingOneCloseFutureLeavesOthersAndTheGateAlone() {
        Gate g = gate("g");
        Gate.Pass p = g.enter();
        CompletableFuture<Void> cancelled = g.close();
        CompletableFuture<Void> other = g.close();
        assertThat(cancelled.cancel(true)).isTrue();
        cancelled.obtrudeValue(null); // even a forced value does not reach the gate
        assertThat(other).isNotDone();
        assertThat(g.isClosed()).isTrue();
        assertThat(g.tryEnter()).isEmpty();
        p.close();
        assertThat(other).isCompletedWithValue(null);
    }

    @Test
    void closeFutureDependentsRunOnTheThreadClosingTheLastPass() throws Exception {
        Gate g = gate("g");
        Gate.Pass p = g.enter();
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        AtomicReference<Optional<Gate.Pass>> enteredFromDependent = new AtomicReference<>();
        CompletableFuture<Void> after = g.close().thenRun(() -> {
            ranOn.set(Thread.currentThread());
            // the gate takes no lock: its own methods may be called from here
            enteredFromDependent.set(g.tryEnter());
        });
        Thread closer = Thread.ofVirtual().start(p::close);
        closer.join();
        assertThat(after).isDone();
        assertThat(ranOn.get()).isSameAs(closer);
        assertThat(enteredFromDependent.get()).isEmpty();
    }

    @Test
    void workBeforeClosingAPassIsVisibleAfterTheCloseFuture() throws Exception {
        Gate g = gate("g");
        int[] plain = new int[8]; // deliberately not volatile: published through the gate only
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < plain.length; i++) {
            Gate.Pass p = g.enter();
            int slot = i;
            threads.add(Thread.ofVirtual().unstarted(() -> {
                plain[slot] = slot + 1;
                p.close();
            }));
        }
        CompletableFuture<Void> closed = g.close();
        threads.forEach(Thread::start);
        closed.get(5, TimeUnit.SECONDS);
        for (int i = 0; i < plain.length; i++) {
            assertThat(plain[i]).isEqualTo(i + 1);
        }
    }

    @Test
    void toStringShowsNameInsideAndClosed() {
        Gate g = gate("requests");
        Gate.Pass p = g.enter();
        assertThat(g).hasToString("Gate[name=requests, inside=1, closed=false]");
        g.close();
        assertThat(g).hasToString("Gate[name=requests, inside=1, closed=true]");
        p.close();
        assertThat(g).hasToString("Gate[name=requests, inside=0, closed=true]");
        assertThat(p.toString()).contains("requests").contains("open=false");
    }

    @Test
    void generatedNamesAreUniqueAndNamesAreChecked() {
        Gate a = new Gate();
        Gate b = new Gate();
        gates.add(a);
        gates.add(b);
        assertThat(a.name()).isNotEqualTo(b.name()).startsWith("gate-");
        assertThat(a.toString()).contains(a.name());
        assertThatThrownBy(() -> new Gate(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new Gate(" ")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void exampleShutdownWaitsForWorkInside() throws Exception {
        Gate gate = gate("requests");
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        Thread request = Thread.ofVirtual().start(() -> {
            try (Gate.Pass pass = gate.enter()) {
                inside.countDown();
                awaitQuietly(finish);
            }
        });
        inside.await();
        CompletableFuture<Void> shutdown = gate.close();
        assertThat(gate.tryEnter()).isEmpty();
        assertThat(shutdown).isNotDone();
        finish.countDown();
        shutdown.get(5, TimeUnit.SECONDS);
        request.join();
        assertThat(gate.inside()).isZero();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
