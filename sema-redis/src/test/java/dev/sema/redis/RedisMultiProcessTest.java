package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Real processes: separate JVMs share a semaphore, and one is killed with SIGKILL while holding. */
class RedisMultiProcessTest extends RedisTestSupport {
    private final List<Process> children = new ArrayList<>();

    @AfterEach
    void killChildren() throws InterruptedException {
        for (Process p : children) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private Process spawn(String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("-XX:TieredStopAtLevel=1");
        command.add(ChildProcess.class.getName());
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        children.add(p);
        return p;
    }

    /** Reads lines until one starts with {@code prefix}; returns the rest of it. */
    private static String awaitLine(Process p, String prefix) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                for (String l; (l = in.readLine()) != null; ) {
                    if (l.startsWith(prefix)) {
                        return l.substring(prefix.length()).trim();
                    }
                }
                throw new AssertionError("child exited (" + p.waitFor() + ") without printing " + prefix);
            } catch (IOException | InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        return line.get(45, TimeUnit.SECONDS);
    }

    @Test
    void permitsOfAKilledHolderProcessComeBackAfterItsLease() throws Exception {
        // A lease long enough that the child's renewals keep up even while JVMs start on a busy machine.
        Process holder = spawn("hold", uri(server), name, "2", "2", "3000");
        long staleToken = Long.parseLong(awaitLine(holder, "HELD"));
        RedisSemaphore s = a.semaphore(name).permits(2).lease(Duration.ofSeconds(1)).build();
        assertThat(s.availablePermits()).isZero();
        CompletableFuture<Permit> waiter = s.acquireAsync(2);
        awaitQueueLength(s, 1);
        holder.destroyForcibly(); // SIGKILL: no release, no goodbye
        assertThat(holder.waitFor(20, TimeUnit.SECONDS)).isTrue();
        RedisPermit p = (RedisPermit) waiter.get(20, TimeUnit.SECONDS);
        assertThat(p.permits()).isEqualTo(2);
        assertThat(p.fencingToken()).isGreaterThan(staleToken);
        p.close();
        assertThat(s.availablePermits()).isEqualTo(2);
        checkInvariants();
    }

    @Test
    void processesShareAKeysLimitAndTheIdleKeyLeavesRedis() throws Exception {
        long limit = 2;
        String key = "tenant";
        List<Process> workers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            workers.add(spawn("keyed", uri(server), name, key, Long.toString(limit), "40", Long.toString(31 + i)));
        }
        for (Process w : workers) {
            assertThat(awaitLine(w, "DONE")).isEqualTo("0");
        }
        String semaphore = name + ":" + key;
        // Both processes are done with the key: it expires from Redis after the shortest idle expiry (1 s).
        await("every key of " + semaphore + " gone from Redis",
                () -> redis.keys("sem:{" + semaphore + "}:*").isEmpty());
    }

    @Test
    void processesTogetherNeverExceedTheLimit() throws Exception {
        long limit = 2;
        List<Process> workers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            workers.add(spawn("work", uri(server), name, Long.toString(limit), "40", Long.toString(17 + i)));
        }
        for (Process w : workers) {
            assertThat(awaitLine(w, "DONE")).isEqualTo("0");
        }
        RedisSemaphore s = a.semaphore(name).permits(limit).build();
        assertThat(s.availablePermits()).isEqualTo(limit);
        assertThat(s.queueLength()).isZero();
        checkInvariants();
    }
}
