package dev.sema.redis;

import dev.sema.internal.PartitionSpec;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.Serial;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The scripts of one semaphore as typed calls: one method per script, each reply decoded here into a
 * record, and the wake-up messages parsed here. Nothing else in this package reads a raw reply. A reply
 * that says the semaphore is missing or corrupt fails the call with {@link RedisSemaphoreException}.
 */
final class Protocol {

    /** MERGE's lost mask: the target's part was gone (merge.lua's LOST_TARGET). */
    static final int LOST_TARGET = 1;
    /** MERGE's lost mask: the other permit's part was gone (merge.lua's LOST_OTHER). */
    static final int LOST_OTHER = 2;

    private final RedisSemaphores owner;
    private final String describe;
    private final String[] keys;
    /** {@link #keys} and the keys only the older schemas have, for {@link Script#UPGRADE}. */
    private final String[] upgradeKeys;
    /**
     * "+limit ceiling idleMs" to create a missing semaphore with, or "" (do not create): a script's last
     * argument, sent only in a call resent after the reply ERR_MISSING (common.lua).
     */
    private final String create;
    /** Whether replies complete on the connection's I/O thread (see {@link #forBlockingCallers()}). */
    private final boolean direct;
    /** Whether the semaphore is partitioned (API.md §11a): the P_ scripts, and the request's slot in ACQUIRE. */
    private final boolean partitioned;
    /** The one cluster master the calls go to, unredirected (see {@link #on}); null: the command connection. */
    private final StatefulRedisConnection<String, String> node;

    /**
     * @param initLimit the limit to create a missing semaphore with, or "" to report it missing
     * @param initMax the ceiling to create it with, or ""
     * @param initIdle the idle expiry (ms, "0" for none) to create it with, or ""
     * @param partitions the semaphore's partitions (null: none): the scripts and keys to use, and what a
     *        missing one is created with
     */
    Protocol(RedisSemaphores owner, String name, String describe, String initLimit, String initMax, String initIdle,
            PartitionSpec partitions) {
        this.owner = owner;
        this.describe = describe;
        String prefix = "sem:{" + name + "}:";
        // A partitioned semaphore has the same keys: its queue holds every partition's requests (partitions.lua).
        this.keys = new String[] {prefix + "meta", prefix + "holders", prefix + "leases", prefix + "queue"};
        this.upgradeKeys = new String[] {prefix + "meta", prefix + "holders", prefix + "leases", prefix + "queue",
                prefix + "waiters", prefix + "wlive"};
        this.create = initLimit.isEmpty() ? "" : "+" + initLimit + " " + initMax + " " + initIdle
                + (partitions == null ? "" : " " + StoredPartitions.encode(partitions));
        this.direct = false;
        this.partitioned = partitions != null;
        this.node = null;
    }

    private Protocol(Protocol p, boolean direct, StatefulRedisConnection<String, String> node) {
        this.owner = p.owner;
        this.describe = p.describe;
        this.keys = p.keys;
        this.upgradeKeys = p.upgradeKeys;
        this.create = p.create;
        this.direct = direct;
        this.partitioned = p.partitioned;
        this.node = node;
    }

    /**
     * The same calls, for a caller that blocks on the reply: it completes on the connection's I/O thread
     * (decoding is its only dependent, and the waiting thread goes on from there), with no hop to another
     * thread and no timer of its own (the caller waits within the command timeout). Never for a reply that
     * others react to: their code would run on the I/O thread.
     */
    Protocol forBlockingCallers() {
        return new Protocol(this, true, node);
    }

    /**
     * The same calls, sent on {@code node}, one master's connection of a cluster ({@link RedisSemaphores#onMaster}):
     * each runs there or fails (MOVED, ASK), so that a WAIT on that connection covers it.
     */
    Protocol on(StatefulRedisConnection<String, String> node) {
        return new Protocol(this, direct, node);
    }

    /** A key of the semaphore: its slot is the semaphore's. */
    String key() {
        return keys[0];
    }

    // ---------------------------------------------------------------- replies

    /**
     * ACQUIRE's answer. {@code value} is the fencing token when GRANTED, the ceiling when TOO_LARGE;
     * {@code permits} is how many a GRANTED reply says it granted (a drain, or a replay of a held grant),
     * or -1 when it does not say.
     */
    record Acquired(Kind kind, long value, long permits) {
        enum Kind { GRANTED, QUEUED, NOT_AVAILABLE, IDLE, CLOSED, TOO_LARGE }

