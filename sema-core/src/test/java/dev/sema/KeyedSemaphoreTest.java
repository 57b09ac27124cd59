package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The rules of API.md §11b on the local family, one scenario each. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class KeyedSemaphoreTest {

    private static KeyedSemaphore<String> family(long permits) {
        return KeyedSemaphore.<String>builder().name("exports").permits(permits).build();
    }

    private static int entries(KeyedSemaphore<?> family) {
        return ((LocalKeyedSemaphore<?>) family).entriesForTests();
    }

    /** Records events as text, naming the semaphore they came with. */
    static final class Events implements SemaphoreListener {
        final List<String> seen = new CopyOnWriteArrayList<>();

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            seen.add(s.name() + " acquired " + permits);
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            seen.add(s.name() + " rejected " + permits + " " + why);
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            seen.add(s.name() + " released " + permits);
        }
    }

    @Test
    void aKeyIsMadeOnFirstUseAndRemovedTheMomentItIsIdle() throws Exception {
        KeyedSemaphore<String> exports = family(5);
        assertThat(exports.size()).isZero();
        Semaphore acme = exports.get("acme");
        assertThat(acme.name()).isEqualTo("exports[acme]");
        assertThat(acme.availablePermits()).isEqualTo(5);
        assertThat(exports.size()).as("reading makes no key").isZero();
        Permit p = acme.acquire(2);
        assertThat(exports.size()).isOne();
        assertThat(acme.availablePermits()).isEqualTo(3);
        Permit q = exports.get("acme").acquire(3);
        assertThat(exports.size()).isOne();
        p.close();
        assertThat(exports.size()).isOne();
        q.close();
        assertThat(exports.size()).isZero();
        assertThat(entries(exports)).isZero();
        assertThat(acme.availablePermits()).isEqualTo(5);
    }

    @Test
    void eachKeyHasItsOwnLimitAndKeysDoNotWaitForEachOther() throws Exception {
        KeyedSemaphore<String> exports = family(2);
        try (Permit a = exports.get("a").acquire(2)) {
            assertThat(exports.get("a").tryAcquire()).isEmpty();
            CompletableFuture<Permit> waiting = exports.get("a").acquireAsync(1);
            assertThat(exports.get("a").queueLength()).isOne();
            try (Permit b = exports.get("b").tryAcquire(2).orElseThrow()) {
                assertThat(b.permits()).isEqualTo(2);
                assertThat(exports.size()).isEqualTo(2);
            }
            a.release(1);
            assertThat(waiting.get(1, TimeUnit.SECONDS).permits()).isOne();
            waiting.join().close();
        }
        assertThat(exports.size()).isZero();
    }

    @Test
    void aLimitPerKeyComesFromTheFunctionEachTimeTheKeyIsMade() throws Exception {
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports")
                .permits(key -> key.startsWith("gold") ? 10 : 2).build();
        assertThat(exports.get("gold-1").permits()).isEqualTo(10);
        assertThat(exports.get("basic").permits()).isEqualTo(2);
        assertThat(exports.get("basic").maxPermits()).isEqualTo(2);
        try (Permit p = exports.get("gold-1").acquire(10)) {
            assertThat(p.permits()).isEqualTo(10);
        }
        assertThatThrownBy(() -> exports.get("basic").acquire(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("exports[basic]");
        assertThat(exports.size()).as("a refused request leaves no key").isZero();
    }

    @Test
    void aLimitFunctionThatFailsOrIsOutOfRangeFailsTheRequestAndMakesNothing() {
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").maxPermits(100)
                .permits(key -> switch (key) {
                    case "huge" -> 101;
                    case "negative" -> -1;
                    default -> throw new IllegalStateException("no plan for " + key);
                }).build();
        assertThatThrownBy(() -> exports.get("huge").acquire()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key huge is 101, outside 0..100");
        assertThatThrownBy(() -> exports.get("negative").tryAcquire()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key negative is -1");
        assertThatThrownBy(() -> exports.get("other").acquireAsync(1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no plan for other");
        assertThat(exports.size()).isZero();
        assertThat(entries(exports)).isZero();
    }

    @Test
    void beyondMaxKeysARequestFailsAtOnceInEveryStyleWithAnEventAndMakesNothing() throws Exception {
        Events events = new Events();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(1).maxKeys(2)
                .listener(events).build();
        Permit a = exports.get("a").acquire();
        Permit b = exports.get("b").acquire();
        assertThatThrownBy(() -> exports.get("c").acquire()).isInstanceOf(TooManyKeysException.class)
                .hasMessageContaining("exports[c]").hasMessageContaining("'exports' has 2 live keys, its maxKeys");
        assertThat(exports.get("c").tryAcquire()).isEmpty();
        assertThat(exports.get("c").acquireAsync(1)).failsWithin(Duration.ZERO)
                .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(TooManyKeysException.class);
        assertThatThrownBy(() -> exports.get("c").acquire(1, Duration.ofSeconds(5)))
                .isInstanceOf(TooManyKeysException.class);
        assertThat(exports.size()).isEqualTo(2);
        assertThat(entries(exports)).isEqualTo(2);
        assertThat(events.seen).containsExactly("exports[a] acquired 1", "exports[b] acquired 1",
                "exports[c] rejected 1 UNAVAILABLE", "exports[c] rejected 1 UNAVAILABLE",
                "exports[c] rejected 1 UNAVAILABLE", "exports[c] rejected 1 UNAVAILABLE");
        CompletableFuture<Permit> sameKey = exports.get("a").acquireAsync(1);
        assertThat(sameKey).as("a live key is no new key: queued behind a's holder, not refused").isNotDone();
        a.close();
        sameKey.get(1, TimeUnit.SECONDS).close();
        exports.get("c").acquire().close();
        b.close();
        assertThat(exports.size()).isZero();
    }

    @Test
    void viewsAreCheapEqualAndRefuseResizingClosingAndListeners() {
        KeyedSemaphore<String> exports = family(3);
        Semaphore v = exports.get("k");
        assertThat(v).isEqualTo(exports.get("k")).hasSameHashCodeAs(exports.get("k")).isNotEqualTo(exports.get("j"));
        assertThat(v.fairness()).isEqualTo(Fairness.FIFO);
        assertThatThrownBy(() -> v.setPermits(4)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("exports[k]").hasMessageContaining("'exports'");
        assertThatThrownBy(() -> v.addPermits(1)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> v.reducePermits(1)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(v::close).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> v.addListener(new Events())).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("'exports'");
        assertThatThrownBy(() -> exports.get(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> v.acquire(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(exports.size()).isZero();
    }

    @Test
    void closingTheFamilyFailsEveryWaiterAndLaterRequestButHeldPermitsMayBeReleased() throws Exception {
        KeyedSemaphore<String> exports = family(1);
        Permit held = exports.get("a").acquire();
        CompletableFuture<Permit> waiting = exports.get("a").acquireAsync(1);
        exports.close();
        assertThat(exports.isClosed()).isTrue();
        assertThat(exports.get("a").isClosed()).isTrue();
        assertThat(waiting).failsWithin(Duration.ofSeconds(1)).withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> exports.get("b").acquire()).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("exports[b]");
        assertThatThrownBy(() -> exports.get("a").tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
        held.close();
        assertThat(exports.size()).isZero();
        exports.close(); // idempotent
    }

    @Test
    void withAParentEveryPermitHoldsAsManyOfTheParentsAndGivesBothBack() throws Exception {
        Semaphore parent = Semaphore.builder().name("batch").permits(3).build();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(2).parent(parent)
                .build();
        Permit a = exports.get("a").acquire(2);
        assertThat(parent.availablePermits()).isOne();
        assertThat(exports.get("b").tryAcquire(2)).as("the parent has 1 left").isEmpty();
        assertThat(exports.get("b").availablePermits()).as("b's permits given back").isEqualTo(2);
        assertThat(exports.size()).isOne();
        Permit b = exports.get("b").tryAcquire(1).orElseThrow();
        assertThat(parent.availablePermits()).isZero();

        Permit part = a.split(1); // split, partial release and merge keep both sides equal
        a.release(1);
        assertThat(a.permits()).isZero();
        assertThat(parent.availablePermits()).isOne();
        assertThat(exports.get("a").availablePermits()).isOne();
        Permit again = exports.get("a").acquire(1);
        again.merge(part);
        assertThat(again.permits()).isEqualTo(2);
        assertThat(parent.availablePermits()).isZero();
        again.close();
        b.close();
        a.close();
        assertThat(parent.availablePermits()).isEqualTo(3);
        assertThat(exports.size()).isZero();
        assertThat(entries(exports)).isZero();
    }

    @Test
    void aTimeoutCoversBothWaitsAndARequestRefusedByTheParentGivesTheKeysPermitsBack() throws Exception {
        Semaphore parent = Semaphore.builder().name("batch").permits(1).build();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(2).parent(parent)
                .build();
        try (Permit hog = parent.acquire()) {
            assertThatThrownBy(() -> exports.get("a").acquire(1, Duration.ofMillis(50)))
                    .isInstanceOf(TimeoutException.class);
            assertThat(exports.size()).as("the key's permit went back and the key is gone").isZero();
            assertThat(exports.get("a").acquireAsync(1, Duration.ofMillis(20))).failsWithin(Duration.ofSeconds(5))
                    .withThrowableOfType(ExecutionException.class).withCauseInstanceOf(TimeoutException.class);
            assertThat(exports.size()).isZero();
        }
        assertThat(parent.availablePermits()).isOne();
    }

    @Test
    void cancellingARequestWaitingForTheParentGivesTheKeysPermitsBack() throws Exception {
        Semaphore parent = Semaphore.builder().name("batch").permits(1).build();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(2).parent(parent)
                .build();
        Permit hog = parent.acquire();
        CompletableFuture<Permit> waiting = exports.get("a").acquireAsync(1);
        assertThat(exports.get("a").availablePermits()).as("the key's permit is held while the parent is awaited")
                .isOne();
        assertThat(parent.queueLength()).isOne();
        assertThat(waiting.cancel(true)).isTrue();
        assertThat(parent.queueLength()).isZero();
        assertThat(exports.size()).isZero();
        hog.close();
        assertThat(parent.availablePermits()).isOne();

        CompletableFuture<Permit> granted = exports.get("a").acquireAsync(1); // both at once: complete
        assertThat(granted.get(1, TimeUnit.SECONDS).permits()).isOne();
        assertThat(parent.availablePermits()).isZero();
        granted.join().close();
        assertThat(parent.availablePermits()).isOne();
    }

    @Test
    void anInterruptWhileWaitingForTheParentGivesTheKeysPermitsBack() throws Exception {
        Semaphore parent = Semaphore.builder().name("batch").permits(1).build();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(2).parent(parent)
                .build();
        Permit hog = parent.acquire();
        CompletableFuture<Throwable> failure = new CompletableFuture<>();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                exports.get("a").acquire(1).close();
                failure.complete(null);
            } catch (Throwable e) {
                failure.complete(e);
            }
        });
        Waiting.untilQueued(parent, 1);
        t.interrupt();
        assertThat(failure.get(5, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(exports.size()).isZero();
        hog.close();
    }

    @Test
    void theFamilysListenersSeeEveryKeysEventsWithItsViewAlsoWhenAddedLater() throws Exception {
        KeyedSemaphore<String> exports = family(1);
        Permit early = exports.get("a").acquire(); // made while the family had no listener
        Events events = new Events();
        exports.addListener(events);
        assertThat(exports.get("a").tryAcquire()).isEmpty();
        early.close();
        exports.get("b").acquire().close();
        assertThat(events.seen).containsExactly("exports[a] rejected 1 UNAVAILABLE", "exports[a] released 1",
                "exports[b] acquired 1", "exports[b] released 1");
        assertThat(exports.removeListener(events)).isTrue();
        exports.get("c").acquire().close();
        assertThat(events.seen).hasSize(4);
    }

    @Test
    void forgettingAKeysPermitLowersItsLimitUntilTheKeyIsIdle() throws Exception {
        KeyedSemaphore<String> exports = family(3);
        Permit keep = exports.get("a").acquire(1);
        exports.get("a").acquire(2).forget();
        assertThat(exports.get("a").permits()).isOne();
        assertThat(exports.get("a").availablePermits()).isZero();
        keep.close();
        assertThat(exports.size()).isZero();
        assertThat(exports.get("a").permits()).as("made afresh").isEqualTo(3);
    }

    @Test
    void zeroPermitsAndDrainingAndAwaitIdleOnAKey() throws Exception {
        KeyedSemaphore<String> exports = family(3);
        Permit none = exports.get("a").acquire(0);
        assertThat(none.permits()).isZero();
        assertThat(exports.size()).isZero();
        none.close();
        Permit one = exports.get("a").acquire(1);
        Permit rest = exports.get("a").drainPermits();
        assertThat(rest.permits()).isEqualTo(2);
        CompletableFuture<Void> idle = exports.get("a").awaitIdleAsync();
        assertThat(idle).isNotDone();
        one.merge(rest);
        one.close();
        idle.get(1, TimeUnit.SECONDS);
        exports.get("never").awaitIdle(); // an idle key: at once
        assertThat(exports.size()).isZero();
    }

    @Test
    void mergingAPermitOfAnotherKeyOrFamilyIsRefusedAndChangesNothing() throws Exception {
        KeyedSemaphore<String> exports = family(3);
        Permit a = exports.get("a").acquire(1);
        Permit b = exports.get("b").acquire(1);
        assertThatThrownBy(() -> a.merge(b)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.merge(a)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.merge(Semaphore.create(1).acquire())).isInstanceOf(IllegalArgumentException.class);
        assertThat(a.permits()).isOne();
        assertThat(b.permits()).isOne();
        a.close();
        b.close();
        assertThat(exports.size()).isZero();
    }

    @Test
    void aLeakedPermitOfAKeyIsReturnedAndTheKeyRemoved() throws Exception {
        Events events = new Events();
        KeyedSemaphore<String> exports = KeyedSemaphore.<String>builder().name("exports").permits(2)
                .leakDetection(LeakDetection.PARANOID).listener(events).build();
        leak(exports, "a");
        assertThat(exports.size()).isOne();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (exports.size() != 0) {
            assertThat(System.nanoTime() - deadline).as("leak not detected in time").isNegative();
            System.gc();
            Thread.sleep(10); // gives the cleaner thread a chance; the condition decides, not the time
        }
        assertThat(entries(exports)).isZero();
        try (Permit p = exports.get("a").acquire(2)) {
            assertThat(p.permits()).isEqualTo(2);
        }
    }

    private static void leak(KeyedSemaphore<String> family, String key) throws InterruptedException {
        family.get(key).acquire(2); // dropped on the floor
    }

    @Test
    void aViewKeptAcrossItsKeysRetirementStillHoldsTheKeyToItsLimit() throws Exception {
        KeyedSemaphore<String> exports = family(1);
        Permit first = exports.get("acme").acquire();
        Semaphore kept = exports.get("acme"); // got while the key is live: it asks that entry's engine first (K7)
        first.close();
        assertThat(entries(exports)).as("retired when idle").isZero();
        Permit second = exports.get("acme").acquire(); // a new entry
        assertThat(kept.tryAcquire()).as("the retired engine must not grant").isEmpty();
        assertThatThrownBy(() -> kept.acquire(1, Duration.ofMillis(20))).isInstanceOf(TimeoutException.class);
        second.close();
        try (Permit third = kept.acquire()) {
            assertThat(exports.size()).isOne();
            assertThat(exports.get("acme").tryAcquire()).isEmpty();
        }
        assertThat(entries(exports)).isZero();
        assertThat(kept).isEqualTo(exports.get("acme"));
    }

    @Test
    void anInterruptedThreadIsRefusedOnALiveKeyEvenWithPermitsFree() throws Exception {
        KeyedSemaphore<String> exports = family(2);
        try (Permit held = exports.get("acme").acquire()) {
            Semaphore acme = exports.get("acme");
            Thread.currentThread().interrupt();
            assertThatThrownBy(acme::acquire).isInstanceOf(InterruptedException.class);
            assertThat(Thread.interrupted()).as("the flag is cleared by the refusal, as a plain semaphore's").isFalse();
            Thread.currentThread().interrupt();
            try (Permit p = acme.acquireUninterruptibly()) {
                assertThat(p.permits()).isOne();
            } finally {
                assertThat(Thread.interrupted()).as("an uninterruptible acquire keeps the flag").isTrue();
            }
            assertThat(acme.availablePermits()).isOne();
        }
        assertThat(entries(exports)).isZero();
    }

    @Test
    void noPermitsOnALiveKeyLeaveItAsItWasAndAnIdleKeyRetired() throws Exception {
        KeyedSemaphore<String> exports = family(2);
        Permit held = exports.get("acme").acquire();
        try (Permit none = exports.get("acme").acquire(0)) {
            assertThat(none.permits()).isZero();
        }
        assertThat(exports.size()).isOne();
        held.close();
        Semaphore kept = exports.get("acme");
        assertThat(kept.acquire(0).permits()).isZero();
        assertThat(exports.size()).as("a grant of nothing retires the key it made").isZero();
        assertThat(entries(exports)).isZero();
    }

    @Test
    void theBuilderRefusesWhatCannotWork() {
        assertThatThrownBy(() -> KeyedSemaphore.builder().build()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("permits(n)");
        assertThatThrownBy(() -> KeyedSemaphore.builder().maxKeys(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxKeys (0)");
        assertThatThrownBy(() -> KeyedSemaphore.builder().permits(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> KeyedSemaphore.builder().permits(5).maxPermits(4).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxPermits (4)");
        assertThatThrownBy(() -> KeyedSemaphore.builder().name(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThat(KeyedSemaphore.builder().permits(1).build().maxKeys()).isEqualTo(100_000);
    }
}
