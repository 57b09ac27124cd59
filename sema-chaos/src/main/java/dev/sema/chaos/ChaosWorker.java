package dev.sema.chaos;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.SemaphoreClosedException;
import dev.sema.redis.RedisKeyedBuilder;
import dev.sema.redis.RedisPermit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import dev.sema.testing.history.Event.Outcome;
import dev.sema.testing.history.HistoryWriter;
import dev.sema.testing.history.Recorder;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.RedisClusterURIUtil;
import io.lettuce.core.internal.HostAndPort;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.MappingSocketAddressResolver;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One process of the chaos run: virtual threads make random requests on every semaphore of the run
 * through one {@link RedisSemaphores}, connected to Redis through this process's fault proxy, and record
 * each request, outcome, lease loss and release in the process's history file. It stops making requests
 * when its standard input ends (the scheduler closes it), gives back what it holds, leaves, records its
 * exit and ends with status 0.
 *
 * <p>What it records is what the process believes: {@code ok} once a permit is in hand, {@code release}
 * before it calls {@code close()}, {@code lost} when {@code leaseLost()} completes. Requests mix every
 * style of acquire: blocking, timed (20 ms to 3 s), {@code tryAcquire}, async with a timeout, async
 * cancelled after a random delay, and blocking interrupted after a random delay; weights run from 0 to
 * half the limit (1 for a limit of 1), held 0 to 300 ms, or one time in 20 for 1 to 3 leases (renewed
 * meanwhile).
 *
 * <p>Arguments: {@code name uri historyFile seed leaseMillis threads semaphores [broken] [replicas=n]
 * [map=advertised>proxy,...]}, where
 * {@code semaphores} is {@code name:limit,name:limit...} (see {@link Sem} for a partitioned one, whose
 * requests go through its partitions' views or the handle itself at random, each recorded as a request of
 * the semaphore with its partition in its kind: {@code timed@gold}; and for a keyed family, whose requests go
 * to its keys, each recorded as a request of the key's semaphore: {@code chaos-k:key3}); {@code broken} turns
 * off the check that keeps a late grant from reaching a caller (through a test hook), to show that the checker
 * catches what it lets through; {@code replicas=n} makes every grant wait for {@code n} replicas
 * ({@link #REPLICAS_TIMEOUT}); {@code map} leads the client's connections to the ports Redis tells it of
 * (Sentinel's answer) through this process's own proxies.
 *
 * <p>A keyed family's keys expire from Redis after {@link RedisSemaphore#MIN_IDLE_EXPIRY} idle, the shortest
 * the builder accepts, and its requests pick keys unevenly ({@link #key}), so that during a run some keys are
 * held at their limit while others go idle, vanish from Redis and are created afresh by their next request.
 */
public final class ChaosWorker {

    /**
     * One semaphore as the run declares it: {@code name:limit}, {@code name:limit:p=share/q=share...} for a
     * partitioned one (API.md §11a), its partitions in priority order, or {@code name[n]:limit} for a keyed
     * family (API.md §11b) of {@code n} keys, {@code key0} to {@code key<n-1>}, each with that limit.
     */
    record Sem(String name, long limit, List<String> partitions, List<Double> shares, int keys) {
        Sem {
            if (partitions.size() != shares.size()) {
                throw new IllegalArgumentException(name + ": " + partitions.size() + " partitions, "
                        + shares.size() + " shares");
            }
            if (keys < 0 || keys > 0 && !partitions.isEmpty()) {
                throw new IllegalArgumentException(name + ": " + keys + " keys"
                        + (partitions.isEmpty() ? "" : " and partitions (a keyed family has none)"));
            }
            partitions = List.copyOf(partitions);
            shares = List.copyOf(shares);
        }

        Sem(String name, long limit) {
            this(name, limit, List.of(), List.of(), 0);
        }

        long maxWeight() {
            return Math.max(1, limit / 2);
        }

        /**
         * The semaphores the history names: this one, or each key's ({@code family:key}, the name sema-redis
         * gives it), each held to the limit on its own.
         */
        List<String> semaphores() {
            if (keys == 0) {
                return List.of(name);
            }
            List<String> names = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                names.add(name + ":" + key(k));
            }
            return names;
        }

        static String key(int k) {
            return "key" + k;
        }
    }

    /** How long a grant waits for its replicas with {@code replicas=n}: half the command timeout of 1 s. */
    static final Duration REPLICAS_TIMEOUT = Duration.ofMillis(500);

    private static final Pattern KEYED = Pattern.compile("(.+)\\[(\\d{1,9})]");
    /** The most keys {@link #key(Random, int)} can pick from. */
    private static final int MAX_KEYS = 31;

    private final Recorder rec;
    private final RedisSemaphores redis;
    /**
     * Per semaphore: what a request may go through, the handle itself and each partition's view, or each key's
     * view of a keyed family.
     */
    private final List<List<RedisSemaphore>> targets;
    private final List<Sem> sems;
    private final Duration lease;
    private volatile boolean stopping;

    private ChaosWorker(Recorder rec, RedisSemaphores redis, List<Sem> sems, List<List<RedisSemaphore>> targets,
            Duration lease) {
        this.lease = lease;
        this.rec = rec;
        this.redis = redis;
        this.sems = sems;
        this.targets = targets;
    }

    public static void main(String[] args) throws Exception {
        String name = args[0];
        String uri = args[1];
        Path history = Path.of(args[2]);
        long seed = Long.parseLong(args[3]);
        Duration lease = Duration.ofMillis(Long.parseLong(args[4]));
        int threads = Integer.parseInt(args[5]);
        List<Sem> sems = parse(args[6]);
        int replicas = 0;
        Map<Integer, Integer> ports = Map.of();
        for (int i = 7; i < args.length; i++) {
            String a = args[i];
            if (a.equals("broken")) {
                BrokenBuild.skipLateGrantCheck();
            } else if (a.startsWith("replicas=")) {
                try {
                    replicas = Integer.parseInt(a.substring("replicas=".length()));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("'" + a + "': replicas=n, n a number");
                }
            } else if (a.startsWith("map=")) {
                ports = ports(a.substring("map=".length()));
            } else {
                throw new IllegalArgumentException("unknown argument '" + a + "': broken, replicas=n or map=...");
            }
        }
        HistoryWriter writer = HistoryWriter.toFile(history);
        Recorder rec = new Recorder(writer, name);
        rec.start();
        RedisSemaphores redis = connect(uri, ports);
        System.out.println(name + ": connected to " + uri + (replicas > 0 ? ", grants wait for " + replicas
                + " replica(s)" : "") + (ports.isEmpty() ? "" : ", through proxies " + ports));
        List<List<RedisSemaphore>> targets = new ArrayList<>();
        for (Sem s : sems) {
            targets.add(s.keys() > 0 ? keys(redis, s, lease, replicas)
                    : targets(build(redis, s, lease, replicas), s));
        }
        ChaosWorker w = new ChaosWorker(rec, redis, sems, targets, lease);
        int code = w.run(threads, seed);
        rec.exit();
        writer.close();
        System.exit(code);
    }

    static List<Sem> parse(String spec) {
        List<Sem> sems = new ArrayList<>();
        for (String part : spec.split(",")) {
            String[] kv = part.split(":");
            if (kv.length < 2 || kv.length > 3) {
                throw new IllegalArgumentException("'" + part + "': name:limit, name:limit:p=share/q=share"
                        + " or name[keys]:limit");
            }
            String name = kv[0];
            int keys = 0;
            Matcher keyed = KEYED.matcher(name);
            if (keyed.matches()) {
                name = keyed.group(1);
                keys = Integer.parseInt(keyed.group(2));
                if (keys < 1 || keys > MAX_KEYS) {
                    throw new IllegalArgumentException("'" + part + "': a keyed family has 1 to " + MAX_KEYS + " keys");
                }
            }
            List<String> names = new ArrayList<>();
            List<Double> shares = new ArrayList<>();
            if (kv.length == 3) {
                for (String p : kv[2].split("/")) {
                    String[] ns = p.split("=");
                    if (ns.length != 2) {
                        throw new IllegalArgumentException("'" + p + "' in '" + part + "': partition=share");
                    }
                    names.add(ns[0]);
                    shares.add(Double.parseDouble(ns[1]));
                }
            }
            sems.add(new Sem(name, Long.parseLong(kv[1]), names, shares, keys));
        }
        return sems;
    }

    /** {@code advertised>proxy,...}: the ports this process's client must reach through its own proxies. */
    static Map<Integer, Integer> ports(String spec) {
        Map<Integer, Integer> m = new HashMap<>();
        for (String pair : spec.split(",")) {
            String[] ap = pair.split(">");
            try {
                if (ap.length != 2) {
                    throw new NumberFormatException();
                }
                m.put(Integer.parseInt(ap[0]), Integer.parseInt(ap[1]));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("'" + pair + "' in map=" + spec + ": advertisedPort>proxyPort");
            }
        }
        return m;
    }

    /**
     * Connects, retrying while a fault keeps Redis out of reach (the scheduler may start one at any time). With
     * {@code ports}, the client's address resolver leads every address it is told of (by Sentinel) through this
     * process's proxy for that Redis process, and the client's options and reconnect delay are those
     * {@link RedisSemaphores#connect} sets; the URI is still the one a user writes.
     */
    private static RedisSemaphores connect(String uri, Map<Integer, Integer> ports) throws InterruptedException {
        for (int attempt = 1;; attempt++) {
            RedisClient client = null;
            try {
                if (ports.isEmpty()) {
                    return RedisSemaphores.connect(uri);
                }
                if (uri.startsWith("cluster:")) {
                    return connectCluster(uri.substring("cluster:".length()), ports);
                }
                RedisURI u = RedisURI.create(uri);
                client = RedisClient.create(resources(ports), u);
                client.setOptions(ClientOptions.builder()
                        .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                        .timeoutOptions(TimeoutOptions.enabled(u.getTimeout()))
                        .build());
                return RedisSemaphores.using(client); // the process's exit ends the client
            } catch (RedisSemaphoreException e) {
                if (client != null) {
                    shutdown(client);
                }
                if (attempt == 120) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    /** A client made here and its resources, which it was given and so does not shut down itself. */
    private static void shutdown(AbstractRedisClient client) {
        ClientResources resources = client.getResources();
        try {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        } finally {
            resources.shutdown(0, 1, TimeUnit.SECONDS);
        }
    }

    /** Resources as {@link RedisSemaphores#connect} gives its clients, and the port map of this process. */
    private static ClientResources resources(Map<Integer, Integer> ports) {
        return ClientResources.builder()
                .reconnectDelay(() -> Delay.exponential(Duration.ofMillis(1), Duration.ofSeconds(1), 2,
                        TimeUnit.MILLISECONDS))
                .socketAddressResolver(MappingSocketAddressResolver.create((HostAndPort hp) -> {
                    Integer proxy = ports.get(hp.getPort());
                    return proxy == null ? hp : HostAndPort.of("127.0.0.1", proxy);
                })).build();
    }

    /** A cluster client with the options {@link RedisSemaphores#connectCluster} sets, given every node. */
    private static RedisSemaphores connectCluster(String uri, Map<Integer, Integer> ports) {
        List<RedisURI> seeds = RedisClusterURIUtil.toRedisURIs(java.net.URI.create(uri));
        RedisClusterClient client = RedisClusterClient.create(resources(ports), seeds);
        try {
            client.setOptions(ClusterClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .timeoutOptions(TimeoutOptions.enabled(seeds.get(0).getTimeout()))
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enableAllAdaptiveRefreshTriggers()
                            .enablePeriodicRefresh(Duration.ofMinutes(1))
                            .build())
                    .build());
            return RedisSemaphores.using(client); // the process's exit ends the client
        } catch (RuntimeException e) {
            shutdown(client);
            throw e;
        }
    }

    private static RedisSemaphore build(RedisSemaphores redis, Sem s, Duration lease, int replicas)
            throws InterruptedException {
        for (int attempt = 1;; attempt++) {
            try {
                RedisSemaphore.Builder b = redis.semaphore(s.name()).permits(s.limit()).lease(lease);
                if (replicas > 0) {
                    b.replicas(replicas, REPLICAS_TIMEOUT);
                }
                for (int p = 0; p < s.partitions().size(); p++) {
                    b.partition(s.partitions().get(p), s.shares().get(p));
                }
                return b.build();
            } catch (RedisSemaphoreException e) {
                if (attempt == 120) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    private static List<RedisSemaphore> targets(RedisSemaphore handle, Sem s) {
        List<RedisSemaphore> t = new ArrayList<>();
        t.add(handle);
        for (String p : s.partitions()) {
            t.add(handle.partition(p));
        }
        return t;
    }

    /** A keyed family's views, one per key; nothing reaches Redis before a key's first request. */
    private static List<RedisSemaphore> keys(RedisSemaphores redis, Sem s, Duration lease, int replicas) {
        RedisKeyedBuilder b = redis.keyed(s.name()).permits(s.limit()).lease(lease)
                .expireWhenIdle(RedisSemaphore.MIN_IDLE_EXPIRY);
        if (replicas > 0) {
            b.replicas(replicas, REPLICAS_TIMEOUT);
        }
        KeyedSemaphore<String> family = b.build();
        List<RedisSemaphore> t = new ArrayList<>();
        for (int k = 0; k < s.keys(); k++) {
            t.add((RedisSemaphore) family.get(Sem.key(k))); // RedisKeyedBuilder: a key's view is a RedisSemaphore
        }
        return t;
    }

    /**
     * The key of a keyed family's request: key 0 half the time, key 1 a quarter, ..., the last two alike. The
     * hot keys are held at their limit and queue; the cold ones sit idle for seconds between requests, long
     * enough to expire from Redis, and their next request creates them again.
     */
    static int key(Random random, int keys) {
        int top = 1 << (keys - 1);
        return Integer.numberOfTrailingZeros(random.nextInt(top) | top);
    }

    private int run(int threads, long seed) throws InterruptedException {
        Thread stdin = Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) {
                    // the scheduler says nothing: the end of the stream is the signal
                }
            } catch (IOException e) {
                // the end of the stream all the same
            }
            stopping = true;
        });
        List<Thread> loops = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < threads; i++) {
            Random random = new Random(seed * 31 + i);
            loops.add(Thread.ofVirtual().name("chaos-" + i).start(() -> {
                try {
                    while (!stopping) {
                        try {
                            request(random);
                            Thread.sleep(random.nextInt(20));
                        } catch (InterruptedException e) {
                            // an interrupt aimed at a request that ended first: its outcome is recorded
                        }
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
        }
        stdin.join();
        for (Thread t : loops) {
            t.join(TimeUnit.SECONDS.toMillis(60));
            if (t.isAlive()) {
                System.err.println("stuck: " + t + "\n" + stackOf(t));
                return 3; // no exit recorded: the checker reports this process as hung
            }
        }
        redis.close();
        for (Throwable t : failures) {
            t.printStackTrace();
        }
        return failures.isEmpty() ? 0 : 4;
    }

    private enum Style { BLOCKING, TIMED, TRY, ASYNC, ASYNC_CANCELLED, INTERRUPTED }

    private void request(Random random) throws InterruptedException {
        int i = random.nextInt(sems.size());
        Sem sem = sems.get(i);
        List<RedisSemaphore> through = targets.get(i);
        boolean keyed = sem.keys() > 0;
        int via = keyed ? key(random, through.size()) : random.nextInt(through.size());
        RedisSemaphore s = through.get(via);
        long n = random.nextInt(20) == 0 ? 0 : 1 + random.nextInt((int) sem.maxWeight());
        Style style = Style.values()[random.nextInt(Style.values().length)];
        // A partition's request is recorded as one of the semaphore's: the checker holds their total to its limit.
        // A key's is recorded as one of the key's own semaphore: the checker holds each key to the limit alone.
        String kind = style.name().toLowerCase(java.util.Locale.ROOT)
                + (keyed || via == 0 ? "" : "@" + sem.partitions().get(via - 1));
        long req = rec.invoke(keyed ? sem.semaphores().get(via) : sem.name(), n, kind);
        Permit p;
        try {
            p = acquire(s, n, style, random);
        } catch (TimeoutException e) {
            rec.fail(req, Outcome.TIMEOUT, e.getMessage());
            return;
        } catch (CancellationException e) {
            rec.fail(req, Outcome.CANCELLED, "cancelled");
            return;
        } catch (InterruptedException e) {
            rec.fail(req, Outcome.INTERRUPTED, e.getMessage());
            Thread.interrupted();
            return;
        } catch (SemaphoreClosedException e) {
            rec.fail(req, Outcome.CLOSED, e.getMessage());
            return;
        } catch (RedisSemaphoreException e) {
            rec.fail(req, Outcome.ERROR, "unreachable: " + e.getMessage());
            Thread.sleep(100 + random.nextInt(200)); // as a caller would, rather than spin while Redis is away
            return;
        } catch (RuntimeException e) {
            rec.fail(req, Outcome.ERROR, e.toString());
            throw e;
        } finally {
            if (style == Style.INTERRUPTED) {
                Thread.interrupted(); // the interrupter is done: no interrupt outlives its request
            }
        }
        if (p == null) {
            rec.fail(req, Outcome.UNAVAILABLE, "tryAcquire found too few");
            return;
        }
        RedisPermit rp = (RedisPermit) p;
        rec.ok(req, rp.fencingToken());
        Thread.interrupted(); // a grant that raced with an interrupt keeps it: not for the holding below
        rp.leaseLost().thenRun(() -> rec.lost(req));
        try {
            // One hold in 20 outlasts its lease (1 to 3 leases), so that grants are renewed under the faults.
            Thread.sleep(random.nextInt(20) == 0 ? (long) (lease.toMillis() * (1 + 2 * random.nextDouble()))
                    : random.nextInt(300));
        } finally {
            rec.release(req);
            p.close();
        }
    }

    private Permit acquire(RedisSemaphore s, long n, Style style, Random random)
            throws InterruptedException, TimeoutException {
        Duration timeout = Duration.ofMillis(20 + random.nextInt(3_000));
        switch (style) {
            case BLOCKING -> {
                return s.acquire(n);
            }
            case TIMED -> {
                return s.acquire(n, timeout);
            }
            case TRY -> {
                Optional<Permit> p = s.tryAcquire(n);
                return p.orElse(null);
            }
            case ASYNC -> {
                return join(s.acquireAsync(n, timeout));
            }
            case ASYNC_CANCELLED -> {
                CompletableFuture<Permit> f = s.acquireAsync(n);
                Thread.sleep(random.nextInt(500));
                if (f.cancel(true)) {
                    throw new CancellationException();
                }
                return join(f);
            }
            case INTERRUPTED -> {
                Thread self = Thread.currentThread();
                long delay = random.nextInt(500);
                java.util.concurrent.atomic.AtomicBoolean over = new java.util.concurrent.atomic.AtomicBoolean();
                Thread interrupter = Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(delay);
                    } catch (InterruptedException e) {
                        return; // the request ended first
                    }
                    if (over.compareAndSet(false, true)) {
                        self.interrupt();
                    }
                });
                try {
                    return s.acquire(n);
                } finally {
                    if (over.compareAndSet(false, true)) {
                        interrupter.interrupt();
                    }
                    while (interrupter.isAlive()) {
                        try {
                            interrupter.join();
                        } catch (InterruptedException e) {
                            // its interrupt, arriving late: cleared below
                        }
                    }
                }
            }
            default -> throw new AssertionError(style);
        }
    }

    private static Permit join(CompletableFuture<Permit> f) throws InterruptedException, TimeoutException {
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof TimeoutException t) {
                throw t;
            }
            if (c instanceof CancellationException x) {
                throw x;
            }
            if (c instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(c);
        } catch (CancellationException e) {
            throw e;
        }
    }

    private static String stackOf(Thread t) {
        StringBuilder b = new StringBuilder();
        for (StackTraceElement e : t.getStackTrace()) {
            b.append("    at ").append(e).append('\n');
        }
        return b.toString();
    }
}
