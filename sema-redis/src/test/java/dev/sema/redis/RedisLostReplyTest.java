package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.testing.RedisServer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A CANCEL or a RELEASE whose reply is lost (Redis stalled past the command timeout) still takes effect:
 * the scripts are loaded when the client connects, so a command that Redis runs late finds them, and the
 * handle sends it again at its next heartbeats until Redis answers. The permit is back within about a
 * heartbeat of Redis answering again, not after its 30-second lease.
 */
class RedisLostReplyTest extends RedisTestSupport {
    /** Far below the default lease (30 s): what "back at once" means here. */
    private static final Duration WITHIN = Duration.ofSeconds(6);

    private RedisSemaphores impatient;

    private RedisSemaphore build(long permits) {
        impatient = RedisSemaphores.connect("redis://127.0.0.1:" + server.port() + "?timeout=1s");
        return impatient.semaphore(name).permits(permits).build();
    }

    @AfterEach
    void resumeAndClose() throws Exception {
        server.resume(); // in case a test failed while it was paused
        if (impatient != null) {
            impatient.close();
        }
    }

    /** Waits until {@code condition} holds; a query refused while the client reconnects counts as not yet. */
    private static void within(Duration limit, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!holds(condition)) {
            assertThat(System.nanoTime() - deadline).as("not within " + limit + ": " + what).isNegative();
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    private static boolean holds(BooleanSupplier condition) {
        try {
            return condition.getAsBoolean();
        } catch (RedisSemaphoreException reconnecting) {
            return false;
        }
    }

    @Test
    void aCancelSentWhileRedisStalledTakesEffectOnceItAnswers() throws Exception {
        RedisSemaphore s = build(2);
        Permit one = s.acquire(1);
        server.pause();
        // The ACQUIRE and then its CANCEL wait in the socket; both time out here.
        assertThatThrownBy(() -> s.acquire(1, Duration.ofMillis(500))).isInstanceOf(TimeoutException.class);
        Thread.sleep(2_000);
        server.resume(); // Redis now grants the ACQUIRE, then must withdraw it
        within(WITHIN, "the withdrawn request's permit is back", () -> s.availablePermits() == 1);
        one.close();
        within(WITHIN, "every permit back", () -> s.availablePermits() == 2 && s.queueLength() == 0);
        checkInvariants();
    }

    @Test
    void aReleaseSentWhileRedisStalledTakesEffectOnceItAnswers() throws Exception {
        RedisSemaphore s = build(2);
        Permit one = s.acquire(1);
        server.pause();
        one.close(); // its reply is lost: close() never throws
        Thread.sleep(1_500);
        server.resume();
        within(WITHIN, "the released permit is back", () -> s.availablePermits() == 2);
        checkInvariants();
    }

    @Test
    void aLostReleaseIsSentAgainAfterTheScriptsWereFlushed() throws Exception {
        RedisSemaphore s = build(2);
        Permit one = s.acquire(1);
        redis.scriptFlush(); // the late RELEASE finds no script (NOSCRIPT, unseen): only sending it again helps
        server.pause();
        one.close();
        Thread.sleep(1_500);
        server.resume();
        within(WITHIN, "the released permit is back", () -> s.availablePermits() == 2);
        checkInvariants();
    }

    @Test
    void aReleaseWhoseConnectionIsKilledInFlightIsSentAgain() throws Exception {
        RedisSemaphore s = build(2);
        Permit one = s.acquire(1);
        // Writes wait (scripts count as writes) while CLIENT KILL still runs: the RELEASE is in flight, held
        // in its client's query buffer, when the connection is killed, so Redis never runs it.
        redis.dispatch(io.lettuce.core.protocol.CommandType.CLIENT,
                new io.lettuce.core.output.StatusOutput<>(io.lettuce.core.codec.StringCodec.UTF8),
                new io.lettuce.core.protocol.CommandArgs<>(io.lettuce.core.codec.StringCodec.UTF8)
                        .add("PAUSE").add(1_500).add("WRITE"));
        Thread release = Thread.ofVirtual().start(one::close);
        await("the release is waiting in Redis", () -> blockedClients() > 0 || !release.isAlive());
        redis.clientKill(io.lettuce.core.KillArgs.Builder.typeNormal());
        release.join(20_000);
        within(Duration.ofSeconds(8), "the released permit is back", () -> s.availablePermits() == 2);
        checkInvariants();
    }

    private static long blockedClients() {
        for (String line : redis.info("clients").split("\r?\n")) {
            if (line.startsWith("blocked_clients:") || line.startsWith("paused_clients:")) {
                if (Long.parseLong(line.substring(line.indexOf(':') + 1).trim()) > 0) {
                    return 1;
                }
            }
        }
        return 0;
    }

    @Test
    void aReleaseLostWhenRedisRestartsFromItsAppendOnlyFileIsSentAgain() throws Exception {
        // On the class's binary, with an append-only file written before every reply (appendfsync always).
        RedisServer persistent = RedisServer.builder(server.binary()).appendOnly().start();
        try (RedisSemaphores c = RedisSemaphores.connect(persistent.uri() + "?timeout=1s")) {
            RedisSemaphore s = c.semaphore(name).permits(2).build();
            Permit one = s.acquire(1);
            persistent.pause();
            one.close(); // sent, never answered: Redis is then killed and restarts from its append-only file
            persistent.restart(); // the grant is back from the file, the release is not
            within(Duration.ofSeconds(10), "the released permit is back", () -> s.availablePermits() == 2);
        } finally {
            persistent.close();
        }
    }

    @Test
    void aRenewalWhoseReplyIsLostIsSentAgain() throws Exception {
        RedisSemaphore s = impatientWithLease(Duration.ofSeconds(3));
        Permit one = s.acquire(1);
        server.pause();
        Thread.sleep(1_500); // a renewal is due after a third of the lease: it is sent, and times out
        server.resume();
        Thread.sleep(3_000); // past the original lease: only renewals keep the grant
        assertThat(((RedisPermit) one).leaseLost()).isNotDone();
        assertThat(s.availablePermits()).isEqualTo(1);
        one.close();
        within(WITHIN, "the permit is back", () -> s.availablePermits() == 2);
        checkInvariants();
    }

    private RedisSemaphore impatientWithLease(Duration lease) {
        impatient = RedisSemaphores.connect("redis://127.0.0.1:" + server.port() + "?timeout=1s");
        return impatient.semaphore(name).permits(2).lease(lease).build();
    }
}