        Acquired(Kind kind, long value) {
            this(kind, value, -1);
        }
    }

    /** CANCEL's answer. */
    enum Cancelled { CANCELLED, WAS_GRANTED_RELEASED, NOT_FOUND }

    /** MERGE's answer: {@code held} false when neither part was held; {@code lost} is a mask of LOST_*. */
    record Merged(boolean held, long token, long permits, int lost) {
    }

    /** SET_LIMIT's and FORGET's answer: the limit before and after; {@code max} when SET_LIMIT was out of range. */
    record LimitChange(boolean inRange, long oldLimit, long newLimit, long max) {
    }

    /** RENEW's answer. {@code granted} holds waiter ids and their tokens. */
    record Renewed(boolean closed, List<String> lost, List<Grant> granted, List<String> gone) {
    }

    /** A waiter of this handle that Redis granted, with its fencing token. */
    record Grant(String id, long token) {
    }

    /**
     * STATUS's answer. A partitioned semaphore's also has each slot's counts (its partitions in priority
     * order, then the parent's own) and its partitions as stored; an unpartitioned one's, none and null.
     */
    record Status(long limit, long max, long used, int queued, boolean closed, List<Slot> slots, String partitions) {
    }

    /** One slot's counts: held, guarantee, queue length, and what a request of it could take now. */
    record Slot(long held, long guarantee, int queued, long capacity) {
    }

    /**
     * The reply ERR_LAYOUT: the semaphore in Redis has other partitions than this handle's calls were made
     * for ({@code stored}, as StoredPartitions writes them; "" for none). Nothing changed.
     */
    static final class LayoutMismatch extends RedisSemaphoreException {
        @Serial
        private static final long serialVersionUID = 1L;

        final String stored;

        LayoutMismatch(String message, String stored) {
            super(message, null);
            this.stored = stored;
        }
    }

    /** One part of a wake-up message. */
    record WakeUp(Kind kind, String id, long token) {
        enum Kind { GRANTED, CLOSED, IDLE }
    }

    // ---------------------------------------------------------------- scripts

    /**
     * @param id the handle's clientId, ':' and a counter (acquire.lua reads a waiter's wake-up channel from it)
     * @param mode try, wait, idle (an awaitIdle) or drain; a try and a drain never queue
     * @param slot on a partitioned semaphore, the request's partition, -1 for none (p_acquire.lua); ignored
     *        otherwise
     */
    CompletableFuture<Acquired> acquire(String id, long permits, String leaseMs, String ttlMs, String mode,
            int slot) {
        // Four arguments (each costs Redis a string and a table slot per call): the mode rides on the
        // permits (idle, drain) and on the waiter TTL ("" for a request that must not queue).
        String count = switch (mode) {
            case "idle", "drain" -> mode;
            case "try", "wait" -> Long.toString(permits);
            default -> throw new IllegalArgumentException("mode " + mode);
        };
        String ttl = mode.equals("wait") || mode.equals("idle") ? ttlMs : "";
        CompletableFuture<List<Object>> reply = partitioned
                ? call(Script.ACQUIRE, id, count, leaseMs, ttl, Integer.toString(slot))
                : call(Script.ACQUIRE, id, count, leaseMs, ttl);
        return reply.thenApply(r -> {
            if (r.get(0) instanceof Long token) {
                return new Acquired(Acquired.Kind.GRANTED, token); // the fast path's reply: the token alone
            }
            String s = str(r.get(0));
            return switch (s) {
                case "GRANTED" -> new Acquired(Acquired.Kind.GRANTED, num(r.get(1)), r.size() > 2 ? num(r.get(2)) : -1);
                case "QUEUED" -> new Acquired(Acquired.Kind.QUEUED, 0);
                case "NOT_AVAILABLE" -> new Acquired(Acquired.Kind.NOT_AVAILABLE, 0);
                case "IDLE" -> new Acquired(Acquired.Kind.IDLE, 0);
                case "CLOSED" -> new Acquired(Acquired.Kind.CLOSED, 0);
                case "ERR_MAX" -> new Acquired(Acquired.Kind.TOO_LARGE, num(r.get(1)));
                default -> throw unexpected("acquire", r);
            };
        });
    }

