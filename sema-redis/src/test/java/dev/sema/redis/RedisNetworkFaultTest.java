package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import dev.sema.testing.FaultProxy;
import dev.sema.testing.history.Checker;
import dev.sema.testing.history.HistoryWriter;
import dev.sema.testing.history.Recorder;
import dev.sema.testing.history.Report;
import dev.sema.testing.history.Violation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Network faults between one process and Redis, injected by a {@link FaultProxy}: the process {@link #w}
 * talks to Redis through the proxy, {@link #a} and {@link #b} directly. Every test checks that no process
 * ever believes it holds permits that Redis gave to another, that each request ends one way, and that
 * every permit is back after the fault.
 */
class RedisNetworkFaultTest extends RedisTestSupport {
    private static final Duration LEASE = Duration.ofSeconds(2);

    FaultProxy proxy;
    RedisSemaphores w;

    @BeforeEach
    void startProxy() throws Exception {
        proxy = FaultProxy.start("127.0.0.1", server.port());
        w = RedisSemaphores.connect(proxy.redisUri("timeout=1s"));
    }

    @AfterEach
    void stopProxy() {
        if (proxy != null) {
            proxy.heal();
        }
        if (w != null) {
            w.close();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    private RedisSemaphore leased(RedisSemaphores on, long permits) {
        return on.semaphore(name).permits(permits).lease(LEASE).build();
    }

    @Test
    @Timeout(60)
    void partitionedHeadWaiterNeverBelievesItHoldsWhatRedisGaveToAnother() throws Exception {
        RedisSemaphore sa = leased(a, 1);
        RedisSemaphore sc = leased(b, 1);
        RedisSemaphore sw = leased(w, 1);
        Permit holder = sa.acquire();
        CompletableFuture<Permit> cut = sw.acquireAsync(1);
        awaitQueueLength(sw, 1); // w's own connection answered: w is queued, at the head
        CompletableFuture<Permit> next = sc.acquireAsync(1);
        awaitQueueLength(sc, 2);

        proxy.partition(FaultProxy.Direction.BOTH);
        holder.close(); // Redis grants w; the message is held in the partition
        // w cannot renew: Redis ends its grant after the lease and serves c.
        RedisPermit c = (RedisPermit) next.get(20, TimeUnit.SECONDS);
        proxy.heal();

        // The grant reaches w long after its own deadline: it must not become a live permit while c holds.
        neverLiveWhileCHoldsThenServedNext(cut, c, sa, "w's request goes back into the queue, behind c's grant");
    }

    @Test
    @Timeout(60)
    void wakeUpOfAReapedGrantNeverReachesAWaiterQueuedAgainUnderTheSameId() throws Exception {
        RedisSemaphore sa = leased(a, 1);
        RedisSemaphore sc = leased(b, 1);
        LettuceSemaphore sw = (LettuceSemaphore) leased(w, 1);
        Permit holder = sa.acquire();
        CompletableFuture<Permit> cut = sw.acquireAsync(1);
        awaitQueueLength(sw, 1); // w's own connection answered: w is queued, at the head
        Pending<?> waiter = sw.waiting.values().iterator().next();
        CompletableFuture<Permit> next = sc.acquireAsync(1);
        awaitQueueLength(sc, 2);

        proxy.partition(FaultProxy.Direction.BOTH);
        holder.close(); // Redis grants w; the wake-up is held in the partition
        // w cannot renew: Redis ends its grant after the lease and serves c.
        RedisPermit c = (RedisPermit) next.get(20, TimeUnit.SECONDS);
        assertThat(sa.queueLength()).isZero();

        // Only the wake-up stays held: w's heartbeat reaches Redis, learns its waiter is gone and queues it
        // again under the same id, and w sees it queued after the switch.
        long switched = System.nanoTime();
        proxy.partition(FaultProxy.Direction.TO_CLIENT, FaultProxy.Link::subscriber);
        awaitQueueLength(sa, 1);
        await("w saw its request queued again", () -> waiter.queuedSeenAt - switched > 0);
        proxy.heal(); // the wake-up of the reaped grant arrives now, after the request was queued again

        // That wake-up belongs to the grant Redis reaped: it must not become a live permit while c holds.
        neverLiveWhileCHoldsThenServedNext(cut, c, sa, "w's request stays queued, behind c's grant");
    }

    @Test
    @Timeout(60)
    void partitionedHolderLearnsItLostTheLeaseBeforeAnotherProcessIsGranted() throws Exception {
        RedisSemaphore sw = leased(w, 2);
        RedisSemaphore sc = leased(b, 2);
        RedisPermit cutOff = sw.acquire(2);
        AtomicLong lostAt = new AtomicLong();
        cutOff.leaseLost().thenRun(() -> lostAt.set(System.nanoTime()));
        AtomicLong grantedAt = new AtomicLong();
        CompletableFuture<Permit> next = sc.acquireAsync(2);
        next.thenRun(() -> grantedAt.set(System.nanoTime()));
        awaitQueueLength(sc, 1);

        proxy.partition(FaultProxy.Direction.BOTH);
        RedisPermit c = (RedisPermit) next.get(20, TimeUnit.SECONDS);
        await("the grant's time recorded", () -> grantedAt.get() != 0);
        assertThat(lostAt.get()).as("leaseLost() completed before the permits went to another process").isNotZero();
        assertThat(grantedAt.get() - lostAt.get()).isPositive();
        assertThat(c.fencingToken()).isGreaterThan(cutOff.fencingToken());
        proxy.heal();

        cutOff.close(); // Redis no longer holds it: nothing is released twice
        c.close();
        everyPermitBack(sc, 2);
    }

    @Test
    @Timeout(60)
    void acquireSentIntoAPartitionFailsOnceAndLeavesNothingBehind() throws Exception {
        RedisSemaphore sw = leased(w, 2);
        proxy.partition(FaultProxy.Direction.BOTH);
        // Blocking, timed and async: each fails once with Redis unreachable; the held ACQUIREs reach Redis
        // when the partition heals, and the CANCELs sent after them withdraw or release what they got.
        assertThatThrownBy(() -> sw.acquire(1)).isInstanceOf(RedisSemaphoreException.class);
        assertThatThrownBy(() -> sw.acquire(1, Duration.ofSeconds(5))).isInstanceOf(RedisSemaphoreException.class);
        CompletableFuture<Permit> async = sw.acquireAsync(2);
        assertThatThrownBy(() -> async.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(RedisSemaphoreException.class);
        assertThatThrownBy(() -> sw.tryAcquire(1)).isInstanceOf(RedisSemaphoreException.class);
        proxy.heal();
        everyPermitBack(leased(b, 2), 2);
        RedisSemaphore sc = leased(b, 2);
        Permit p = sc.acquire(2); // nothing was left queued or held by the partitioned requests
        p.close();
    }

    @Test
    @Timeout(60)
    void releaseSentIntoAPartitionTakesEffectOnceItHeals() throws Exception {
        RedisSemaphore sw = leased(w, 1);
        RedisSemaphore sc = leased(b, 1);
        Permit held = sw.acquire();
        CompletableFuture<Permit> next = sc.acquireAsync(1);
        awaitQueueLength(sc, 1);
        proxy.partition(FaultProxy.Direction.BOTH);
        held.close(); // never throws: the RELEASE waits in the partition, and is sent again until answered
        Thread.sleep(300);
        proxy.heal();
        Permit c = next.get(20, TimeUnit.SECONDS);
        c.close();
        everyPermitBack(sc, 1);
    }

    /**
     * Closing the process gives back a release whose reply was lost, at once rather than at the lease's end:
     * the lease would end in Redis only when some later operation found it expired. Another process holds
     * a permit throughout, so a release applied twice would show as a count below its one.
     */
    @Test
    @Timeout(60)
    void closeSendsAReleaseWhoseReplyWasLostBeforeTheHandleGoes() throws Exception {
        RedisSemaphore sb = b.semaphore(name).permits(2).build(); // the default 30 s lease: b renews nothing here
        Permit other = sb.acquire(1);
        LettuceSemaphore sw = (LettuceSemaphore) leased(w, 2);
        Permit mine = sw.acquire(1);
        sw.renewalsSuspended = true; // no heartbeat resends the release: only the close can
        loseTheReleaseOf(mine);
        assertThat(sw.releasesDue).as("the release's reply was lost").hasSize(1);
        assertThat(usedInRedis(name)).isEqualTo(2);

        w.close();
        awaitUsedInRedis(name, 1, Duration.ofSeconds(1)); // w's permit back, b's still held
        other.close();
        everyPermitBack(sb, 2);
    }

    /**
     * A keyed family lets go of a key's handle as soon as the key is idle, right after its last permit's
     * release: a release whose reply was lost is sent before the handle goes, not left to the lease.
     */
    @Test
    @Timeout(60)
    void droppingAnIdleKeySendsAReleaseWhoseReplyWasLostBeforeTheHandleGoes() throws Exception {
        String key = name + ":k";
        RedisSemaphore sb = b.semaphore(key).permits(2).build(); // the default 30 s lease: b renews nothing here
        Permit other = sb.acquire(1);
        RedisKeyedSemaphore family = (RedisKeyedSemaphore) w.keyed(name).permits(2).lease(LEASE).build();
        Permit mine = family.get("k").acquire(1);
        LettuceSemaphore handle = family.peek("k").handle();
        handle.renewalsSuspended = true; // no heartbeat resends the release: only the drop can
        int handles = w.handlesForTests();
        loseTheReleaseOf(mine);
        assertThat(handle.hasLeft()).as("the idle key's handle was dropped").isTrue();
        assertThat(w.handlesForTests()).isEqualTo(handles - 1);

        awaitUsedInRedis(key, 1, Duration.ofSeconds(1)); // w's permit back, b's still held
        other.close();
        await("every permit back and nobody waiting", () -> sb.availablePermits() == 2 && sb.queueLength() == 0);
        checkInvariants(key);
    }

    /**
     * Closing while Redis cannot be reached returns within about one command timeout, however many handles
     * have something to give back; the leases end the rest.
     */
    @Test
    @Timeout(60)
    void closeWhileRedisIsUnreachableReturnsPromptlyAndLeavesTheRestToTheLease() throws Exception {
        List<String> names = List.of(name, name + "-2", name + "-3", name + "-4");
        List<Permit> released = new ArrayList<>();
        for (String n : names) {
            RedisSemaphore s = w.semaphore(n).permits(2).lease(LEASE).build();
            released.add(s.acquire(1));
            s.acquire(1); // still held at the close
        }
        proxy.partition(FaultProxy.Direction.BOTH);
        List<Thread> closing = new ArrayList<>();
        for (Permit p : released) {
            closing.add(Thread.ofPlatform().start(p::close)); // no reply: due again
        }
        for (Thread t : closing) {
            t.join(TimeUnit.SECONDS.toMillis(20));
        }

        w.close(); // never throws, never hangs (the test's timeout): one command timeout for every handle's replies
        proxy.heal();
        for (String n : names) {
            RedisSemaphore s = b.semaphore(n).permits(2).lease(LEASE).build();
            await("every permit of " + n + " back", () -> s.availablePermits() == 2 && s.queueLength() == 0);
            checkInvariants(n);
        }
    }

    @Test
    @Timeout(60)
    void aKeyedFamilyClosedWhileRedisIsUnreachableLeavesEveryKeyAndTheRestToTheLeases() throws Exception {
        KeyedSemaphore<String> family = w.keyed(name).permits(2).lease(LEASE).build();
        List<String> keys = List.of("a", "b", "c", "d");
        List<Permit> released = new ArrayList<>();
        for (String k : keys) {
            released.add(family.get(k).acquire(1));
            family.get(k).acquire(1); // still held at the close
        }
        proxy.partition(FaultProxy.Direction.BOTH);
        List<Thread> closing = new ArrayList<>();
        for (Permit p : released) {
            closing.add(Thread.ofPlatform().start(p::close)); // no reply: due again
        }
        for (Thread t : closing) {
            t.join(TimeUnit.SECONDS.toMillis(20));
        }
        family.close(); // never throws, never hangs: one command timeout for every key's replies
        assertThat(family.isClosed()).isTrue();
        assertThatThrownBy(() -> family.get("a").tryAcquire(1)).isInstanceOf(SemaphoreClosedException.class);
        proxy.heal();
        for (String k : keys) {
            RedisSemaphore s = b.semaphore(name + ":" + k).permits(2).lease(LEASE).build();
            await("every permit of key " + k + " back", () -> s.availablePermits() == 2 && s.queueLength() == 0);
            checkInvariants(name + ":" + k);
        }
    }

    @Test
    @Timeout(60)
    void renewalHeldUpByAShortPartitionKeepsTheLease() throws Exception {
        RedisSemaphore sw = leased(w, 1);
        RedisSemaphore sc = leased(b, 1);
        RedisPermit held = sw.acquire();
        for (int i = 0; i < 3; i++) {
            // Shorter than the lease's tenth of margin after a renewal: the lease is kept through it.
            await("a renewal just went through", () -> ((LettucePermit) held).deadline() - System.nanoTime()
                    > TimeUnit.MILLISECONDS.toNanos(1_600));
            proxy.partition(FaultProxy.Direction.BOTH);
            Thread.sleep(500);
            assertThat(sc.tryAcquire()).isEmpty();
            proxy.heal();
        }
        assertThat(held.leaseLost()).isNotDone();
        assertThat(sc.tryAcquire()).isEmpty();
        held.close();
        everyPermitBack(sc, 1);
    }

    @Test
    @Timeout(60)
    void cancelSentIntoAPartitionReleasesTheGrantThatRacedWithIt() throws Exception {
        RedisSemaphore sa = leased(a, 1);
        RedisSemaphore sw = leased(w, 1);
        Permit holder = sa.acquire();
        CompletableFuture<Permit> cut = sw.acquireAsync(1);
        awaitQueueLength(sw, 1);
        proxy.partition(FaultProxy.Direction.BOTH);
        assertThat(cut.cancel(false)).isTrue(); // the CANCEL waits in the partition
        holder.close(); // Redis grants w's request before the CANCEL reaches it
        await("granted in Redis", () -> sa.queueLength() == 0);
        Thread.sleep(300);
        proxy.heal();
        assertThatThrownBy(cut::join).isInstanceOf(CancellationException.class);
        everyPermitBack(sa, 1);
    }

    @Test
    @Timeout(90)
    void latencyOf50MsEachWayFailsNothingAndKeepsTheLimit() throws Exception {
        proxy.latency(Duration.ofMillis(50));
        RedisSemaphores slowOwn = w;
        long limit = 3;
        RedisSemaphore slow = slowOwn.semaphore(name).permits(limit).build(); // default lease: 30 s
        RedisSemaphore fast = a.semaphore(name).permits(limit).build();
        Beliefs beliefs = new Beliefs(limit);
        List<Throwable> failures = run(16, 15, (i, random) -> {
            RedisSemaphore s = i % 2 == 0 ? slow : fast;
            long n = 1 + random.nextInt(2);
            Permit p = random.nextBoolean() ? s.acquire(n) : s.acquireAsync(n).get(30, TimeUnit.SECONDS);
            beliefs.believe(p);
            Thread.sleep(random.nextInt(20));
            beliefs.close(p);
        });
        assertThat(failures).isEmpty();
        assertThat(beliefs.granted()).isEqualTo(16 * 15);
        assertThat(beliefs.lost()).isZero();
        beliefs.check();
        everyPermitBack(fast, limit);
    }

    @Test
    @Timeout(120)
    void repeatedResetsNeverLetMoreHoldersThanTheLimitAndLoseNothing() throws Exception {
        long limit = 3;
        RedisSemaphore cutOff = leased(w, limit);
        RedisSemaphore direct = leased(a, limit);
        Beliefs beliefs = new Beliefs(limit);
        AtomicLong refused = new AtomicLong();
        AtomicLong timedOut = new AtomicLong();
        ExecutorService resetter = Executors.newSingleThreadExecutor();
        Future<?> resets = resetter.submit(() -> {
            for (int i = 0; i < 12; i++) {
                Thread.sleep(250);
                proxy.resetAll();
            }
            return null;
        });
        List<Throwable> failures = run(12, 25, (i, random) -> {
            RedisSemaphore s = i % 3 == 0 ? direct : cutOff;
            long n = 1 + random.nextInt(2);
            Permit p;
            try {
                p = switch (random.nextInt(3)) {
                    case 0 -> s.acquire(n, Duration.ofSeconds(2));
                    case 1 -> s.acquireAsync(n, Duration.ofSeconds(2)).get(30, TimeUnit.SECONDS);
                    default -> s.tryAcquire(n).orElse(null);
                };
            } catch (RedisSemaphoreException e) {
                refused.incrementAndGet(); // Redis unreachable for a moment: one clear failure
                return;
            } catch (TimeoutException e) {
                timedOut.incrementAndGet();
                return;
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof RedisSemaphoreException) {
                    refused.incrementAndGet();
                    return;
                }
                if (e.getCause() instanceof TimeoutException) {
                    timedOut.incrementAndGet();
                    return;
                }
                throw e;
            }
            if (p != null) {
                beliefs.believe(p);
                Thread.sleep(random.nextInt(30));
                beliefs.close(p);
            }
        });
        resets.get(60, TimeUnit.SECONDS);
        resetter.shutdown();
        long quiet = System.nanoTime(); // the last reset and the last request are over
        assertThat(failures).isEmpty();
        beliefs.check();
        // A release or withdrawal lost in a reset is sent again at the next heartbeat: all back within a lease.
        await("every permit back and nobody waiting", () -> direct.availablePermits() == limit
                && direct.queueLength() == 0);
        long backMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - quiet);
        System.out.println("resets: " + beliefs.granted() + " granted, " + refused + " refused (Redis unreachable), "
                + timedOut + " timed out, " + beliefs.lost() + " leases lost, max believed held " + beliefs.max()
                + ", every permit back " + backMillis + " ms after the last fault");
        assertThat(backMillis).as("every permit back within a lease of the last fault").isLessThan(LEASE.toMillis());
        checkInvariants();
    }

    @Test
    @Timeout(60)
    void wakeUpsPartitionedAloneStillReachTheirWaitersThroughTheHeartbeat() throws Exception {
        RedisSemaphore sa = leased(a, 1);
        RedisSemaphore sw = leased(w, 1);
        proxy.partition(FaultProxy.Direction.BOTH, FaultProxy.Link::subscriber);
        long tickMillis = 2_000 / 3;
        long longest = 0;
        for (int i = 0; i < 4; i++) {
            Permit holder = sa.acquire();
            CompletableFuture<Permit> waiter = sw.acquireAsync(1);
            awaitQueueLength(sa, 1);
            long released = System.nanoTime();
            holder.close();
            Permit p = waiter.get(20, TimeUnit.SECONDS); // its message is cut off: the heartbeat finds the grant
            longest = Math.max(longest, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released));
            p.close();
        }
        System.out.println("wake-ups cut off: longest stall " + longest + " ms (heartbeat " + tickMillis + " ms)");
        // Bounded by the heartbeat, with room for a busy machine; without it the waiters would hang.
        assertThat(longest).isLessThan(tickMillis + 2_000);
        proxy.heal();
        everyPermitBack(sa, 1);
    }

    @Test
    @Timeout(60)
    void partitionLongerThanTheLeaseOnBothSidesHandsEverythingOnAndLosesNothing() throws Exception {
        try (FaultProxy second = FaultProxy.start("127.0.0.1", server.port());
                RedisSemaphores w2 = RedisSemaphores.connect(second.redisUri("timeout=1s"))) {
            RedisSemaphore holderSide = leased(w, 2);
            RedisSemaphore waiterSide = w2.semaphore(name).permits(2).lease(LEASE).build();
            RedisSemaphore sc = leased(b, 2);
            Beliefs beliefs = new Beliefs(2);
            Permit held = beliefs.believe(holderSide.acquire(2));
            CompletableFuture<Permit> cutWaiter = waiterSide.acquireAsync(2);
            awaitQueueLength(sc, 1);
            CompletableFuture<Permit> direct = sc.acquireAsync(2);
            awaitQueueLength(sc, 2);

            proxy.partition(FaultProxy.Direction.BOTH);
            second.partition(FaultProxy.Direction.BOTH);
            // The holder's lease ends, the cut-off waiter's entry is reaped, the direct waiter is served.
            Permit c = beliefs.believe(direct.get(20, TimeUnit.SECONDS));
            Thread.sleep(LEASE.toMillis());
            proxy.heal();
            second.heal();

            Thread.sleep(1_000); // the cut-off waiter queues again, behind c
            assertThat(cutWaiter).isNotDone();
            beliefs.close(c);
            Permit again = beliefs.believe(cutWaiter.get(20, TimeUnit.SECONDS));
            beliefs.close(again);
            beliefs.close(held);
            beliefs.check();
            assertThat(beliefs.lost()).isEqualTo(1);
            everyPermitBack(sc, 2);
        }
    }

    @Test
    @Timeout(60)
    void halfOpenConnectionsAreFoundAndOpenedAgainAfterTheLeaseWasGivenUpInTime() throws Exception {
        RedisSemaphore sw = leased(w, 1);
        RedisSemaphore sc = leased(b, 1);
        RedisPermit held = sw.acquire();
        AtomicLong lostAt = new AtomicLong();
        held.leaseLost().thenRun(() -> lostAt.set(System.nanoTime()));
        CompletableFuture<Permit> next = sc.acquireAsync(1);
        awaitQueueLength(sc, 1);

        proxy.halfOpen(); // Redis sees w leave; w is never told, and hears nothing more
        RedisPermit c = (RedisPermit) next.get(20, TimeUnit.SECONDS);
        long grantedAt = System.nanoTime();
        assertThat(lostAt.get()).as("w gave its lease up before c was granted").isNotZero();
        assertThat(grantedAt - lostAt.get()).isPositive();
        c.close();
        // W1: with no reply for a command timeout, w's connection is closed and opened again: w works again.
        await("w reaches Redis again", () -> {
            try {
                sw.tryAcquire().ifPresent(Permit::close);
                return true;
            } catch (RedisSemaphoreException e) {
                return false;
            }
        });
        held.close();
        everyPermitBack(sc, 1);
    }

    @Test
    @Timeout(90)
    void theHistoryCheckerFlagsALateGrantHandedOverUncheckedAndPassesTheRealRule() throws Exception {
        Report broken;
        LettuceSemaphore.lateGrantsUnchecked = true; // the chaos run's deliberately broken build
        try {
            broken = recordPartitionedHeadWaiter(name + "-broken");
        } finally {
            LettuceSemaphore.lateGrantsUnchecked = false;
        }
        assertThat(broken.violations(Violation.Rule.LIMIT)).as(broken.toText()).isNotEmpty();
        Report fixed = recordPartitionedHeadWaiter(name + "-fixed");
        assertThat(fixed.passed()).as(fixed.toText()).isTrue();
    }

    /**
     * The partitioned head waiter of {@link #partitionedHeadWaiterNeverBelievesItHoldsWhatRedisGaveToAnother},
     * recorded as a history of three processes (a holder, a direct waiter c and the cut-off waiter w) and
     * checked.
     */
    private Report recordPartitionedHeadWaiter(String sem) throws Exception {
        HistoryWriter writer = HistoryWriter.inMemory();
        Recorder ra = new Recorder(writer, "a");
        Recorder rc = new Recorder(writer, "c");
        Recorder rw = new Recorder(writer, "w");
        for (Recorder r : List.of(ra, rc, rw)) {
            r.start();
            r.declare(sem, 1, LEASE);
        }
        RedisSemaphore sa = a.semaphore(sem).permits(1).lease(LEASE).build();
        RedisSemaphore sc = b.semaphore(sem).permits(1).lease(LEASE).build();
        RedisSemaphore sw = w.semaphore(sem).permits(1).lease(LEASE).build();
        long holderReq = ra.invoke(sem, 1, "acquire");
        RedisPermit holder = sa.acquire();
        ra.ok(holderReq, holder.fencingToken());
        long wReq = rw.invoke(sem, 1, "async");
        CompletableFuture<Permit> cut = sw.acquireAsync(1);
        awaitQueueLength(sw, 1);
        long cReq = rc.invoke(sem, 1, "async");
        CompletableFuture<Permit> next = sc.acquireAsync(1);
        awaitQueueLength(sc, 2);
        proxy.partition(FaultProxy.Direction.BOTH);
        ra.release(holderReq);
        holder.close();
        RedisPermit c = (RedisPermit) next.get(20, TimeUnit.SECONDS);
        rc.ok(cReq, c.fencingToken());
        c.leaseLost().thenRun(() -> rc.lost(cReq));
        proxy.heal();
        // w's outcome: handed over late (the broken build) or queued again behind c (the rule).
        CompletableFuture<Void> wDone = cut.thenAccept(p -> {
            RedisPermit rp = (RedisPermit) p;
            rw.ok(wReq, rp.fencingToken());
            rp.leaseLost().thenRun(() -> rw.lost(wReq));
        });
        Thread.sleep(1_500);
        rc.release(cReq);
        c.close();
        RedisPermit mine = (RedisPermit) cut.get(20, TimeUnit.SECONDS);
        wDone.get(20, TimeUnit.SECONDS);
        rw.release(wReq);
        mine.close();
        for (Recorder r : List.of(ra, rc, rw)) {
            r.exit();
        }
        return new Checker().check(writer.history());
    }

    /**
     * For 2.5 s, w's request {@code cut} is never a live permit while c holds the only one, and stays undone
     * ({@code queued} says why); once c releases, w is served next, with a higher token, and everything is back.
     */
    private void neverLiveWhileCHoldsThenServedNext(CompletableFuture<Permit> cut, RedisPermit c, RedisSemaphore sa,
            String queued) throws Exception {
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2_500);
        while (System.nanoTime() - until < 0) {
            if (cut.isDone() && !cut.isCompletedExceptionally()) {
                RedisPermit stale = (RedisPermit) cut.join();
                assertThat(stale.leaseLost())
                        .as("w was handed a live permit (token %d) while c holds token %d", stale.fencingToken(),
                                c.fencingToken())
                        .isDone();
            }
            Thread.sleep(5);
        }
        assertThat(cut).as(queued).isNotDone();
        c.close();
        RedisPermit mine = (RedisPermit) cut.get(20, TimeUnit.SECONDS);
        assertThat(mine.fencingToken()).isGreaterThan(c.fencingToken());
        assertThat(mine.leaseLost()).isNotDone();
        mine.close();
        assertThat(sa.availablePermits()).isEqualTo(1);
        assertThat(sa.queueLength()).isZero();
        checkInvariants();
    }

    /**
     * Closes {@code p} while w is cut off from Redis, then resets its connections: the RELEASE never reaches
     * Redis and its caller sees no reply.
     */
    private void loseTheReleaseOf(Permit p) throws InterruptedException {
        proxy.partition(FaultProxy.Direction.BOTH);
        Thread closing = Thread.ofPlatform().start(p::close);
        Thread.sleep(300);
        proxy.resetAll(); // the held RELEASE is lost with the connection
        proxy.heal();
        closing.join(TimeUnit.SECONDS.toMillis(20));
        assertThat(closing.isAlive()).as("close() returned").isFalse();
    }

    /** The permits Redis counts as used, read from the keys: a read through a handle would reap expired leases. */
    private static long usedInRedis(String semaphore) {
        return metaField(redis, semaphore, "used");
    }

    /** Waits until Redis counts {@code used} permits of {@code semaphore} as used, failing after {@code limit}. */
    private static void awaitUsedInRedis(String semaphore, long used, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (usedInRedis(semaphore) != used && System.nanoTime() - deadline < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
        assertThat(usedInRedis(semaphore)).as("permits used in Redis after %s", limit).isEqualTo(used);
    }

    /** Every permit back, nobody waiting, Redis's bookkeeping intact: within a lease and a heartbeat. */
    private void everyPermitBack(RedisSemaphore s, long limit) {
        await("every permit back and nobody waiting", () -> s.availablePermits() == limit && s.queueLength() == 0);
        checkInvariants();
    }

    interface Worker {
        void run(int worker, Random random) throws Exception;
    }

    /** Runs {@code rounds} of {@code body} on each of {@code workers} virtual threads; returns their failures. */
    private static List<Throwable> run(int workers, int rounds, Worker body) throws InterruptedException {
        long seed = System.nanoTime();
        System.out.println("seed " + seed);
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            int id = i;
            Random random = new Random(seed + i);
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    for (int r = 0; r < rounds; r++) {
                        body.run(id, random);
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
        }
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(80));
            if (t.isAlive()) {
                failures.add(new AssertionError("a worker is stuck: " + t));
            }
        }
        return failures;
    }
}
