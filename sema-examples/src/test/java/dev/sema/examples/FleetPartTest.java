package dev.sema.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Permit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.RedisServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The demo's distributed part against a real Redis (the installed redis-server, or the bundled one):
 * separate JVMs share one semaphore, one of them is killed while holding, and every check must pass.
 * The tests that need Redis are tagged {@code redis}.
 */
class FleetPartTest {

    @Test
    @Tag("redis")
    @Timeout(180)
    void scaledDownFleetKeepsEveryPromise() throws Exception {
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        Terminal terminal = new Terminal(new PrintStream(output, true, StandardCharsets.UTF_8), false);
        FleetPart.Settings small = new FleetPart.Settings(2, 150, 4, Duration.ofSeconds(15), Duration.ofSeconds(2), 2,
                10, 30);

        List<Check> checks = new FleetPart(small, terminal).run();

        String printed = output.toString(StandardCharsets.UTF_8);
        assertThat(checks).as(printed).hasSize(5)
                .allSatisfy(check -> assertThat(check.passed()).as(check + "\n" + printed).isTrue());
        assertThat(printed).contains("Redis: redis-server", "SIGKILL the holder JVM",
                "every worker is done: 300 tasks");
    }

    @Test
    @Tag("redis")
    @Timeout(60)
    void bundledRedisServerRunsASemaphore() throws Exception {
        Optional<RedisServer.Binary> bundled = RedisServer.Source.BUNDLED.find();
        assumeTrue(bundled.isPresent(), RedisServer.Source.BUNDLED.missing());
        assertThat(bundled.get().version()).matches("\\d+\\.\\d+\\.\\d+");

        RedisServer redis = RedisServer.start(bundled.get());
        Path dir = redis.directory();
        try (redis; RedisSemaphores semaphores = RedisSemaphores.connect(redis.uri())) {
            assertThat(redis.isRunning()).isTrue();
            RedisSemaphore s = semaphores.semaphore("bundled-test").permits(2).build();
            try (Permit p = s.acquire(2)) {
                assertThat(p.permits()).isEqualTo(2);
                assertThat(s.availablePermits()).isZero();
            }
            assertThat(s.availablePermits()).isEqualTo(2);
        }
        assertThat(redis.isRunning()).isFalse();
        assertThat(dir).doesNotExist();
    }

    @Test
    void fleetChecksFailOnBrokenNumbers() {
        FleetPart.Settings s = new FleetPart.Settings(2, 10, 4, Duration.ofSeconds(15), Duration.ofSeconds(2), 2, 1, 2);
        assertThat(failed(fleet(s, 4, 20, 0, 20, 0, List.of(0, 0), true, 4, 0))).isEmpty();
        assertThat(failed(fleet(s, 5, 20, 0, 20, 0, List.of(0, 0), true, 4, 0)))
                .containsExactly("the fleet never had more than 4 tasks in flight at once (counted in Redis)");
        assertThat(failed(fleet(s, 4, 19, 0, 19, 0, List.of(0, 0), true, 4, 0)))
                .containsExactly("every task of every worker ran, and every worker exited cleanly");
        assertThat(failed(fleet(s, 4, 20, 1, 20, 0, List.of(0, 0), true, 4, 0)))
                .containsExactly("every task of every worker ran, and every worker exited cleanly");
        assertThat(failed(fleet(s, 4, 20, 0, 20, 0, List.of(0, 1), true, 4, 0)))
                .containsExactly("every task of every worker ran, and every worker exited cleanly");
        assertThat(failed(fleet(s, 4, 20, 0, 20, 1, List.of(0, 0), true, 4, 0))).containsExactly("fencing tokens"
                + " increased: each grant's token exceeded every token released before it asked; all distinct");
        assertThat(failed(fleet(s, 4, 20, 0, 19, 0, List.of(0, 0), true, 4, 0))).hasSize(1);
        assertThat(failed(fleet(s, 4, 20, 0, 20, 0, List.of(0, 0), false, 4, 0)))
                .containsExactly("the killed process's 2 permits came back when its lease ended");
        assertThat(failed(fleet(s, 4, 20, 0, 20, 0, List.of(0, 0), true, 2, 0)))
                .containsExactly("every permit came back and nobody is queued");
        assertThat(failed(fleet(s, 4, 20, 0, 20, 0, List.of(0, 0), true, 4, 1)))
                .containsExactly("every permit came back and nobody is queued");
    }

    private static List<Check> fleet(FleetPart.Settings s, long peak, long done, long inflight, long distinct,
            long stale, List<Integer> exits, boolean leaseEnded, long available, long queued) {
        return new FleetPart.Measured(s, peak, done, inflight, distinct, stale, exits, "evidence", leaseEnded,
                s.limit(), available, queued).checks();
    }

    private static List<String> failed(List<Check> checks) {
        return checks.stream().filter(c -> !c.passed()).map(Check::promise).toList();
    }
}