    CompletableFuture<Cancelled> cancel(String id) {
        return call(Script.CANCEL, id).thenApply(r -> Cancelled.valueOf(str(r.get(0))));
    }

    /** Releases {@code permits} of a grant ("" rest id and 0: all of it); false when Redis did not hold it. */
    CompletableFuture<Boolean> release(String grantId, String restId, long permits) {
        // A whole grant is the common case: its id alone (every argument costs Redis a string per call).
        return (restId.isEmpty() ? call(Script.RELEASE, grantId) : call(Script.RELEASE, grantId, restId,
                Long.toString(permits))).thenApply(Protocol::ok);
    }

    CompletableFuture<Boolean> split(String grantId, String keepId, String newId, long permits) {
        return call(Script.SPLIT, grantId, keepId, newId, Long.toString(permits)).thenApply(Protocol::ok);
    }

    CompletableFuture<Merged> merge(String targetId, String otherId, String newId) {
        return call(Script.MERGE, targetId, otherId, newId).thenApply(r -> ok(r)
                ? new Merged(true, num(r.get(1)), num(r.get(2)), (int) num(r.get(3)))
                : new Merged(false, 0, 0, LOST_TARGET | LOST_OTHER));
    }

    /** Ends a grant keeping its permits consumed; null when Redis did not hold it. */
    CompletableFuture<LimitChange> forget(String grantId) {
        return call(Script.FORGET, grantId).thenApply(r -> ok(r)
                ? new LimitChange(true, num(r.get(1)), num(r.get(2)), 0) : null);
    }

    CompletableFuture<Renewed> renew(String handle, String leaseMs, String ttlMs, List<String> held,
            List<String> waiting) {
        String[] args = new String[4 + held.size() + waiting.size()];
        args[0] = handle;
        args[1] = leaseMs;
        args[2] = ttlMs;
        args[3] = Integer.toString(held.size());
        int i = 4;
        for (String id : held) {
            args[i++] = id;
        }
        for (String id : waiting) {
            args[i++] = id;
        }
        return call(Script.RENEW, args).thenApply(r -> {
            List<Grant> granted = new ArrayList<>();
            List<Object> g = list(r.get(2));
            for (int j = 0; j + 1 < g.size(); j += 2) {
                granted.add(new Grant(str(g.get(j)), num(g.get(j + 1))));
            }
            return new Renewed("1".equals(str(r.get(0))), strings(r.get(1)), granted, strings(r.get(3)));
        });
    }

    /** {@code mode}: set, add or reduce. */
    CompletableFuture<LimitChange> setLimit(String mode, long n) {
        return call(Script.SET_LIMIT, mode, Long.toString(n)).thenApply(r -> ok(r)
                ? new LimitChange(true, num(r.get(1)), num(r.get(2)), 0)
                : new LimitChange(false, 0, 0, num(r.get(1))));
    }

    /**
     * Closes the semaphore for every process; true if this call closed it (it was open). {@code closer}'s own
     * waiters are not sent a message: it fails them itself.
     */
    CompletableFuture<Boolean> close(String closer) {
        return call(Script.CLOSE, closer).thenApply(r -> r.size() > 1 && "1".equals(str(r.get(1))));
    }

    CompletableFuture<Status> status() {
        return call(Script.STATUS).thenApply(r -> {
            List<Slot> slots = List.of();
            String stored = null;
            if (r.size() > 6) {
                List<Object> f = list(r.get(5));
                slots = new ArrayList<>();
                for (int i = 0; i + 3 < f.size(); i += 4) {
                    slots.add(new Slot(num(f.get(i)), num(f.get(i + 1)), (int) num(f.get(i + 2)), num(f.get(i + 3))));
                }
                stored = str(r.get(6));
            }
            return new Status(num(r.get(0)), num(r.get(1)), num(r.get(2)), (int) num(r.get(3)),
                    "1".equals(str(r.get(4))), slots, stored);
        });
    }

    /** A raw call, for the protocol tests: the operation's script for this semaphore's kind. */
    CompletableFuture<List<Object>> raw(Script script, String... args) {
        return owner.eval(partitioned ? script.partitioned() : script, script == Script.UPGRADE ? upgradeKeys : keys,
                args, direct, node);
    }

