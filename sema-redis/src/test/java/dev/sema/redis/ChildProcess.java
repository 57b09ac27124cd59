package dev.sema.redis;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.time.Duration;
import java.util.Random;

/**
 * A separate JVM taking part in a semaphore, started by {@link RedisMultiProcessTest}.
 * <ul>
 *   <li>{@code hold URI NAME PERMITS LIMIT LEASE_MS}: acquires, prints {@code HELD <token>}, then holds until
 *       killed (or stdin closes).
 *   <li>{@code work URI NAME LIMIT ROUNDS SEED}: acquires 1 or 2 permits ROUNDS times; while holding, counts
 *       itself in the key {@code NAME:inuse} and notes a violation if the count exceeds LIMIT; prints
 *       {@code DONE <violations>}.
 *   <li>{@code keyed URI FAMILY KEY LIMIT ROUNDS SEED}: as {@code work}, through key KEY of the keyed family
 *       FAMILY (idle keys expire after a second), counting in {@code FAMILY:KEY:inuse}.
 * </ul>
 */
public final class ChildProcess {
    private ChildProcess() {
    }

    public static void main(String[] args) throws Exception {
        String uri = args[1];
        String name = args[2];
        try (RedisSemaphores redis = RedisSemaphores.connect(uri)) {
            switch (args[0]) {
                case "hold" -> hold(redis, name, Long.parseLong(args[3]), Long.parseLong(args[4]),
                        Long.parseLong(args[5]));
                case "work" -> work(redis, uri, name, Long.parseLong(args[3]), Integer.parseInt(args[4]),
                        Long.parseLong(args[5]));
                case "keyed" -> keyed(redis, uri, name, args[3], Long.parseLong(args[4]), Integer.parseInt(args[5]),
                        Long.parseLong(args[6]));
                default -> throw new IllegalArgumentException(args[0]);
            }
        }
        System.exit(0);
    }

    private static void hold(RedisSemaphores redis, String name, long permits, long limit, long leaseMs)
            throws InterruptedException, IOException {
        RedisSemaphore s = redis.semaphore(name).permits(limit).lease(Duration.ofMillis(leaseMs)).build();
        RedisPermit p = s.acquire(permits);
        System.out.println("HELD " + p.fencingToken());
        System.out.flush();
        while (System.in.read() >= 0) {
            // hold until killed
        }
    }

    private static void keyed(RedisSemaphores redis, String uri, String family, String key, long limit, int rounds,
            long seed) throws InterruptedException {
        KeyedSemaphore<String> f = redis.keyed(family).permits(limit).lease(Duration.ofSeconds(5))
                .expireWhenIdle(RedisSemaphore.MIN_IDLE_EXPIRY).build();
        work(f.get(key), uri, family + ":" + key, limit, rounds, seed);
    }

    private static void work(RedisSemaphores redis, String uri, String name, long limit, int rounds, long seed)
            throws InterruptedException {
        work(redis.semaphore(name).permits(limit).lease(Duration.ofSeconds(5)).build(), uri, name, limit, rounds, seed);
    }

    private static void work(Semaphore s, String uri, String name, long limit, int rounds, long seed)
            throws InterruptedException {
        RedisClient client = RedisClient.create(uri);
        int violations = 0;
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> r = c.sync();
            Random random = new Random(seed);
            for (int i = 0; i < rounds; i++) {
                long w = 1 + random.nextInt(2);
                try (Permit p = s.acquire(w)) {
                    if (r.incrby(name + ":inuse", w) > limit) {
                        violations++;
                    }
                    r.decrby(name + ":inuse", w);
                }
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
        System.out.println("DONE " + violations);
        System.out.flush();
    }
}
