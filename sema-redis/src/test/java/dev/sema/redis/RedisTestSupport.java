package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.testing.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInfo;

/**
 * One redis-server per test class (the installed one, else the bundled Redis 6.2; always the bundled Redis 6.2
 * for classes that implement {@link OnRedis62}; see {@link RedisServer}); two {@link RedisSemaphores} per test
 * ({@link #a} and {@link #b}, two connections standing for two processes); a plain connection ({@link #redis})
 * to inspect the keys. Without a binary the tests are skipped, not failed.
 */
@Tag("redis")
abstract class RedisTestSupport {
    static RedisServer server;
    static String missing;
    private static RedisClient inspector;
    static RedisCommands<String, String> redis;
    private static final AtomicInteger NAMES = new AtomicInteger();

    RedisSemaphores a;
    RedisSemaphores b;
    String name;

    /**
     * Where {@code testClass} finds its redis-server: the bundled Redis 6.2 for an {@link OnRedis62} class, else
     * the installed one or, without one (or with {@code SEMA_REDIS_SERVER=bundled}), the bundled one.
     */
    static RedisServer.Source sourceFor(Class<?> testClass) {
        return OnRedis62.class.isAssignableFrom(testClass) ? RedisServer.Source.BUNDLED
                : RedisServer.Source.INSTALLED_OR_BUNDLED;
    }

    /** {@code s}'s URI with the tests' command timeout. */
    static String uri(RedisServer s) {
        return s.uri() + "?timeout=5s";
    }

    @BeforeAll
    static void startServer(TestInfo info) throws Exception {
        RedisServer.Source source = sourceFor(info.getTestClass().orElseThrow());
        Optional<RedisServer.Binary> binary = source.find();
        if (binary.isEmpty()) {
            missing = "Redis test skipped: " + source.missing();
            return;
        }
        server = RedisServer.start(binary.get());
        inspector = RedisClient.create(uri(server));
        StatefulRedisConnection<String, String> c = inspector.connect();
        redis = c.sync();
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (inspector != null) {
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            inspector = null;
        }
        if (server != null) {
            server.close();
            server = null;
        }
    }

    @BeforeEach
    void connect(TestInfo info) {
        assumeTrue(server != null, missing);
        a = RedisSemaphores.connect(uri(server));
        b = RedisSemaphores.connect(uri(server));
        name = info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + NAMES.incrementAndGet();
    }

    @AfterEach
    void disconnect() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    RedisSemaphore build(RedisSemaphores on, long permits) {
        return on.semaphore(name).permits(permits).build();
    }

    /** Waits (bounded) until {@code condition} holds. */
    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.onSpinWait();
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    static void awaitQueueLength(RedisSemaphore s, int n) {
        await("queueLength() == " + n, () -> s.queueLength() == n);
    }

    static void awaitState(Thread t, Thread.State state) {
        await(t.getName() + " is " + state, () -> t.getState() == state);
    }

    /**
     * Checks the semaphore's keys in Redis: used == sum of held permits, 0 <= limit <= max, the queue's
     * three structures agree, and the head waiter does not fit.
     */
    void checkInvariants(String semaphore) {
        checkInvariants(redis, semaphore);
    }

