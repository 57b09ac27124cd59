package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.TooManyKeysException;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link RedisSemaphores#keyed(String)} (API.md §11b): a key's limit shared by every process, handles kept only while used. */
@Timeout(60)
class RedisKeyedSemaphoreTest extends RedisTestSupport {

    private KeyedSemaphore<String> family(RedisSemaphores on, long permits) {
        return on.keyed(name).permits(permits).lease(Duration.ofSeconds(2)).build();
    }

    /** The key's handles in this process are all let go of, and its family holds no key. */
    private static void awaitNothingLive(RedisSemaphores on, KeyedSemaphore<String> f) {
        await("no live key and no handle", () -> f.size() == 0 && on.handlesForTests() == 0);
    }

    @Test
    void aKeysLimitIsSharedByTheFamiliesOfTwoProcesses() throws Exception {
        KeyedSemaphore<String> fa = family(a, 2);
        KeyedSemaphore<String> fb = family(b, 2);
        Permit held = fa.get("t1").acquire(2);
        assertThat(fb.get("t1").tryAcquire()).isEmpty();
        assertThat(fa.get("t1").tryAcquire()).isEmpty();
        try (Permit other = fb.get("t2").acquire(2)) {
            assertThat(other.permits()).isEqualTo(2); // another key, another limit
        }
        CompletableFuture<Permit> waiting = fb.get("t1").acquireAsync(1);
        await("b's request queued in Redis", () -> fa.get("t1").queueLength() == 1);
        assertThat(waiting).isNotDone();
        held.close();
        RedisPermit granted = (RedisPermit) waiting.get(10, TimeUnit.SECONDS);
        assertThat(granted.fencingToken()).isPositive();
        granted.close();
        awaitNothingLive(a, fa);
        awaitNothingLive(b, fb);
        assertThat(fa.get("t1").availablePermits()).isEqualTo(2);
        checkInvariants(name + ":t1");
    }

    @Test
    void eachKeyIsARedisSemaphoreOfItsOwnHashSlot() throws Exception {
        KeyedSemaphore<String> f = family(a, 1);
        f.get("alpha").acquire().close();
        f.get("beta").acquire().close();
        assertThat(redis.exists("sem:{" + name + ":alpha}:meta", "sem:{" + name + ":beta}:meta")).isEqualTo(2);
        assertThat(f.get("alpha").name()).isEqualTo(name + ":alpha");
        assertThat(SlotHash.getSlot("sem:{" + name + ":alpha}:meta"))
                .isNotEqualTo(SlotHash.getSlot("sem:{" + name + ":beta}:meta"));
        assertThat(SlotHash.getSlot("sem:{" + name + ":alpha}:meta"))
                .isEqualTo(SlotHash.getSlot("sem:{" + name + ":alpha}:queue"));
    }