    /**
     * Runs {@code script}. Two replies come before the script changed anything and make this call run it
     * again: ERR_UPGRADE (a semaphore of an older schema: upgrade.lua rewrites it in place first) and
     * ERR_MISSING (no semaphore: resent with the creation argument, when this handle may create it).
     */
    private CompletableFuture<List<Object>> call(Script script, String... args) {
        return again(script, args, raw(script, args), false, false).thenApply(this::checked);
    }

    /** Runs the script again after each of those two replies, at most once each, in whichever order they come. */
    private CompletableFuture<List<Object>> again(Script script, String[] args, CompletableFuture<List<Object>> reply,
            boolean upgraded, boolean created) {
        return reply.thenCompose(r -> {
            String status = str(r.get(0));
            if (!upgraded && "ERR_UPGRADE".equals(status)) {
                return again(script, args, raw(Script.UPGRADE).thenApply(this::checked)
                        .thenCompose(u -> raw(script, args)), true, created);
            }
            if (!created && !create.isEmpty() && "ERR_MISSING".equals(status)) {
                String[] all = withCreate(args);
                return again(script, all, raw(script, all), upgraded, true);
            }
            return CompletableFuture.completedFuture(r);
        });
    }

    private String[] withCreate(String[] args) {
        String[] all = Arrays.copyOf(args, args.length + 1);
        all[args.length] = create;
        return all;
    }

    private List<Object> checked(List<Object> r) {
        String status = str(r.get(0));
        if ("ERR_MISSING".equals(status)) {
            throw new RedisSemaphoreException(describe + ": the semaphore does not exist in Redis (key " + keys[0]
                    + " is missing) and this handle was built with createIfMissing(false)", null);
        }
        if ("ERR_UPGRADE".equals(status)) {
            throw new RedisSemaphoreException(describe + ": the semaphore is still of an older schema after "
                    + "upgrade.lua ran", null);
        }
        if ("ERR_LAYOUT".equals(status)) {
            String stored = str(r.get(1));
            throw new LayoutMismatch(describe + ": the semaphore in Redis has " + (stored.isEmpty() ? "no partitions"
                    : "other partitions (" + stored + ")") + " than this handle was opened with; it was created"
                    + " again since (after an idle expiry or a lost key) by a builder that declared others: open a"
                    + " new handle", stored);
        }
        if ("ERR_CORRUPT".equals(status)) {
            throw new RedisSemaphoreException(describe + ": the key does not hold a semaphore: " + str(r.get(1)), null);
        }
        return r;
    }

    private RedisSemaphoreException unexpected(String what, List<Object> r) {
        return new RedisSemaphoreException(describe + ": " + what + ": unexpected reply from Redis: " + r, null);
    }

    // ---------------------------------------------------------------- wake-up messages

    /** A wake-up message: 'G id token' granted, 'C id' failed by close, 'I id' idle reached; ';'-joined. */
    static List<WakeUp> wakeUps(String message) {
        List<WakeUp> all = new ArrayList<>();
        for (String part : message.split(";")) {
            String[] f = part.split(" ");
            if (f.length < 2) {
                continue;
            }
            switch (f[0]) {
                case "G" -> {
                    if (f.length > 2) {
                        all.add(new WakeUp(WakeUp.Kind.GRANTED, f[1], Long.parseLong(f[2])));
                    }
                }
                case "C" -> all.add(new WakeUp(WakeUp.Kind.CLOSED, f[1], 0));
                case "I" -> all.add(new WakeUp(WakeUp.Kind.IDLE, f[1], 0));
                default -> {
                    // unknown kinds are ignored: a newer script may send more
                }
            }
        }
        return all;
    }

    // ---------------------------------------------------------------- decoding

    private static boolean ok(List<Object> r) {
        return "OK".equals(str(r.get(0)));
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    private static List<String> strings(Object o) {
        List<String> out = new ArrayList<>();
        for (Object e : list(o)) {
            out.add(str(e));
        }
        return out;
    }

    static String str(Object o) {
        return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(o);
    }

    static long num(Object o) {
        return o instanceof Long l ? l : Long.parseLong(str(o));
    }
}
