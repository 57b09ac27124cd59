package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Round trips, idempotent scripts, and lost wake-up messages made good by heartbeats. */
class RedisProtocolTest extends RedisTestSupport {


    private List<Object> run(RedisSemaphore s, Script script, String... args) {
        LettuceSemaphore l = (LettuceSemaphore) s;
        return l.owner().await(l.protocol().raw(script, args), script.name());
    }

    @Test
    void uncontendedAcquireAndReleaseTakeOneRoundTripEach() throws Exception {
        RedisSemaphore s = build(a, 2);
        s.acquire().close(); // loads the scripts
        long before = scriptCalls();
        Permit p = s.acquire();
        assertThat(scriptCalls()).isEqualTo(before + 1);
        p.close();
        assertThat(scriptCalls()).isEqualTo(before + 2);
        assertThat(s.tryAcquire(2).orElseThrow().permits()).isEqualTo(2);
        assertThat(scriptCalls()).isEqualTo(before + 3);
    }

    @Test
    void replayedScriptsChangeNothingTwice() {
        RedisSemaphore s = build(a, 10);
        String id = "replay:" + name;
        // The fast path replies with the token alone; the replay, on the full path, says GRANTED.
        List<Object> first = run(s, Script.ACQUIRE, id, "nobody", "6", "30000", "10000", "wait");
        assertThat(first).singleElement().isInstanceOf(Long.class);
        assertThat(run(s, Script.ACQUIRE, id, "nobody", "6", "30000", "10000", "wait"))
                .containsExactly("GRANTED", first.get(0), "6");
        assertThat(s.availablePermits()).isEqualTo(4);
        // Release 1 of 6, moving the rest to id2, twice.
        assertThat(run(s, Script.RELEASE, id, id + "-2", "1")).containsExactly("OK");
        assertThat(run(s, Script.RELEASE, id, id + "-2", "1")).containsExactly("OK");
        assertThat(s.availablePermits()).isEqualTo(5);
        // Split 2 off into id4 (3 stay under id3), twice.
        assertThat(run(s, Script.SPLIT, id + "-2", id + "-3", id + "-4", "2")).containsExactly("OK");
        assertThat(run(s, Script.SPLIT, id + "-2", id + "-3", id + "-4", "2")).containsExactly("OK");
        assertThat(s.availablePermits()).isEqualTo(5);
        checkInvariants();
        // Merge them back into id5, twice.
        List<Object> merged = run(s, Script.MERGE, id + "-3", id + "-4", id + "-5");
        assertThat(merged.get(0)).isEqualTo("OK");
        assertThat(merged.get(2)).isEqualTo("5");
        assertThat(run(s, Script.MERGE, id + "-3", id + "-4", id + "-5").get(2)).isEqualTo("5");
        assertThat(s.availablePermits()).isEqualTo(5);
        assertThat(run(s, Script.RELEASE, id + "-5", "", "0")).containsExactly("OK");
        assertThat(run(s, Script.RELEASE, id + "-5", "", "0")).containsExactly("NOT_HELD");
        assertThat(s.availablePermits()).isEqualTo(10);
        // Closing twice, cancelling what is not there.
        assertThat(run(s, Script.CANCEL, "nothing")).containsExactly("NOT_FOUND");
        checkInvariants();
    }

    @Test
    void aReleaseServesTheQueueInOrderWhetherItServesOneWaiterOrMany() throws Exception {
        // RELEASE serves the head inline when one grant is all the serving there is (common.lua S2), and
        // runs the full grant loop otherwise: both must serve exactly the waiters that fit, in order.
        RedisSemaphore sa = build(a, 4);
        RedisSemaphore sb = build(b, 4);
        Permit all = sa.acquire(4);
        CompletableFuture<Permit> one = sb.acquireAsync(1);
        awaitQueueLength(sa, 1);
        CompletableFuture<Permit> two = sb.acquireAsync(1);
        awaitQueueLength(sa, 2);
        CompletableFuture<Permit> three = sb.acquireAsync(3);
        awaitQueueLength(sa, 3);
        checkInvariants();
        all.close(); // 4 free: the two heads of 1 fit (the loop), the 3 behind them does not
        Permit p1 = one.get(20, TimeUnit.SECONDS);
        Permit p2 = two.get(20, TimeUnit.SECONDS);
        assertThat(three).isNotDone();
        assertThat(sa.queueLength()).isEqualTo(1);
        checkInvariants();
        p1.close(); // 3 free: the only waiter fits (inline)
        Permit p3 = three.get(20, TimeUnit.SECONDS);
        assertThat(sa.queueLength()).isZero();
        checkInvariants();
        // A release after which the head still does not fit serves nobody.
        CompletableFuture<Permit> four = sb.acquireAsync(4);
        awaitQueueLength(sa, 1);
        p2.close();
        assertThat(sa.queueLength()).isEqualTo(1);
        assertThat(four).isNotDone();
        checkInvariants();
        p3.close(); // all 4 free: the head fits (inline)
        four.get(20, TimeUnit.SECONDS).close();
        assertThat(sa.availablePermits()).isEqualTo(4);
        checkInvariants();
    }

