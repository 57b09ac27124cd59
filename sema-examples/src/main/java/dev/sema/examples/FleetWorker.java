package dev.sema.examples;

import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * One process of the demo's fleet ({@link FleetPart} starts several): it shares one
 * {@link RedisSemaphore} with the others through Redis. It talks to its parent with lines: it prints
 * {@code READY}, {@code HELD <token>}, {@code DONE <tasks>} or {@code FAILED <why>} on standard output,
 * reads {@code GO} on standard input, and exits as soon as standard input ends (the parent is gone), so
 * it never outlives the demo.
 * <ul>
 *   <li>{@code work URI NAME LIMIT LEASE_MS TASKS SEED MIN_MS MAX_MS}: prints {@code READY}, waits for
 *       {@code GO}, then runs TASKS tasks at once, each on its own virtual thread, each holding one
 *       permit while it works MIN_MS to MAX_MS. While it holds its permit a task counts itself in Redis
 *       (see {@link Keys}), so the fleet-wide number in flight is known, and checks its fencing token.
 *   <li>{@code hold URI NAME LIMIT LEASE_MS PERMITS}: acquires PERMITS, prints {@code HELD <token>} and
 *       holds them until it is killed.
 * </ul>
 */
public final class FleetWorker {

    /**
     * Where the fleet keeps its evidence, beside the semaphore's own keys (same hash tag):
     * {@code inflight} (tasks holding a permit now), {@code peak} (the most ever), {@code recent} (the
     * most since the parent last reset it), {@code tokens} (every fencing token seen), {@code stale}
     * (tokens not above {@code released}), {@code released} (the largest token of a task that has
     * finished), {@code done} (tasks finished).
     */
    record Keys(String inflight, String peak, String recent, String tokens, String stale, String released,
            String done) {
        static Keys of(String semaphore) {
            String p = "demo:{" + semaphore + "}:";
            return new Keys(p + "inflight", p + "peak", p + "recent", p + "tokens", p + "stale", p + "released",
                    p + "done");
        }

        /** Every key, to delete them from a Redis the demo did not start. */
        List<String> all() {
            return List.of(inflight, peak, recent, tokens, stale, released, done);
        }
    }

    /**
     * Run by a task right after its permit was granted: counts it in flight, raises the peaks, records its
     * token, and counts the token as stale unless it is above every token released before the task asked
     * for its permit (ARGV[2], read before the acquire).
     */
    static final String ENTER = """
            local n = redis.call('INCR', KEYS[1])
            if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
            if n > tonumber(redis.call('GET', KEYS[3]) or '0') then redis.call('SET', KEYS[3], n) end
            redis.call('SADD', KEYS[4], ARGV[1])
            if tonumber(ARGV[1]) <= tonumber(ARGV[2]) then redis.call('INCR', KEYS[5]) end
            return n
            """;

    /** Run by a task before it releases its permit: no longer in flight, its token released, one more done. */
    static final String LEAVE = """
            redis.call('DECR', KEYS[1])
            if tonumber(ARGV[1]) > tonumber(redis.call('GET', KEYS[2]) or '0') then
              redis.call('SET', KEYS[2], ARGV[1])
            end
            return redis.call('INCR', KEYS[3])
            """;

    private static final Duration GO_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    private FleetWorker() {
    }

    public static void main(String[] args) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        Thread.ofPlatform().daemon().name("parent-watch").start(() -> watchParent(go));
        int status = 0;
        try {
            switch (args[0]) {
                case "work" -> work(args[1], args[2], Long.parseLong(args[3]),
                        Duration.ofMillis(Long.parseLong(args[4])), Integer.parseInt(args[5]), Long.parseLong(args[6]),
                        Integer.parseInt(args[7]), Integer.parseInt(args[8]), go);
                case "hold" -> hold(args[1], args[2], Long.parseLong(args[3]),
                        Duration.ofMillis(Long.parseLong(args[4])), Long.parseLong(args[5]));
                default -> throw new IllegalArgumentException("unknown role " + args[0]);
            }
        } catch (Exception | Error e) {
            say("FAILED " + e);
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    /** Reads the parent's lines: {@code GO} starts the work; the end of input means the parent is gone. */
    private static void watchParent(CountDownLatch go) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                if (line.equals("GO")) {
                    go.countDown();
                }
            }
        } catch (IOException e) {
            // treated like the end of input
        }
        Runtime.getRuntime().halt(3); // the parent is gone: so is this process (a holder releases nothing)
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void work(String uri, String name, long limit, Duration lease, int tasks, long seed, int minMillis,
            int maxMillis, CountDownLatch go) throws Exception {
        Keys keys = Keys.of(name);
        RedisClient client = RedisClient.create(uri);
        try (RedisSemaphores redis = RedisSemaphores.connect(uri);
                StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisSemaphore semaphore = redis.semaphore(name).permits(limit).lease(lease).build();
            RedisCommands<String, String> commands = connection.sync();
            say("READY");
            if (!go.await(GO_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("no GO from the parent within " + GO_TIMEOUT);
            }
            Random random = new Random(seed);
            long deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
            ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
            try {
                List<Future<?>> running = new ArrayList<>();
                for (int i = 0; i < tasks; i++) {
                    int millis = minMillis + random.nextInt(maxMillis - minMillis + 1);
                    int task = i;
                    running.add(threads.submit(() -> {
                        task(semaphore, commands, keys, task, millis);
                        return null;
                    }));
                }
                for (Future<?> f : running) {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
            } finally {
                threads.shutdownNow(); // after a failure: interrupts the tasks still waiting, so close() returns
                threads.close();
            }
            say("DONE " + tasks);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** One task: one permit of the shared semaphore while it works, counted in Redis while held. */
    private static void task(RedisSemaphore semaphore, RedisCommands<String, String> commands, Keys keys, int task,
            int millis) throws InterruptedException {
        String releasedBefore = commands.get(keys.released()); // every token of a task released before we ask
        try (RedisPermit permit = semaphore.acquire()) {
            String token = Long.toString(permit.fencingToken());
            commands.eval(ENTER, ScriptOutputType.INTEGER,
                    new String[] {keys.inflight(), keys.peak(), keys.recent(), keys.tokens(), keys.stale()},
                    token, releasedBefore == null ? "0" : releasedBefore);
            try {
                work(task, millis);
            } finally {
                commands.eval(LEAVE, ScriptOutputType.INTEGER,
                        new String[] {keys.inflight(), keys.released(), keys.done()}, token);
            }
        }
    }

    /** Real work, a little of it: digest some bytes, then wait as if for a slow dependency. */
    private static void work(int task, int millis) throws InterruptedException {
        try {
            byte[] data = ("task " + task).repeat(1_000).getBytes(StandardCharsets.UTF_8);
            MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
        Thread.sleep(millis);
    }

    private static void hold(String uri, String name, long limit, Duration lease, long permits) throws Exception {
        RedisSemaphores redis = RedisSemaphores.connect(uri); // never closed: this process is killed holding
        RedisSemaphore semaphore = redis.semaphore(name).permits(limit).lease(lease).build();
        RedisPermit permit = semaphore.acquire(permits);
        say("HELD " + permit.fencingToken());
        new CountDownLatch(1).await(RUN_TIMEOUT.toSeconds(), TimeUnit.SECONDS); // until killed
        throw new IllegalStateException("not killed within " + RUN_TIMEOUT + "; still holding " + permit);
    }
}
