package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.AdaptiveLimit;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The registry's handle on a Redis semaphore (D1-D3 of {@link DeferredRedisSemaphore}): refuses as a Redis
 * semaphore whose Redis is down until it is opened, then is that semaphore; its listeners hear every event with the
 * handle as the semaphore, before and after the open; the open actions run once, in order, or at once after the
 * open; {@link RedisConnector} opens what is pending once Redis is reached, and never twice.
 */
@Timeout(60)
class DeferredRedisSemaphoreTest {
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

    /** Records every event as text, with whether the semaphore passed was the handle. */
    static final class Recorder implements SemaphoreListener {
        final Semaphore expected;
        final List<String> events = new CopyOnWriteArrayList<>();

        Recorder(Semaphore expected) {
            this.expected = expected;
        }

        private void add(Semaphore s, String event) {
            events.add((s == expected ? "" : "OTHER ") + event);
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

        @Override
        public void limitChanged(Semaphore s, long oldLimit, long newLimit) {
            add(s, "limit " + oldLimit + "->" + newLimit);
        }
    }

    @Test
    void refusesUntilOpenedThenIsTheRedisSemaphoreAndItsListenersSeeTheHandle() throws Exception {
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("deferred-a", 5, Duration.ofSeconds(7));
        Recorder recorder = new Recorder(handle);
        handle.addListener(recorder);
        assertThat(handle.isOpen()).isFalse();
        assertThat(handle.maxPermits()).isEqualTo(5);
        assertThat(handle.lease()).isEqualTo(Duration.ofSeconds(7));
        assertThat(SemaphoreState.kind(handle)).isEqualTo("redis");
        handle.failedToOpen("Redis at redis://127.0.0.1:1 cannot be reached");
        assertThatThrownBy(() -> handle.tryAcquire(2)).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("tryAcquire(2)").hasMessageContaining("127.0.0.1:1 cannot be reached");
        assertThatThrownBy(() -> handle.acquire(1, Duration.ofSeconds(1))).isInstanceOf(RedisSemaphoreException.class);
        assertThat(handle.acquireAsync(1)).failsWithin(Duration.ZERO).withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(RedisSemaphoreException.class);
        assertThatThrownBy(() -> handle.tryAcquire(6)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(handle::permits).isInstanceOf(RedisSemaphoreException.class);
        assertThatThrownBy(() -> handle.setPermits(3)).isInstanceOf(RedisSemaphoreException.class);
        assertThatThrownBy(handle::state).isInstanceOf(RedisSemaphoreException.class);
        assertThat(recorder.events).containsExactly("rejected 2 UNAVAILABLE", "rejected 1 UNAVAILABLE",
                "rejected 1 UNAVAILABLE");

        RedisSemaphore real = connection.semaphore("deferred-a").permits(3).maxPermits(5).build();
        handle.open(real);
        assertThat(handle.isOpen()).isTrue();
        try (Permit p = handle.acquire(2)) {
            assertThat(handle.availablePermits()).isEqualTo(1);
            assertThat(real.availablePermits()).isEqualTo(1);
            assertThat(handle.state().available()).isEqualTo(1);
        }
        handle.setPermits(4);
        assertThat(recorder.events).containsExactly("rejected 2 UNAVAILABLE", "rejected 1 UNAVAILABLE",
                "rejected 1 UNAVAILABLE", "acquired 2", "released 2", "limit 3->4");
        assertThat(handle.removeListener(recorder)).isTrue();
        handle.tryAcquire(1).orElseThrow().close();
        assertThat(recorder.events).hasSize(6);
    }

    @Test
    void aListenerAddedAfterTheOpenHearsTheEventsAndOneThatThrowsStopsNoOther() throws Exception {
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("deferred-b", 2, RedisSemaphore.DEFAULT_LEASE);
        handle.open(connection.semaphore("deferred-b").permits(2).build());
        handle.addListener(new SemaphoreListener() {
            @Override
            public void acquired(Semaphore s, long permits, long waitNanos) {
                throw new IllegalStateException("a broken listener");
            }
        });
        Recorder recorder = new Recorder(handle);
        handle.addListener(recorder);
        handle.tryAcquire(1).orElseThrow().close();
        assertThat(recorder.events).containsExactly("acquired 1", "released 1");
    }

    @Test
    void anAdaptiveLimitOnTheHandleHearsItsEvents() throws Exception {
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("deferred-c", 8, RedisSemaphore.DEFAULT_LEASE);
        AtomicReference<AdaptiveLimit> adaptive = new AtomicReference<>();
        handle.whenOpen(opened -> adaptive.set(AdaptiveLimit.aimd().minLimit(1).initialLimit(8).build(handle)));
        assertThat(adaptive.get()).isNull();
        handle.open(connection.semaphore("deferred-c").permits(8).build());
        assertThat(adaptive.get()).isNotNull();
        // A timeout is a drop: the AIMD limit backs off, which it does only for events about its own semaphore.
        try (Permit all = handle.acquire(8)) {
            assertThatThrownBy(() -> handle.acquire(1, Duration.ofMillis(20)))
                    .isInstanceOf(java.util.concurrent.TimeoutException.class);
        }
        // On a Redis semaphore the change is made on a virtual thread of its own, a round trip later.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (handle.permits() == 8 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(handle.permits()).isLessThan(8);
        adaptive.get().close();
    }

    @Test
    void noEventIsLostToACallThatReachesTheDelegateWhileItIsBeingOpened() throws Exception {
        // A delegate slow to take a listener: a call through the handle meanwhile must either be refused (not open
        // yet) or reach a delegate that already forwards its events, never an unheard one.
        List<SemaphoreListener> onDelegate = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch registering = new java.util.concurrent.CountDownLatch(1);
        RedisSemaphore slow = (RedisSemaphore) java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] { RedisSemaphore.class }, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "addListener" -> {
                            registering.countDown();
                            Thread.sleep(200);
                            onDelegate.add((SemaphoreListener) args[0]);
                            return null;
                        }
                        case "tryAcquire" -> {
                            onDelegate.forEach(l -> l.acquired((Semaphore) proxy, (Long) args[0], 0));
                            return Optional.empty();
                        }
                        case "name" -> {
                            return "slow";
                        }
                        default -> throw new UnsupportedOperationException(method.getName());
                    }
                });
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("slow", 5, RedisSemaphore.DEFAULT_LEASE);
        Recorder recorder = new Recorder(handle);
        handle.addListener(recorder);
        Thread opener = Thread.ofVirtual().start(() -> handle.open(slow));
        registering.await();
        try {
            handle.tryAcquire(1);
        } catch (RedisSemaphoreException notOpenYet) {
            // refused: its rejected event is recorded below
        }
        opener.join(5_000);
        assertThat(recorder.events).hasSize(1).first().isIn("rejected 1 UNAVAILABLE", "acquired 1");
    }

    @Test
    void aPartitionedHandleHandsOutItsViewsBeforeItOpensAndTheyBecomeTheRedisViews() throws Exception {
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("deferred-p", 10, RedisSemaphore.DEFAULT_LEASE,
                List.of("gold", "batch"));
        Recorder recorder = new Recorder(handle);
        handle.addListener(recorder);
        Semaphore gold = handle.partition("gold");
        Semaphore batch = handle.partition("batch");
        Recorder goldEvents = new Recorder(gold);
        handle.addListener(goldEvents);

        // Before the open: the configured partitions, each a stand-in that refuses as the handle does (D4).
        assertThat(handle.partitionNames()).containsExactly("gold", "batch");
        assertThat(gold.name()).isEqualTo("deferred-p/gold");
        assertThat(gold.partitionNames()).isEmpty();
        assertThat(handle.partition("gold")).isSameAs(gold);
        assertThatThrownBy(() -> handle.partition("silver")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'silver'").hasMessageContaining("[gold, batch]");
        assertThatThrownBy(() -> gold.addListener(new Recorder(gold)))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("'deferred-p'");
        assertThatThrownBy(() -> gold.tryAcquire(2)).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("deferred-p/gold");
        assertThatThrownBy(handle::partitionStates).isInstanceOf(RedisSemaphoreException.class);
        assertThat(goldEvents.events).containsExactly("rejected 2 UNAVAILABLE");
        assertThat(recorder.events).containsExactly("OTHER rejected 2 UNAVAILABLE");

        RedisSemaphore real = connection.semaphore("deferred-p").permits(10).partition("gold", 0.5)
                .partition("batch", 0.2).build();
        handle.open(real);
        assertThat(handle.partition("gold")).isSameAs(gold);
        try (Permit g = gold.acquire(6); Permit b = batch.tryAcquire(2).orElseThrow()) {
            assertThat(real.partition("gold").availablePermits()).isEqualTo(2); // 8 held, nothing owed any more
            assertThat(handle.partitionStates()).extracting(p -> p.name() + "=" + p.used())
                    .containsExactly("gold=6", "batch=2");
            assertThat(batch.tryAcquire(3)).isEmpty(); // 2 free
        }
        // The delegate's events through a view reach the handle's listeners with the stand-in as the semaphore.
        assertThat(goldEvents.events).containsExactly("rejected 2 UNAVAILABLE", "acquired 6", "OTHER acquired 2",
                "OTHER rejected 3 UNAVAILABLE", "OTHER released 2", "released 6");
        assertThat(recorder.events).containsExactly("OTHER rejected 2 UNAVAILABLE", "OTHER acquired 6",
                "OTHER acquired 2", "OTHER rejected 3 UNAVAILABLE", "OTHER released 2", "OTHER released 6");
    }

    @Test
    void aConfiguredPartitionThatRedisLacksRefusesSayingWhichItHas() throws Exception {
        RedisSemaphore stored = connection.semaphore("deferred-q").permits(4).partition("gold", 0.5).build();
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("deferred-q", 4, RedisSemaphore.DEFAULT_LEASE,
                List.of("gold", "batch"));
        Semaphore batch = handle.partition("batch");
        handle.open(connection.semaphore("deferred-q").permits(4).partition("gold", 0.5).partition("batch", 0.1)
                .build());
        assertThat(handle.partitionNames()).containsExactly("gold"); // the stored ones win
        assertThatThrownBy(() -> batch.tryAcquire(1)).isInstanceOf(RedisSemaphoreException.class)
                .hasMessageContaining("no partition 'batch'").hasMessageContaining("[gold]");
        try (Permit p = handle.partition("gold").acquire(2)) {
            assertThat(stored.availablePermits()).isEqualTo(2);
        }
    }

    @Test
    void openActionsRunOnceInOrderAndAtOnceAfterTheOpen() {
        DeferredRedisSemaphore handle = new DeferredRedisSemaphore("deferred-d", 1, RedisSemaphore.DEFAULT_LEASE);
        List<String> ran = new ArrayList<>();
        handle.whenOpen(s -> ran.add("first"));
        handle.whenOpen(s -> {
            throw new IllegalStateException("logged, and the next action runs all the same");
        });
        handle.whenOpen(s -> ran.add("second"));
        RedisSemaphore real = connection.semaphore("deferred-d").permits(1).build();
        handle.open(real);
        assertThat(ran).containsExactly("first", "second");
        handle.whenOpen(s -> ran.add("after " + (s == real)));
        assertThat(ran).containsExactly("first", "second", "after true");
        assertThatThrownBy(() -> handle.open(real)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void theConnectorOpensWhatIsPendingOnceRedisIsReachedAndNeverTwice() throws Exception {
        try (RedisServer late = RedisServer.start(RedisServer.Source.INSTALLED_OR_BUNDLED.find().orElseThrow())) {
            late.stop();
            AtomicInteger connects = new AtomicInteger();
            AtomicInteger builds = new AtomicInteger();
            RedisConnector connector = new RedisConnector(null, late.uri(), uri -> {
                connects.incrementAndGet();
                return RedisSemaphores.connect(uri);
            }, false);
            try (connector) {
                List<DeferredRedisSemaphore> handles = new ArrayList<>();
                for (String name : List.of("late-a", "late-b", "late-c", "late-d")) {
                    DeferredRedisSemaphore h = new DeferredRedisSemaphore(name, 2, RedisSemaphore.DEFAULT_LEASE);
                    handles.add(h);
                    connector.open(new RedisConnector.Opening<>(h, c -> {
                        builds.incrementAndGet();
                        return c.semaphore(name).permits(2).build();
                    }));
                }
                // One connect at startup, not one per semaphore: each may take the connect timeout.
                assertThat(connects.get()).isLessThanOrEqualTo(2);
                assertThat(connector.pending()).containsExactly("late-a", "late-b", "late-c", "late-d");
                assertThatThrownBy(() -> handles.get(3).tryAcquire(1)).hasMessageContaining("cannot connect to Redis");
                assertThat(handles).noneMatch(DeferredRedisSemaphore::isOpen);
                assertThatThrownBy(() -> handles.get(0).tryAcquire(1)).hasMessageContaining("cannot connect to Redis");

                late.restart();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!connector.pending().isEmpty() && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertThat(connector.pending()).isEmpty();
                assertThat(handles).allMatch(DeferredRedisSemaphore::isOpen);
                assertThat(builds.get()).isEqualTo(4); // a build is tried only once connected, and each succeeds once
                try (Permit p = handles.get(1).tryAcquire(2).orElseThrow()) {
                    assertThat(p.permits()).isEqualTo(2);
                }
            }
            assertThat(connects.get()).isGreaterThan(1);
        }
    }

    @Test
    void withFailFastTheConnectorThrowsAndKeepsNothingPending() throws Exception {
        RedisConnector connector = new RedisConnector(null, "redis://127.0.0.1:1?timeout=1s",
                RedisSemaphores::connect, true);
        try (connector) {
            DeferredRedisSemaphore h = new DeferredRedisSemaphore("never", 1, RedisSemaphore.DEFAULT_LEASE);
            assertThatThrownBy(() -> connector.open(new RedisConnector.Opening<>(h, c -> c.semaphore("never").build())))
                    .isInstanceOf(RedisConnector.Unreachable.class);
            assertThat(connector.pending()).isEmpty();
            assertThatThrownBy(connector::checkAtStartup).isInstanceOf(RedisConnector.Unreachable.class);
        }
    }
}