    @Test
    void cancelOfAGrantedRequestReleasesItInRedis() {
        RedisSemaphore sa = build(a, 2);
        String id = "test:" + name;
        List<Object> r = run(sa, Script.ACQUIRE, id, "nobody", "2", "30000", "10000", "wait");
        assertThat(r).singleElement().isInstanceOf(Long.class); // the fast path: the token alone
        // Replayed: still one grant, and the reply says how many permits it holds.
        assertThat(run(sa, Script.ACQUIRE, id, "nobody", "2", "30000", "10000", "wait"))
                .containsExactly("GRANTED", r.get(0), "2");
        assertThat(sa.availablePermits()).isZero();
        assertThat(run(sa, Script.CANCEL, id)).containsExactly("WAS_GRANTED_RELEASED");
        assertThat(run(sa, Script.CANCEL, id)).containsExactly("NOT_FOUND");
        assertThat(run(sa, Script.RELEASE, id, "", "0")).containsExactly("NOT_HELD");
        assertThat(sa.availablePermits()).isEqualTo(2);
        checkInvariants();
    }

    @Test
    void theCeilingIsKnownWithoutARoundTrip() throws Exception {
        RedisSemaphore s = a.semaphore(name).permits(2).maxPermits(7).build();
        long before = scriptCalls();
        for (int i = 0; i < 10; i++) {
            assertThat(s.maxPermits()).isEqualTo(7);
        }
        assertThat(scriptCalls()).isEqualTo(before);
        // Another process that builds the same name learns the stored ceiling when it builds.
        assertThat(b.semaphore(name).permits(1).maxPermits(99).build().maxPermits()).isEqualTo(7);
    }

    @Test
    void waiterWhoseWakeUpIsLostIsGrantedByItsHeartbeat() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        CompletableFuture<Permit> waiter = sb.acquireAsync(1);
        awaitQueueLength(sa, 1);
        b.pubsub().sync().unsubscribe(((LettuceSemaphore) sb).channel()); // every message to b is lost now
        held.close();
        waiter.get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }

    @Test
    void waiterSurvivesPubSubConnectionsBeingKilled() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        CompletableFuture<Permit> waiter = sb.acquireAsync(1);
        awaitQueueLength(sa, 1);
        assertThat(redis.clientKill(io.lettuce.core.KillArgs.Builder.typePubsub())).isPositive();
        held.close();
        waiter.get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }

    @Test
    void waiterIsKeptAliveByHeartbeatsLongerThanItsTimeToLive() throws Exception {
        // Only the waiter's handle has the short lease (and so a 300 ms time-to-live); the holder's default
        // lease cannot end while a busy machine delays one of its renewals.
        RedisSemaphore sa = a.semaphore(name).permits(1).build();
        RedisSemaphore sb = b.semaphore(name).permits(1).lease(Duration.ofMillis(300)).build();
        Permit held = sa.acquire();
        CompletableFuture<Permit> waiter = sb.acquireAsync(1);
        awaitQueueLength(sa, 1);
        String queue = "sem:{" + name + "}:queue";
        String id = redis.zrange(queue, 0, 0).get(0);
        Double seq = redis.zscore(queue, id);
        // A queued request's liveness deadline is kept in leases (schema 4).
        double firstLiveness = redis.zscore("sem:{" + name + "}:leases", id);
        await("liveness pushed past three time-to-lives", () -> {
            Double d = redis.zscore("sem:{" + name + "}:leases", id);
            return d != null && d > firstLiveness + 900;
        });
        assertThat(redis.zscore(queue, id)).as("still the same entry, never re-queued").isEqualTo(seq);
        assertThat(waiter).isNotDone();
        held.close();
        waiter.get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }

    @Test
    void waiterWhoseCloseMessageIsLostFailsAtItsHeartbeat() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        CompletableFuture<Permit> waiter = sb.acquireAsync(1);
        awaitQueueLength(sa, 1);
        b.pubsub().sync().unsubscribe(((LettuceSemaphore) sb).channel());
        sa.close();
        assertThatThrownBy(() -> waiter.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(SemaphoreClosedException.class);
        held.close();
        checkInvariants();
    }
}