    /** {@link #checkInvariants(String)} through {@code redis}: a standalone or a cluster connection. */
    static void checkInvariants(RedisClusterCommands<String, String> redis, String semaphore) {
        String p = "sem:{" + semaphore + "}:";
        Map<String, Long> meta = meta(redis, semaphore);
        long limit = meta.get("limit");
        long max = meta.get("max");
        long used = meta.get("used");
        assertThat(limit).as("limit").isBetween(0L, max);
        long sum = heldPermits(redis, semaphore).stream().mapToLong(Long::longValue).sum();
        assertThat(used).as("used == sum of grants (S1)").isEqualTo(sum);
        assertThat(redis.zcard(p + "leases")).as("one deadline per entry (S1)").isEqualTo(redis.hlen(p + "holders"));
        long queued = redis.zcard(p + "queue");
        List<Long> requests = requestedPermits(redis, semaphore);
        assertThat((long) requests.size()).as("queued requests in holders (S3)").isEqualTo(queued);
        for (String id : redis.zrange(p + "queue", 0, -1)) {
            assertThat(entryFirstField(redis, semaphore, id)).as("queued " + id + " is a request in holders")
                    .isNotNull().isNegative();
        }
        assertThat(meta.get("qlen")).as("qlen == queue length (S3)").isEqualTo(queued);
        long due = meta.get("due");
        List<ScoredValue<String>> first = redis.zrangeWithScores(p + "leases", 0, 0);
        if (!first.isEmpty()) {
            assertThat(due).as("due <= the earliest deadline (S4)").isLessThanOrEqualTo((long) first.get(0).getScore());
        }
        List<String> head = redis.zrange(p + "queue", 0, 0);
        if (!head.isEmpty()) {
            long a = entryFirstField(redis, semaphore, head.get(0));
            if (a == -1) {
                assertThat(used).as("idle head waits for used > 0").isPositive();
            } else {
                assertThat(-1 - a).as("head does not fit").isGreaterThan(limit - used);
            }
        }
    }

    void checkInvariants() {
        checkInvariants(name);
    }

    /**
     * Checks a partitioned semaphore's keys (partitions.lua): S1-S4 over every slot's queue together, each
     * slot's stored held permits and queue length against its grants and its queue (Q1, Q2), each queued
     * request in its own slot's queue, and no slot's head servable (P4: a request head asks more than its
     * slot's capacity, as STATUS computes it; an idle head finds its slot not idle).
     */
    static void checkPartitionInvariants(RedisClusterCommands<String, String> redis, String semaphore) {
        String p = "sem:{" + semaphore + "}:";
        // The meta value of schema 5 (partitions.lua): version, limit, max, used, qlen, due, n, then per partition
        // its queue length and held permits; then per grant its permits and slot; then per slot the requests
        // queued under its score, with each entry's first field and slot (-2 if its seq is not its member's).
        List<Object> dump = redis.eval("local v = redis.call('GET', KEYS[1])"
                + " local ver, limit, max, closed, idle, n, gfor, seq, due, qlen = struct.unpack('<Bddddddddd', v)"
                + " local fence, used = struct.unpack('<dd', v, 74 + 8 * n)"
                + " local out = {ver, limit, max, used, qlen, due, n}"
                + " for i = 0, n - 1 do out[#out + 1] = struct.unpack('<d', v, 74 + 8 * i)"
                + "   out[#out + 1] = struct.unpack('<d', v, 90 + 8 * n + 8 * i) end"
                + " local grants = {} for _, e in ipairs(redis.call('HVALS', KEYS[2])) do"
                + "   local a, b, s = struct.unpack('<ddd', e) if a > 0 then grants[#grants + 1] = a"
                + "   grants[#grants + 1] = s end end out[#out + 1] = grants"
                + " for s = 0, n do local q = {}"
                + "   for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], s, s)) do"
                + "     local e = redis.call('HGET', KEYS[2], string.sub(m, 15))"
                + "     if e then local a, b, es, sq = struct.unpack('<dddd', e) q[#q + 1] = a q[#q + 1] = es"
                + "       if string.format('%014x', sq) ~= string.sub(m, 1, 14) then q[#q] = -2 end"
                + "     else q[#q + 1] = 'missing' q[#q + 1] = -1 end end out[#out + 1] = q end"
                + " return out", io.lettuce.core.ScriptOutputType.MULTI, p + "meta", p + "holders", p + "queue");
        assertThat((Long) dump.get(0)).as("schema 5: partitioned").isEqualTo(5L);
        long limit = (Long) dump.get(1);
        long used = (Long) dump.get(3);
        long qlen = (Long) dump.get(4);
        long due = (Long) dump.get(5);
        int n = (int) (long) (Long) dump.get(6);
        assertThat(limit).as("limit").isBetween(0L, (Long) dump.get(2));
        long[] storedHeld = new long[n + 1];
        long[] storedQueued = new long[n + 1];
        long heldSum = 0;
        long queuedSum = 0;
        for (int i = 0; i < n; i++) {
            storedQueued[i] = (Long) dump.get(7 + 2 * i);
            storedHeld[i] = (Long) dump.get(8 + 2 * i);
            heldSum += storedHeld[i];
            queuedSum += storedQueued[i];
        }
        storedHeld[n] = used - heldSum;
        storedQueued[n] = qlen - queuedSum;
        int at = 7 + 2 * n;
        @SuppressWarnings("unchecked")
        List<Long> grants = (List<Long>) dump.get(at);
        long[] grantHeld = new long[n + 1];
        long total = 0;
        for (int j = 0; j < grants.size(); j += 2) {
            grantHeld[(int) (long) grants.get(j + 1)] += grants.get(j);
            total += grants.get(j);
        }
        assertThat(used).as("used == sum of grants (S1)").isEqualTo(total);
        assertThat(redis.zcard(p + "leases")).as("one deadline per entry (S1)").isEqualTo(redis.hlen(p + "holders"));
        assertThat(storedHeld).as("each slot's held == its grants (Q1)").containsExactly(grantHeld);
        List<Long> requests = requestedPermits(redis, semaphore);
        assertThat((long) requests.size()).as("queued requests in holders (S3)").isEqualTo(qlen);
        List<Protocol.Slot> slots = statusSlots(redis, semaphore, n);
        for (int s = 0; s <= n; s++) {
            @SuppressWarnings("unchecked")
            List<Object> q = (List<Object>) dump.get(at + 1 + s);
            assertThat((long) q.size() / 2).as("slot " + s + "'s queue length (Q2)").isEqualTo(storedQueued[s]);
            for (int j = 0; j < q.size(); j += 2) {
                assertThat(q.get(j)).as("slot " + s + " queue entry " + j / 2 + " is a request").isInstanceOf(Long.class);
                assertThat((Long) q.get(j)).as("a queued request").isNegative();
                assertThat((Long) q.get(j + 1)).as("queued under its own slot, with its own seq").isEqualTo((long) s);
            }
            if (!q.isEmpty()) {
                long a = (Long) q.get(0);
                if (a == -1) {
                    assertThat(s == n ? used : storedHeld[s]).as("slot " + s + "'s idle head waits for its slot to"
                            + " hold something").isPositive();
                } else {
                    assertThat(-1 - a).as("slot " + s + "'s head does not fit its capacity (P4)")
                            .isGreaterThan(slots.get(s).capacity());
                }
            }
        }
        List<ScoredValue<String>> first = redis.zrangeWithScores(p + "leases", 0, 0);
        if (!first.isEmpty()) {
            assertThat(due).as("due <= the earliest deadline (S4)").isLessThanOrEqualTo((long) first.get(0).getScore());
        }
    }

