package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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
        List<Object> first = run(s, Script.ACQUIRE, id, "6", "30000", "10000");
        assertThat(first).singleElement().isInstanceOf(Long.class);
        assertThat(run(s, Script.ACQUIRE, id, "6", "30000", "10000"))
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
    void theCreationArgumentIsSentOnlyToCreateAndEveryScriptIgnoresItOtherwise() throws Exception {
        RedisSemaphore s = build(a, 3);
        s.acquire().close(); // creates it and loads the scripts
        redis.del("sem:{" + name + "}:meta");
        long before = scriptCalls();
        Permit p = s.acquire(); // ERR_MISSING, then the same call with the creation argument
        assertThat(scriptCalls()).isEqualTo(before + 2);
        assertThat(run(s, Script.STATUS)).containsExactly("3", "3", "1", "0", "0");
        before = scriptCalls();
        p.close();
        s.acquire().close();
        assertThat(scriptCalls()).isEqualTo(before + 3); // it exists: no argument, no second call
        // A call resent with it after another process created the semaphore: the argument is not an
        // operation's argument (a whole release stays whole, RENEW's ids stay ids).
        String id = "test:" + name;
        Object token = run(s, Script.ACQUIRE, id, "2", "30000", "10000", "+9 9 0").get(0);
        assertThat(token).isInstanceOf(Long.class);
        assertThat(run(s, Script.RENEW, "test", "30000", "10000", "1", id, "+9 9 0").get(3)).isEqualTo(List.of());
        assertThat(run(s, Script.RELEASE, id, "+9 9 0")).containsExactly("OK");
        assertThat(run(s, Script.STATUS, "+9 9 0")).containsExactly("3", "3", "0", "0", "0");
        checkInvariants();
        // Without it, a missing semaphore is reported, not created.
        redis.del("sem:{" + name + "}:meta");
        assertThat(run(s, Script.STATUS)).containsExactly("ERR_MISSING");
        assertThat(redis.exists("sem:{" + name + "}:meta")).isZero();
    }

    @Test
    void theFastPathsWriteTheMetaFieldsTheyChangeAndLeaveTheOthers() throws Exception {
        // The fast paths write the fields they change with SETRANGE (prelude.lua): every field must be what
        // a write of the whole value would have made it.
        RedisSemaphore s = build(a, 5);
        String id = "test:" + name;
        long t1 = (Long) run(s, Script.ACQUIRE, id + "-1", "2", "30000", "10000").get(0); // the first lease: SET
        Map<String, Long> m = meta(redis, name);
        long due = m.get("due");
        assertThat(m).containsEntry("ver", 4L).containsEntry("limit", 5L).containsEntry("max", 5L)
                .containsEntry("used", 2L).containsEntry("fence", t1).containsEntry("seq", 0L)
                .containsEntry("closed", 0L).containsEntry("idle", 0L).containsEntry("qlen", 0L);
        long t2 = (Long) run(s, Script.ACQUIRE, id + "-2", "3", "60000", "10000").get(0); // a later lease: SETRANGE
        assertThat(t2).isGreaterThan(t1);
        assertThat(meta(redis, name)).containsEntry("used", 5L).containsEntry("fence", t2).containsEntry("due", due)
                .containsEntry("limit", 5L).containsEntry("max", 5L).containsEntry("qlen", 0L);
        assertThat(run(s, Script.ACQUIRE, id + "-3", "1", "30000", "10000")).containsExactly("QUEUED");
        m = meta(redis, name);
        assertThat(m).containsEntry("used", 5L).containsEntry("fence", t2).containsEntry("seq", 1L)
                .containsEntry("qlen", 1L).containsEntry("closed", 0L).containsEntry("idle", 0L);
        assertThat(m.get("due")).as("the waiter's liveness, 10 s, ends before the first lease").isLessThan(due);
        checkInvariants();
        assertThat(run(s, Script.RELEASE, id + "-1")).containsExactly("OK"); // serves the only waiter inline
        m = meta(redis, name);
        assertThat(m).containsEntry("used", 4L).containsEntry("seq", 1L).containsEntry("qlen", 0L)
                .containsEntry("limit", 5L).containsEntry("max", 5L);
        assertThat(m.get("fence")).isGreaterThan(t2);
        checkInvariants();
        assertThat(run(s, Script.RELEASE, id + "-2")).containsExactly("OK"); // nobody queued: used alone
        assertThat(meta(redis, name)).containsEntry("used", 1L).containsEntry("fence", m.get("fence"))
                .containsEntry("seq", 1L).containsEntry("qlen", 0L).containsEntry("due", m.get("due"))
                .containsEntry("limit", 5L).containsEntry("max", 5L).containsEntry("ver", 4L);
        assertThat(run(s, Script.RELEASE, id + "-3")).containsExactly("OK");
        assertThat(meta(redis, name)).containsEntry("used", 0L);
        assertThat(redis.strlen("sem:{" + name + "}:meta")).isEqualTo(73);
        checkInvariants();
    }

    @Test
    void anAcquireWithMalformedArgumentsIsRefusedBeforeItChangesAnything() throws Exception {
        RedisSemaphore s = build(a, 3);
        Permit all = s.acquire(3); // so that the requests below would have to queue
        assertThatThrownBy(() -> run(s, Script.ACQUIRE, "test:" + name, "many", "30000", "10000"))
                .hasMessageContaining("permits \"many\" is neither a count, idle nor drain");
        assertThatThrownBy(() -> run(s, Script.ACQUIRE, "no-handle-" + name, "1", "30000", "10000"))
                .hasMessageContaining("is not \"clientId:counter\"");
        assertThatThrownBy(() -> run(s, Script.ACQUIRE, "test:" + name, "idle", "30000", ""))
                .hasMessageContaining("needs waiterTtlMs");
        assertThatThrownBy(() -> run(s, Script.ACQUIRE, "test:" + name, "1", "30000", "soon"))
                .hasMessageContaining("waiterTtlMs \"soon\" is neither a count nor \"\"");
        assertThatThrownBy(() -> run(s, Script.ACQUIRE, "test:" + name, "1", "long", "10000"))
                .hasMessageContaining("leaseMs \"long\" is not a count");
        assertThatThrownBy(() -> run(s, Script.ACQUIRE, "test:" + name, "1", "30000"))
                .hasMessageContaining("waiterTtlMs \"nil\"");
        assertThat(run(s, Script.STATUS)).containsExactly("3", "3", "3", "0", "0");
        // The other scripts check their counts before they change anything too.
        assertThatThrownBy(() -> run(s, Script.RELEASE, "x:1", "x:2", "some"))
                .hasMessageContaining("RELEASE: permits \"some\" is not a count");
        assertThatThrownBy(() -> run(s, Script.SPLIT, "x:1", "", "x:2", "0"))
                .hasMessageContaining("SPLIT: permits \"0\" is not a count > 0");
        assertThatThrownBy(() -> run(s, Script.RENEW, "x", "30000", "10000"))
                .hasMessageContaining("RENEW: leaseMs, waiterTtlMs and the count of held ids must be counts");
        assertThatThrownBy(() -> run(s, Script.SET_LIMIT, "double", "2"))
                .hasMessageContaining("SET_LIMIT: \"double 2\" is not set, add or reduce and a count");
        assertThat(run(s, Script.STATUS)).containsExactly("3", "3", "3", "0", "0");
        // A request that must not queue needs neither; one under the id of a queued request finds it queued.
        assertThat(run(s, Script.ACQUIRE, "no-handle-" + name, "1", "30000", "")).containsExactly("NOT_AVAILABLE");
        assertThat(run(s, Script.ACQUIRE, "test:" + name, "1", "30000", "10000")).containsExactly("QUEUED");
        assertThat(run(s, Script.ACQUIRE, "test:" + name, "1", "30000", "")).containsExactly("QUEUED");
        assertThat(run(s, Script.ACQUIRE, "test:" + name, "drain", "30000", "")).containsExactly("QUEUED");
        checkInvariants();
        assertThat(run(s, Script.CANCEL, "test:" + name)).containsExactly("CANCELLED");
        all.close();
        assertThat(run(s, Script.STATUS)).containsExactly("3", "3", "0", "0", "0");
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
        List<Object> r = run(sa, Script.ACQUIRE, id, "2", "30000", "10000");
        assertThat(r).singleElement().isInstanceOf(Long.class); // the fast path: the token alone
        // Replayed: still one grant, and the reply says how many permits it holds.
        assertThat(run(sa, Script.ACQUIRE, id, "2", "30000", "10000"))
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
