package dev.sema.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.testing.RedisServer.Binary;
import dev.sema.testing.RedisServer.Source;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher against a real {@code redis-server} (the installed one, else the bundled Redis 6.2; skipped
 * without either): start, restart from the append-only file on the same port, pause, kill, the server kinds.
 */
@Tag("redis")
@Timeout(60)
class RedisServerTest {
    private static Binary binary;

    @BeforeAll
    static void findBinary() throws IOException {
        binary = Source.INSTALLED_OR_BUNDLED.find().orElse(null);
    }

    @BeforeEach
    void needBinary() {
        assumeTrue(binary != null, Source.INSTALLED_OR_BUNDLED.missing() + ": launcher test skipped");
    }

    @Test
    void startsOnAFreeLoopbackPortAndStopsWithoutATrace() throws Exception {
        RedisServer s = RedisServer.start(binary);
        long pid;
        Path dir = s.directory();
        try (s) {
            assertThat(s.call(1_000, "PING")).isEqualTo("+PONG");
            assertThat(s.uri()).isEqualTo("redis://127.0.0.1:" + s.port());
            pid = s.pid();
            assertThat(ProcessHandle.of(pid)).get().matches(ProcessHandle::isAlive);
            String info = s.call(1_000, "INFO", "persistence");
            assertThat(info).contains("aof_enabled:0");
            assertThat(s.call(1_000, "INFO", "server")).contains("redis_version:" + binary.version());
        }
        assertThat(s.isRunning()).isFalse();
        assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).as("the process is gone").isNotEqualTo(
                Optional.of(true));
        assertThat(dir).doesNotExist();
        s.close(); // idempotent
    }

    @Test
    void restartFromTheAppendOnlyFileKeepsEveryWriteOnTheSamePort() throws Exception {
        try (RedisServer s = RedisServer.builder(binary).appendOnly().start()) {
            int port = s.port();
            assertThat(s.call(1_000, "SET", "k", "v")).isEqualTo("+OK");
            s.kill();
            assertThat(s.isRunning()).isFalse();
            assertThatThrownBy(() -> s.call(1_000, "PING")).isInstanceOf(ConnectException.class);
            s.restart();
            assertThat(s.port()).isEqualTo(port);
            assertThat(s.call(1_000, "GET", "k")).as("back from the file after SIGKILL").isEqualTo("v");
            assertThat(s.call(1_000, "SET", "k", "w")).isEqualTo("+OK");
            s.stop();
            s.restart();
            assertThat(s.call(1_000, "GET", "k")).as("back from the file after SHUTDOWN").isEqualTo("w");
        }
    }

    @Test
    void aRestartReturnsOnlyOnceTheAppendOnlyFileIsLoaded() throws Exception {
        try (RedisServer s = RedisServer.builder(binary).appendOnly().start()) {
            s.call(10_000, "EVAL", "for i = 1, 200000 do redis.call('SET', 'k' .. i, i) end", "0");
            s.kill();
            s.restart(); // loading 200,000 writes takes a while: INFO is served meanwhile, but no GET
            assertThat(s.call(1_000, "DBSIZE")).isEqualTo(":200000");
            assertThat(s.call(1_000, "GET", "k200000")).isEqualTo("200000");
        }
    }

    @Test
    void restartsFromTheAppendOnlyFileWhileAClientKeepsReconnecting() throws Exception {
        try (RedisServer s = RedisServer.builder(binary).appendOnly().start()) {
            int port = s.port();
            AtomicBoolean done = new AtomicBoolean();
            AtomicLong acknowledged = new AtomicLong(); // the highest INCR reply seen
            AtomicLong refused = new AtomicLong();
            Thread client = Thread.ofPlatform().name("reconnecting-client").start(() -> {
                while (!done.get()) {
                    try {
                        String reply = s.call(500, "INCR", "counter");
                        acknowledged.accumulateAndGet(Long.parseLong(reply.substring(1)), Math::max);
                    } catch (IOException | RuntimeException down) {
                        refused.incrementAndGet();
                        sleep(2);
                    }
                }
            });
            try {
                for (int round = 0; round < 5; round++) {
                    long before = acknowledged.get();
                    await("the client writes again", () -> acknowledged.get() >= before + 20);
                    s.restart();
                    assertThat(s.port()).isEqualTo(port);
                }
                long last = acknowledged.get();
                await("the client writes after the last restart", () -> acknowledged.get() >= last + 20);
            } finally {
                done.set(true);
                client.join(10_000);
            }
            long kept = Long.parseLong(s.call(1_000, "GET", "counter"));
            assertThat(kept).as("every acknowledged INCR survived 5 restarts from SIGKILL")
                    .isGreaterThanOrEqualTo(acknowledged.get());
            System.out.printf("5 restarts on port %d: counter %d, %d acknowledged, %d calls refused while down%n",
                    port, kept, acknowledged.get(), refused.get());
        }
    }

    @Test
    void restartWithoutPersistenceStartsEmpty() throws Exception {
        try (RedisServer s = RedisServer.start(binary)) {
            s.call(1_000, "SET", "k", "v");
            s.restart();
            assertThat(s.call(1_000, "GET", "k")).isNull();
            assertThat(s.call(1_000, "INFO", "persistence")).contains("aof_enabled:0");
        }
    }

    @Test
    void aPausedServerAnswersNothingUntilResumed() throws Exception {
        try (RedisServer s = RedisServer.start(binary)) {
            s.pause();
            assertThatThrownBy(() -> s.call(300, "PING")).isInstanceOf(SocketTimeoutException.class);
            s.resume();
            assertThat(s.call(1_000, "PING")).isEqualTo("+PONG");
            s.resume(); // harmless when not paused
            s.pause();
            long pid = s.pid();
            s.stop(); // a paused server is killed
            assertThat(s.isRunning()).isFalse();
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true));
            s.resume(); // nothing to resume
        }
    }

    @Test
    void killEndsTheProcessAtOnce() throws Exception {
        try (RedisServer s = RedisServer.start(binary)) {
            long pid = s.pid();
            s.kill();
            assertThat(s.isRunning()).isFalse();
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true));
            assertThatThrownBy(s::pid).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(s::pause).isInstanceOf(IOException.class).hasMessageContaining("not running");
            s.kill(); // nothing to kill
            s.restart();
            assertThat(s.pid()).isNotEqualTo(pid);
            assertThat(s.call(1_000, "PING")).isEqualTo("+PONG");
        }
    }

    @Test
    void aServerThatCannotStartSaysWhyFromItsLog() {
        assertThatThrownBy(() -> RedisServer.builder(binary).args("--no-such-directive", "x").start())
                .isInstanceOf(IOException.class).hasMessageContaining("exited with status")
                .hasMessageContaining("no-such-directive");
    }

    @Test
    void aGivenDirectoryHoldsTheFilesAndIsKept(@TempDir Path dir) throws Exception {
        Path mine = dir.resolve("redis");
        try (RedisServer s = RedisServer.builder(binary).directory(mine).appendOnly().start()) {
            assertThat(s.directory()).isEqualTo(mine);
            s.call(1_000, "SET", "k", "v");
            assertThat(s.log()).exists().hasParent(mine);
        }
        try (var files = Files.list(mine)) {
            assertThat(files.map(f -> f.getFileName().toString()).toList())
                    .anyMatch(f -> f.startsWith("appendonly")); // appendonly.aof (6.2), appendonlydir (7)
        }
    }

    @Test
    void replicaClusterNodeAndSentinel() throws Exception {
        // No 5-second wait before the replica's first sync (Redis 7 syncs without disk, after a delay).
        try (RedisServer primary = RedisServer.builder(binary).args("--repl-diskless-sync-delay", "0").start();
                RedisServer replica = RedisServer.builder(binary).replicaOf(primary.port()).start();
                RedisServer node = RedisServer.builder(binary).cluster().start();
                RedisServer sentinel = RedisServer.builder(binary).sentinel(List.of(
                        "sentinel monitor watched 127.0.0.1 " + primary.port() + " 1",
                        "sentinel down-after-milliseconds watched 1000")).start()) {
            primary.call(1_000, "SET", "k", "v");
            await("the replica has the key", () -> "v".equals(quietly(replica, "GET", "k")));
            assertThat(node.call(1_000, "INFO", "cluster")).contains("cluster_enabled:1");
            assertThat(sentinel.call(1_000, "INFO", "server")).contains("redis_mode:sentinel");
            assertThat(sentinel.toString()).contains("(Sentinel)");
            await("the sentinel sees the primary",
                    () -> String.valueOf(quietly(sentinel, "INFO", "sentinel")).contains("status=ok"));
            sentinel.restart();
            assertThat(sentinel.call(1_000, "INFO", "sentinel")).as("the rewritten configuration is kept")
                    .contains("name=watched");
        }
    }

    @Test
    void bundledBinaryIsRedis62() throws Exception {
        Optional<Binary> bundled = Source.BUNDLED.find();
        assumeTrue(bundled.isPresent(), Source.BUNDLED.missing());
        assertThat(bundled.get().bundled()).isTrue();
        assertThat(bundled.get().version()).startsWith("6.2.");
        assertThat(bundled.get().toString()).contains("bundled in embedded-redis");
        try (RedisServer s = RedisServer.start(bundled.get())) {
            assertThat(s.call(1_000, "INFO", "server")).contains("redis_version:6.2.");
        }
    }

    private static String quietly(RedisServer s, String... command) {
        try {
            return s.call(1_000, command);
        } catch (IOException notYet) {
            return null;
        }
    }

    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("timed out waiting until " + what).isNegative();
            sleep(10);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
