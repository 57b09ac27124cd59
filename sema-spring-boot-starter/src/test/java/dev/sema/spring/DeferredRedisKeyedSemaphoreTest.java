package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import dev.sema.SemaphoreListener;
import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The registry's handle on a keyed family on Redis (F1-F3 of {@link DeferredRedisKeyedSemaphore}): until it is
 * opened, its keys' views refuse as a Redis semaphore whose Redis is down, with an event; a view taken before the
 * open works after it; listeners added before the open hear the family's events with the handle's views; keys are
 * {@code String.valueOf(key)}, an empty one or one with a brace refused; a family opened after the handle was closed
 * is closed at once.
 */
@Timeout(60)
class DeferredRedisKeyedSemaphoreTest {
    private static RedisServer redis;
    private static RedisSemaphores connection;

    @BeforeAll
    static void startRedis() throws Exception {
        Optional<RedisServer.Binary> found = RedisServer.Source.INSTALLED_OR_BUNDLED.find();
        assumeTrue(found.isPresent(), () -> RedisServer.Source.INSTALLED_OR_BUNDLED.missing());
        redis = RedisServer.start(found.get());
        connection = RedisSemaphores.connect(redis.uri());
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (connection != null) {
            connection.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    /** Records every event as text, with the semaphore's name. */
    static final class Recorder implements SemaphoreListener {
        final List<String> events = new CopyOnWriteArrayList<>();
        final List<Semaphore> semaphores = new CopyOnWriteArrayList<>();

        private void add(Semaphore s, String event) {
            semaphores.add(s);
            events.add(event + " " + s.name());
        }

        @Override
        public void acquired(Semaphore s, long permits, long waitNanos) {
            add(s, "acquired " + permits);
        }

        @Override
        public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
            add(s, "rejected " + permits + " " + why);
        }

        @Override
        public void released(Semaphore s, long permits, long heldNanos) {
            add(s, "released " + permits);
        }
    }

    @Test
    void refusesUntilOpenThenIsTheFamilyAndItsListenersHearBoth() throws Exception {
        DeferredRedisKeyedSemaphore handle = new DeferredRedisKeyedSemaphore("deferred-keyed-a", 2, 10,
                RedisSemaphore.DEFAULT_LEASE);
        Recorder recorder = new Recorder();
        handle.addListener(recorder);
        Semaphore acme = handle.get("acme");
        assertThat(acme.name()).isEqualTo("deferred-keyed-a:acme");
        assertThat(acme.maxPermits()).as("the configured limit until open").isEqualTo(2);
        assertThat(handle.notOpen()).contains("keyed semaphore 'deferred-keyed-a' is not open yet");

        handle.failedToOpen("cannot connect to Redis: refused");
        assertThatThrownBy(() -> acme.tryAcquire(1)).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("semaphore 'deferred-keyed-a:acme': tryAcquire(1) failed: keyed semaphore"
                        + " 'deferred-keyed-a' is not open yet (cannot connect to Redis: refused)");
        CompletableFuture<Permit> async = acme.acquireAsync(1, Duration.ofSeconds(1));
        assertThatThrownBy(async::get).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(RedisSemaphoreException.class);
        assertThatThrownBy(acme::availablePermits).isInstanceOf(RedisSemaphoreException.class);
        assertThat(recorder.events).containsExactly("rejected 1 UNAVAILABLE deferred-keyed-a:acme",
                "rejected 1 UNAVAILABLE deferred-keyed-a:acme");
        assertThat(handle.size()).isZero();

        handle.open(connection.keyed("deferred-keyed-a").permits(2).maxKeys(10).build());
        assertThat(handle.isOpen()).isTrue();
        assertThat(handle.notOpen()).isNull();
        try (Permit p = acme.tryAcquire(2).orElseThrow()) {
            assertThat(p).as("a view taken before the open works after it").isInstanceOf(RedisPermit.class);
            assertThat(handle.size()).isEqualTo(1);
            assertThat(handle.get("acme").tryAcquire(1)).isEmpty();
        }
        assertThat(recorder.events).containsExactly("rejected 1 UNAVAILABLE deferred-keyed-a:acme",
                "rejected 1 UNAVAILABLE deferred-keyed-a:acme", "acquired 2 deferred-keyed-a:acme",
                "rejected 1 UNAVAILABLE deferred-keyed-a:acme", "released 2 deferred-keyed-a:acme");
        assertThat(recorder.semaphores).as("the handle's views, before and after the open").allMatch(acme::equals);
        assertThatThrownBy(() -> handle.open(connection.keyed("deferred-keyed-a").permits(2).build()))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void keysAreTheirTextAndAnEmptyOneOrOneWithABraceIsRefused() {
        DeferredRedisKeyedSemaphore handle = new DeferredRedisKeyedSemaphore("deferred-keyed-b", 1, 10,
                RedisSemaphore.DEFAULT_LEASE);
        assertThat(handle.get(42)).isEqualTo(handle.get("42"));
        assertThat(handle.get(42).name()).isEqualTo("deferred-keyed-b:42");
        for (String bad : List.of("", "{acme}", "a}")) {
            assertThatThrownBy(() -> handle.get(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("key '" + bad + "' of keyed semaphore 'deferred-keyed-b'");
        }
        assertThatThrownBy(() -> handle.get(null)).isInstanceOf(NullPointerException.class);
        handle.open(connection.keyed("deferred-keyed-b").permits(1).build());
        assertThatThrownBy(() -> handle.get("a{")).isInstanceOf(IllegalArgumentException.class);
        try (Permit p = handle.get(7).tryAcquire().orElseThrow()) {
            assertThat(handle.get("7").tryAcquire()).as("7 and \"7\" are one key").isEmpty();
        }
    }

    @Test
    void aKeysViewCannotBeResizedClosedOrListenedToAlone() {
        DeferredRedisKeyedSemaphore handle = new DeferredRedisKeyedSemaphore("deferred-keyed-c", 1, 10,
                RedisSemaphore.DEFAULT_LEASE);
        Semaphore acme = handle.get("acme");
        assertThatThrownBy(() -> acme.setPermits(3)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("keyed semaphore 'deferred-keyed-c'");
        assertThatThrownBy(acme::close).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> acme.addListener(new Recorder())).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> acme.partition("gold")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aFamilyOpenedAfterTheHandleClosedIsClosedAtOnce() {
        DeferredRedisKeyedSemaphore handle = new DeferredRedisKeyedSemaphore("deferred-keyed-d", 1, 10,
                RedisSemaphore.DEFAULT_LEASE);
        Recorder recorder = new Recorder();
        handle.addListener(recorder);
        handle.close();
        assertThat(handle.isClosed()).isTrue();
        assertThatThrownBy(() -> handle.get("acme").tryAcquire()).isInstanceOf(SemaphoreClosedException.class)
                .hasMessageContaining("keyed semaphore 'deferred-keyed-d' is closed in this process");
        assertThat(recorder.events).containsExactly("rejected 1 CLOSED deferred-keyed-d:acme");

        KeyedSemaphore<String> late = connection.keyed("deferred-keyed-d").permits(1).build();
        handle.open(late);
        assertThat(late.isClosed()).isTrue();
        assertThatThrownBy(() -> handle.get("acme").tryAcquire()).isInstanceOf(SemaphoreClosedException.class);
    }
}
