package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What only the Redis semaphore promises, with two processes (two connections) sharing each semaphore:
 * fencing tokens, leaving, borrowed clients, the builder's bounds. The {@link Semaphore} contract itself
 * is the shared suite, run by {@link RedisContractTest}.
 */
class RedisSemaphoreTest extends RedisTestSupport {


    @Test
    void borrowedClientIsNotShutDown() throws Exception {
        io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(uri(server));
        try {
            try (RedisSemaphores borrowed = RedisSemaphores.using(client)) {
                RedisSemaphore s = borrowed.semaphore(name).permits(1).build();
                s.acquire().close();
                assertThat(s.availablePermits()).isEqualTo(1);
            }
            try (var c = client.connect()) {
                assertThat(c.sync().ping()).isEqualTo("PONG");
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }


    /**
     * A client made by connect() tries to reconnect at least once a second, however long Redis was away
     * (Lettuce's default doubles the delay up to 30 s); a closed connection shuts its resources down.
     */
    @Test
    void ownClientReconnectsAtLeastOnceASecond() {
        RedisSemaphores own = RedisSemaphores.connect(uri(server));
        io.lettuce.core.resource.ClientResources resources = own.client().getResources();
        io.lettuce.core.resource.Delay delay = resources.reconnectDelay();
        for (long attempt = 1; attempt <= 40; attempt++) {
            assertThat(delay.createDelay(attempt)).as("attempt %d", attempt).isLessThanOrEqualTo(Duration.ofSeconds(1));
        }
        assertThat(delay.createDelay(40)).isEqualTo(Duration.ofSeconds(1));
        own.close();
        assertThat(resources.eventExecutorGroup().isShuttingDown()).as("resources shut down with it").isTrue();
    }

    /**
     * A borrowed client's command timeout is the connection's: its fixed {@code TimeoutOptions}, else the URI's
     * {@code timeout}, at most 10 s; so a {@code replicas} timeout the client would cut short is refused.
     */
    @Test
    void borrowedClientLendsItsCommandTimeout() {
        io.lettuce.core.RedisClient fromUri = io.lettuce.core.RedisClient.create(server.uri() + "?timeout=1500ms");
        io.lettuce.core.RedisClient withOptions = io.lettuce.core.RedisClient.create(server.uri());
        withOptions.setOptions(io.lettuce.core.ClientOptions.builder()
                .timeoutOptions(io.lettuce.core.TimeoutOptions.enabled(Duration.ofMillis(700))).build());
        io.lettuce.core.RedisClient slow = io.lettuce.core.RedisClient.create(server.uri() + "?timeout=1m");
        try {
            assertThat(RedisSemaphores.commandTimeoutOf(fromUri)).isEqualTo(Duration.ofMillis(1500));
            assertThat(RedisSemaphores.commandTimeoutOf(withOptions)).isEqualTo(Duration.ofMillis(700));
            assertThat(RedisSemaphores.commandTimeoutOf(slow)).isEqualTo(Duration.ofSeconds(10));
            try (RedisSemaphores borrowed = RedisSemaphores.using(withOptions)) {
                assertThatThrownBy(() -> borrowed.semaphore(name).permits(1)
                        .replicas(1, Duration.ofMillis(700)).build())
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("less than the command timeout (PT0.7S)");
            }
        } finally {
            for (var c : List.of(fromUri, withOptions, slow)) {
                c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    @Test
    void fencingTokensIncreaseStrictlyAcrossProcesses() throws Exception {
        RedisSemaphore sa = build(a, 2);
        RedisSemaphore sb = build(b, 2);
        long last = 0;
        for (int i = 0; i < 20; i++) {
            RedisPermit p = (i % 2 == 0 ? sa : sb).acquire(1 + i % 2);
            assertThat(p.fencingToken()).isGreaterThan(last);
            last = p.fencingToken();
            p.close();
        }
        // Queued grants and concurrent ones too.
        Permit hold = sa.acquire(2);
        List<CompletableFuture<Permit>> waiters = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            waiters.add((i % 2 == 0 ? sa : sb).acquireAsync(1));
            awaitQueueLength(sa, i + 1);
        }
        long holdToken = ((RedisPermit) hold).fencingToken();
        hold.close();
        RedisPermit w0 = (RedisPermit) waiters.get(0).get(20, TimeUnit.SECONDS);
        RedisPermit w1 = (RedisPermit) waiters.get(1).get(20, TimeUnit.SECONDS);
        assertThat(w0.fencingToken()).isGreaterThan(holdToken);
        assertThat(w1.fencingToken()).isGreaterThan(w0.fencingToken());
        w0.close();
        RedisPermit w2 = (RedisPermit) waiters.get(2).get(20, TimeUnit.SECONDS);
        assertThat(w2.fencingToken()).isGreaterThan(w1.fencingToken());
        w1.close();
        w2.close();
        waiters.get(3).get(20, TimeUnit.SECONDS).close();
        checkInvariants();
    }


    @Test
    void splitMergeReleaseAndForgetWorkOnTheGrantsInRedis() throws Exception {
        RedisSemaphore sa = build(a, 10);
        RedisSemaphore sb = build(b, 10);
        RedisPermit p = sa.acquire(6);
        long token = p.fencingToken();
        RedisPermit part = (RedisPermit) p.split(2);
        assertThat(part.permits()).isEqualTo(2);
        assertThat(p.permits()).isEqualTo(4);
        assertThat(part.fencingToken()).isEqualTo(token); // parts of one grant share its token
        assertThat(sb.availablePermits()).isEqualTo(4);
        checkInvariants();
        part.close();
        assertThat(sb.availablePermits()).isEqualTo(6);
        p.release(1);
        assertThat(p.permits()).isEqualTo(3);
        assertThat(p.fencingToken()).isEqualTo(token);
        assertThat(sb.availablePermits()).isEqualTo(7);
        RedisPermit q = sa.acquire(2);
        p.merge(q);
        assertThat(q.permits()).isZero();
        assertThat(p.permits()).isEqualTo(5);
        assertThat(p.fencingToken()).isEqualTo(q.fencingToken()).isGreaterThan(token);
        q.close(); // empty: nothing happens
        assertThat(sb.availablePermits()).isEqualTo(5);
        checkInvariants();
        assertThatThrownBy(() -> p.merge(p)).isInstanceOf(IllegalArgumentException.class);
        Permit other = sb.acquire(1);
        assertThatThrownBy(() -> p.merge(other)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.release(6)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> p.split(-1)).isInstanceOf(IllegalArgumentException.class);
        other.close();
        // Merging into an empty permit, then forgetting: the limit drops by what was held.
        Permit empty = sa.acquire(0);
        empty.merge(p);
        assertThat(empty.permits()).isEqualTo(5);
        assertThat(p.permits()).isZero();
        Permit all = empty.split(5);
        assertThat(empty.permits()).isZero();
        all.forget();
        assertThat(all.permits()).isZero();
        assertThat(sb.permits()).isEqualTo(5);
        assertThat(sb.availablePermits()).isEqualTo(5);
        checkInvariants();
    }


    @Test
    void leavingReleasesThisProcessesPermitsAndFailsItsWaitersOnly() throws Exception {
        RedisSemaphore sa = build(a, 2);
        RedisSemaphore sb = build(b, 2);
        Permit heldByB = sb.acquire(1);
        CompletableFuture<Permit> waiterB = sb.acquireAsync(2);
        awaitQueueLength(sa, 1);
        CompletableFuture<Permit> waiterA = sa.acquireAsync(1);
        awaitQueueLength(sa, 2);
        b.close();
        assertThatThrownBy(() -> waiterB.get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(SemaphoreClosedException.class);
        assertThat(heldByB.permits()).isZero();
        heldByB.close();
        waiterA.get(20, TimeUnit.SECONDS).close();
        assertThat(sa.isClosed()).isFalse();
        assertThat(sb.isClosed()).isTrue();
        assertThatThrownBy(() -> sb.tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
        assertThat(sa.availablePermits()).isEqualTo(2);
        assertThat(sa.queueLength()).isZero();
        checkInvariants();
    }

    @Test
    void leavingFailsAThreadBlockedInAcquire() throws Exception {
        RedisSemaphore sa = build(a, 1);
        RedisSemaphore sb = build(b, 1);
        Permit held = sa.acquire();
        CompletableFuture<Throwable> blocked = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                sb.acquire().close();
                blocked.complete(null);
            } catch (Throwable e) {
                blocked.complete(e);
            }
        });
        awaitQueueLength(sa, 1);
        b.close();
        assertThat(blocked.get(20, TimeUnit.SECONDS)).isInstanceOf(SemaphoreClosedException.class);
        held.close();
        await("the queue empty and every permit back", () -> sa.queueLength() == 0 && sa.availablePermits() == 1);
        checkInvariants();
    }

    @Test
    void builderBoundsAreChecked() {
        long max = Semaphore.MAX_PERMITS;
        assertThatThrownBy(() -> a.semaphore(name).permits(max + 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MAX_PERMITS");
        assertThatThrownBy(() -> a.semaphore(name).permits(3).maxPermits(2).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("3").hasMessageContaining("2");
        assertThat(a.semaphore(name).permits(max).build().maxPermits()).isEqualTo(max);
    }
}