    @Test
    void badInputIsRefusedNamingItAndChangesNothing() {
        assertThatThrownBy(() -> a.keyed(" ")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("' '");
        assertThatThrownBy(() -> a.keyed("x{y")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("braces");
        KeyedSemaphore<String> f = family(a, 1);
        assertThatThrownBy(() -> f.get("t{1}")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key 't{1}'").hasMessageContaining(name);
        assertThatThrownBy(() -> f.get("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.keyed(name).permits(-1)).hasMessageContaining("permits");
        assertThatThrownBy(() -> a.keyed(name).maxKeys(0)).hasMessageContaining("maxKeys (0)");
        assertThatThrownBy(() -> a.keyed(name).expireWhenIdle(Duration.ofMillis(500)))
                .hasMessageContaining("expireWhenIdle (PT0.5S)");
        assertThatThrownBy(() -> a.keyed(name).lease(Duration.ofMillis(1))).hasMessageContaining("lease (PT0.001S)");
        assertThatThrownBy(() -> a.keyed(name).build()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("permits(n)");
        assertThatThrownBy(() -> f.get("t").acquire(2)).isInstanceOf(IllegalArgumentException.class);
        assertThat(f.size()).isZero();
        awaitNothingLive(a, f);
        assertThat(redis.keys("sem:{" + name + "*")).allSatisfy(k -> assertThat(k).contains(name + ":t}"));
    }

    @Test
    void beyondMaxKeysEveryStyleIsRefusedAndReported() throws Exception {
        List<Rejection> rejections = new CopyOnWriteArrayList<>();
        List<Semaphore> seen = new CopyOnWriteArrayList<>();
        KeyedSemaphore<String> f = a.keyed(name).permits(2).maxKeys(1).listener(new SemaphoreListener() {
            @Override
            public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
                rejections.add(why);
                seen.add(s);
            }
        }).build();
        Permit held = f.get("one").acquire();
        Semaphore two = f.get("two");
        assertThatThrownBy(two::acquire).isInstanceOf(TooManyKeysException.class)
                .hasMessageContaining(name).hasMessageContaining("1 live keys");
        assertThatThrownBy(() -> two.acquire(1, Duration.ofSeconds(1))).isInstanceOf(TooManyKeysException.class);
        assertThatThrownBy(two::acquireUninterruptibly).isInstanceOf(TooManyKeysException.class);
        assertThat(two.tryAcquire()).isEmpty();
        assertThatThrownBy(() -> two.acquireAsync().get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(TooManyKeysException.class);
        assertThat(rejections).hasSize(5).containsOnly(Rejection.UNAVAILABLE);
        assertThat(seen).allSatisfy(s -> assertThat(s.name()).isEqualTo(name + ":two"));
        assertThat(f.size()).isEqualTo(1);
        assertThat(a.handlesForTests()).isEqualTo(1);
        held.close();
        await("key one let go of", () -> f.size() == 0);
        two.acquire().close();
        awaitNothingLive(a, f);
    }

    @Test
    void aHandleLetGoOfWhenIdleLeavesTheSemaphoreOpenForOthers() throws Exception {
        KeyedSemaphore<String> fa = family(a, 1);
        KeyedSemaphore<String> fb = family(b, 1);
        Permit onB = fb.get("k").acquire();
        fa.get("k").acquireAsync().cancel(true);
        try (Permit p = fa.get("k").acquire(0)) {
            assertThat(p.permits()).isZero();
        }
        awaitNothingLive(a, fa);
        assertThat(metaField(redis, name + ":k", "closed")).isZero();
        onB.close();
        try (Permit p = fa.get("k").acquire()) {
            assertThat(fa.size()).isEqualTo(1);
            assertThat(a.handlesForTests()).isEqualTo(1);
        }
        awaitNothingLive(a, fa);
        checkInvariants(name + ":k");
    }

    @Test
    void viewsRefuseResizingClosingAndListeners() {
        KeyedSemaphore<String> f = family(a, 3);
        RedisSemaphore v = (RedisSemaphore) f.get("v");
        assertThatThrownBy(() -> v.setPermits(1)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining(name + ":v");
        assertThatThrownBy(() -> v.addPermits(1)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> v.reducePermits(1)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(v::close).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> v.addListener(new SemaphoreListener() { }))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThat(v.permits()).isEqualTo(3);
        assertThat(v.maxPermits()).isEqualTo(3);
        assertThat(v.lease()).isEqualTo(Duration.ofSeconds(2));
        assertThat(v).isEqualTo(f.get("v"));
        awaitNothingLive(a, f);
    }

    @Test
    void theParentIsHeldAlongsideAndGivenBackTogether() throws Exception {
        Semaphore parent = Semaphore.create(2);
        KeyedSemaphore<String> f = a.keyed(name).permits(2).parent(parent).build();
        Permit x = f.get("x").acquire(2);
        assertThat(parent.availablePermits()).isZero();
        // The parent is full: the key's permits are had, then given back when the parent's wait times out.
        assertThatThrownBy(() -> f.get("y").acquire(1, Duration.ofMillis(300))).isInstanceOf(TimeoutException.class);
        assertThat(f.get("y").tryAcquire()).isEmpty();
        await("y let go of", () -> f.size() == 1);
        CompletableFuture<Permit> waiting = f.get("y").acquireAsync(1);
        await("waiting for the parent", () -> parent.queueLength() == 1);
        assertThat(f.size()).isEqualTo(2);
        waiting.cancel(false);
        await("the cancelled request holds nothing", () -> parent.queueLength() == 0 && f.size() == 1);
        assertThat(f.get("y").availablePermits()).isEqualTo(2);
        x.release(1);
        assertThat(parent.availablePermits()).isEqualTo(1);
        assertThat(f.get("x").availablePermits()).isEqualTo(1);
        Permit y = f.get("y").acquire(1, Duration.ofSeconds(5));
        assertThat(parent.availablePermits()).isZero();
        x.close();
        y.close();
        assertThat(parent.availablePermits()).isEqualTo(2);
        awaitNothingLive(a, f);
    }

    @Test
    void cancelledTimedOutAndInterruptedRequestsLeaveNothingHeld() throws Exception {
        KeyedSemaphore<String> f = family(a, 2);
        Semaphore k = f.get("k");
        Permit held = k.acquire(2);
        assertThatThrownBy(() -> k.acquire(1, Duration.ofMillis(200))).isInstanceOf(TimeoutException.class);
        assertThatThrownBy(() -> k.acquireAsync(1, Duration.ofMillis(200)).get(10, TimeUnit.SECONDS))
                .hasCauseInstanceOf(TimeoutException.class);
        CompletableFuture<Permit> cancelled = k.acquireAsync(2);
        await("queued", () -> k.queueLength() == 1);
        cancelled.cancel(true);
        await("withdrawn", () -> k.queueLength() == 0);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                k.acquire();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "interrupted-waiter");
        t.start();
        await("queued", () -> k.queueLength() == 1);
        t.interrupt();
        t.join(10_000);
        assertThat(failure.get()).isInstanceOf(InterruptedException.class);
        assertThat(f.size()).isEqualTo(1);
        held.close();
        awaitNothingLive(a, f);
        assertThat(k.availablePermits()).isEqualTo(2);
        assertThat(k.queueLength()).isZero();
        checkInvariants(name + ":k");
    }

    @Test
    void closingTheFamilyFailsThisProcessOnlyAndLeavesTheKeysOpen() throws Exception {
        KeyedSemaphore<String> fa = family(a, 1);
        KeyedSemaphore<String> fb = family(b, 1);
        Permit onB = fb.get("k").acquire();
        CompletableFuture<Permit> waitingOnA = fa.get("k").acquireAsync();
        CompletableFuture<Permit> waitingOnB = fb.get("k").acquireAsync();
        await("both queued", () -> fb.get("k").queueLength() == 2);
        fa.close();
        assertThat(fa.isClosed()).isTrue();
        assertThatThrownBy(() -> waitingOnA.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(
                SemaphoreClosedException.class).hasMessageContaining("closed in this process");
        assertThatThrownBy(() -> fa.get("k").acquire()).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> fa.get("other").acquire()).isInstanceOf(SemaphoreClosedException.class);
        assertThatThrownBy(() -> fa.get("other").acquireAsync().get(5, TimeUnit.SECONDS))
                .hasCauseInstanceOf(SemaphoreClosedException.class);
        awaitNothingLive(a, fa);
        onB.close();
        waitingOnB.get(10, TimeUnit.SECONDS).close();
        assertThat(metaField(redis, name + ":k", "closed")).isZero();
        awaitNothingLive(b, fb);
        checkInvariants(name + ":k");
    }

    @Test
    void partsSplitMergedAndReleasedKeepTheHandleUntilTheLast() throws Exception {
        KeyedSemaphore<String> f = family(a, 3);
        Permit p = f.get("k").acquire(3);
        Permit part = p.split(1);
        p.release(1);
        assertThat(f.get("k").availablePermits()).isEqualTo(1);
        p.close();
        assertThat(f.size()).isEqualTo(1); // the part still holds one
        Permit more = f.get("k").acquire(1);
        part.merge(more);
        assertThat(part.permits()).isEqualTo(2);
        part.close();
        awaitNothingLive(a, f);
        assertThat(f.get("k").availablePermits()).isEqualTo(3);
        checkInvariants(name + ":k");
    }
}