    /** Each slot's counts as the partitioned STATUS script reports them (it changes nothing at quiescence). */
    static List<Protocol.Slot> statusSlots(RedisClusterCommands<String, String> redis, String semaphore, int n) {
        String p = "sem:{" + semaphore + "}:";
        String[] keys = new String[4 + n];
        keys[0] = p + "meta";
        keys[1] = p + "holders";
        keys[2] = p + "leases";
        keys[3] = p + "queue";
        for (int i = 0; i < n; i++) {
            keys[4 + i] = p + "queue:" + i;
        }
        List<Object> r = redis.eval(Script.P_STATUS.source(), io.lettuce.core.ScriptOutputType.MULTI, keys);
        @SuppressWarnings("unchecked")
        List<Object> f = (List<Object>) r.get(5);
        List<Protocol.Slot> slots = new java.util.ArrayList<>();
        for (int i = 0; i + 3 < f.size(); i += 4) {
            slots.add(new Protocol.Slot(Protocol.num(f.get(i)), Protocol.num(f.get(i + 1)),
                    (int) Protocol.num(f.get(i + 2)), Protocol.num(f.get(i + 3))));
        }
        return slots;
    }

    /** Scripts Redis has run so far (EVALSHA and EVAL calls), to count round trips. */
    static long scriptCalls() {
        long calls = 0;
        for (String line : redis.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:")) {
                String v = line.substring(line.indexOf("calls=") + 6);
                calls += Long.parseLong(v.substring(0, v.indexOf(',')));
            }
        }
        return calls;
    }

    /**
     * Commands Redis has executed so far, those run inside scripts included, but for INFO itself and what a
     * connection does when it opens (SCRIPT LOAD of every script, CLIENT, HELLO, PING, SUBSCRIBE): another
     * connection of the test may still be loading its scripts, asynchronously, while a count is taken.
     */
    static long commandsExecuted() {
        long calls = 0;
        for (String line : redis.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")
                    && !line.matches("cmdstat_(info|script|client|hello|ping|subscribe)\\b.*")) {
                String v = line.substring(line.indexOf("calls=") + 6);
                calls += Long.parseLong(v.substring(0, v.indexOf(',')));
            }
        }
        return calls;
    }

    /** The fields of a semaphore's meta value, in order (common.lua: struct '<Bddddddddd'). */
    static final List<String> META_FIELDS = List.of("ver", "limit", "max", "used", "fence", "seq", "closed", "idle",
            "due", "qlen");

    /** Semaphore {@code semaphore}'s meta fields by name, read through {@code r}; empty when it has none. */
    static Map<String, Long> meta(RedisClusterCommands<String, String> r, String semaphore) {
        List<Object> v = r.eval("local v = redis.call('GET', KEYS[1]) if not v then return {} end"
                + " return {struct.unpack('<Bddddddddd', v)}", io.lettuce.core.ScriptOutputType.MULTI,
                "sem:{" + semaphore + "}:meta");
        Map<String, Long> m = new java.util.LinkedHashMap<>();
        for (int i = 0; i < META_FIELDS.size() && i < v.size(); i++) {
            m.put(META_FIELDS.get(i), (Long) v.get(i));
        }
        return m;
    }

    /** One field of semaphore {@code semaphore}'s meta value through {@code r}, or null without one. */
    static Long metaField(RedisClusterCommands<String, String> r, String semaphore, String field) {
        return meta(r, semaphore).get(field);
    }

    /**
     * The permits of each grant in semaphore {@code semaphore}'s holders (values: struct '<dd' then the client;
     * a grant's first field is its permits, a queued request's -1 - its permits).
     */
    static List<Long> heldPermits(RedisClusterCommands<String, String> r, String semaphore) {
        return r.eval("local out = {} for _, v in ipairs(redis.call('HVALS', KEYS[1])) do"
                + " local p = struct.unpack('<d', v) if p > 0 then out[#out + 1] = p end end return out",
                io.lettuce.core.ScriptOutputType.MULTI, "sem:{" + semaphore + "}:holders");
    }

    /** The permits each queued request in semaphore {@code semaphore}'s holders asks for (0: an awaitIdle). */
    static List<Long> requestedPermits(RedisClusterCommands<String, String> r, String semaphore) {
        return r.eval("local out = {} for _, v in ipairs(redis.call('HVALS', KEYS[1])) do"
                + " local a = struct.unpack('<d', v) if a < 0 then out[#out + 1] = -1 - a end end return out",
                io.lettuce.core.ScriptOutputType.MULTI, "sem:{" + semaphore + "}:holders");
    }

    /** The first field of {@code id}'s entry in holders (permits, or -1 - permits for a request); null if none. */
    static Long entryFirstField(RedisClusterCommands<String, String> r, String semaphore, String id) {
        return r.eval("local v = redis.call('HGET', KEYS[1], ARGV[1]) if not v then return nil end"
                + " return struct.unpack('<d', v)", io.lettuce.core.ScriptOutputType.INTEGER,
                new String[] {"sem:{" + semaphore + "}:holders"}, id);
    }

    /** Changes one field of the meta value, as a client from outside would (tests only). */
    void setMetaField(String field, long value) {
        int i = META_FIELDS.indexOf(field);
        redis.eval("local f = {struct.unpack('<Bddddddddd', redis.call('GET', KEYS[1]))}"
                + " f[tonumber(ARGV[1])] = tonumber(ARGV[2])"
                + " redis.call('SET', KEYS[1], struct.pack('<Bddddddddd', unpack(f, 1, 10)), 'KEEPTTL')",
                io.lettuce.core.ScriptOutputType.STATUS, new String[] {"sem:{" + name + "}:meta"},
                Integer.toString(i + 1), Long.toString(value));
    }
}
