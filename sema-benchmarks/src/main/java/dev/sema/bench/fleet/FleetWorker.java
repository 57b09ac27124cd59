package dev.sema.bench.fleet;

import dev.sema.bench.redis.Contenders;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One process of {@link FleetRun}: {@code threads} virtual threads, each running tasks one after the other
 * until told to stop. A task picks one of the semaphores {@code fleet-0} .. {@code fleet-(n-1)} with a Zipf
 * distribution (rank {@code k} = semaphore {@code fleet-(k-1)}, weight {@code 1 / k^s}), acquires one permit
 * (blocking, no timeout, the lease of {@link Contenders#lease()}), then on the referee Redis runs
 * {@link #COUNT_SCRIPT} (INCR the semaphore's holder count and keep its highest value), sleeps a uniformly
 * random 0 .. {@code holdMaxMicros}, DECRs the count and releases the permit.
 *
 * <p>Arguments: implementation ({@code SEMA} or {@code REDISSON}), measured Redis URI, referee Redis URI,
 * process index, threads, semaphores, limit, Zipf exponent, longest hold (µs), seed.
 *
 * <p>Protocol with the coordinator: the worker connects, builds its handles, loads the referee's script and
 * prints {@code READY}; the coordinator then writes {@code GO <measureStart> <measureEnd> <stop>} (epoch
 * milliseconds) to its standard input, and the tasks start at once (the warm-up lasts until
 * {@code measureStart}). Tasks whose acquire returns in {@code [measureStart, measureEnd)} are the measured
 * grants (their wait, from the call to its return, goes into the histogram); those returning in
 * {@code [measureEnd, stop)} are counted apart (the coordinator watches that window with MONITOR). At
 * {@code stop} no new task starts; once every thread has finished its task, the worker prints
 * {@code RESULT key=value ...} and exits. The worker halts if its standard input closes (the coordinator
 * is gone) or long after {@code stop}, so that it can never outlive the run.
 */
public final class FleetWorker {
    /**
     * The referee's script: KEYS[1] is the semaphore's holder count, KEYS[2] the highest count seen; returns
     * the new count.
     */
    static final String COUNT_SCRIPT = "local n = redis.call('INCR', KEYS[1]) "
            + "if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end "
            + "return n";

    /** How long the tasks that are still running at {@code stop} get to finish. */
    static final long DRAIN_MILLIS = 30_000;

    private FleetWorker() {
    }

    /** The name of semaphore {@code i} (on the measured Redis). */
    static String semaphoreName(int i) {
        return "fleet-" + i;
    }

    /** The referee's holder count of semaphore {@code i}. */
    static String holdersKey(int i) {
        return "fleet-holders:{" + i + "}";
    }

    /** The referee's highest holder count of semaphore {@code i}. */
    static String maxKey(int i) {
        return "fleet-max:{" + i + "}";
    }

    /** What one thread saw. */
    private static final class Tally {
        final WaitHistogram waits = new WaitHistogram();
        long grants;
        long countedGrants;
        long tasks;
        long errors;
        long violations;
        long maxSeen;
        String firstError;
    }

    /** Runs one worker; see the class documentation for the arguments. */
    public static void main(String[] args) throws Exception {
        String impl = args[0];
        String redisUri = args[1];
        String refereeUri = args[2];
        int index = Integer.parseInt(args[3]);
        int threads = Integer.parseInt(args[4]);
        int semaphores = Integer.parseInt(args[5]);
        int limit = Integer.parseInt(args[6]);
        Zipf zipf = new Zipf(semaphores, Double.parseDouble(args[7]));
        long holdMaxMicros = Long.parseLong(args[8]);
        long seed = Long.parseLong(args[9]);

        CompletableFuture<long[]> go = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("coordinator-link").start(() -> listen(go));

        Contenders.Client client = Contenders.connect(impl, redisUri, "P" + index);
        Contenders.Handle[] handles = new Contenders.Handle[semaphores];
        for (int i = 0; i < semaphores; i++) {
            handles[i] = client.semaphore(semaphoreName(i), limit);
        }
        RedisClient refereeClient = RedisClient.create(refereeUri);
        StatefulRedisConnection<String, String> refereeConnection = refereeClient.connect();
        RedisCommands<String, String> referee = refereeConnection.sync();
        String sha = referee.scriptLoad(COUNT_SCRIPT);
        String[][] keys = new String[semaphores][];
        for (int i = 0; i < semaphores; i++) {
            keys[i] = new String[] {holdersKey(i), maxKey(i)};
        }
        System.out.println("READY");
        System.out.flush();

        long[] times = go.get(); // epoch ms: measure start, measure end, stop
        long nowNanos = System.nanoTime();
        long nowMillis = System.currentTimeMillis();
        long measureStart = nowNanos + TimeUnit.MILLISECONDS.toNanos(times[0] - nowMillis);
        long measureEnd = nowNanos + TimeUnit.MILLISECONDS.toNanos(times[1] - nowMillis);
        long stop = nowNanos + TimeUnit.MILLISECONDS.toNanos(times[2] - nowMillis);
        Thread.ofPlatform().daemon().name("watchdog").start(() -> {
            LockSupport.parkNanos(stop - System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_MILLIS + 30_000));
            System.err.println("fleet worker " + index + ": still running 60 s after the end of the run; halting");
            Runtime.getRuntime().halt(5);
        });
        long[] cpu = new long[6]; // process CPU ns, JIT ms, GC ms: at the start and at the end of the window
        Thread sampler = Thread.ofPlatform().daemon().name("cpu-sampler").start(() -> {
            parkUntil(measureStart);
            sample(cpu, 0);
            parkUntil(measureEnd);
            sample(cpu, 3);
        });

        List<Thread> workers = new ArrayList<>();
        List<Tally> tallies = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Tally tally = new Tally();
            tallies.add(tally);
            SplittableRandom random = new SplittableRandom(seed * 1_000_003L + t);
            workers.add(Thread.ofVirtual().name("task-" + t).start(() -> {
                while (System.nanoTime() - stop < 0) {
                    int s = zipf.sample(random.nextDouble());
                    long holdNanos = random.nextLong(holdMaxMicros + 1) * 1_000;
                    tally.tasks++;
                    try {
                        long t0 = System.nanoTime();
                        Object grant = handles[s].acquire();
                        long t1 = System.nanoTime();
                        try {
                            long n = referee.evalsha(sha, ScriptOutputType.INTEGER, keys[s]);
                            tally.maxSeen = Math.max(tally.maxSeen, n);
                            if (n > limit) {
                                tally.violations++;
                                System.err.println("LIMIT EXCEEDED: " + n + " holders of " + semaphoreName(s)
                                        + " at once, limit " + limit + " (" + impl + ", process " + index + ")");
                            }
                            if (holdNanos > 0) {
                                Thread.sleep(holdNanos / 1_000_000, (int) (holdNanos % 1_000_000));
                            }
                            referee.decr(keys[s][0]);
                        } finally {
                            handles[s].release(grant);
                        }
                        if (t1 - measureStart >= 0 && t1 - measureEnd < 0) {
                            tally.grants++;
                            tally.waits.record(t1 - t0);
                        } else if (t1 - measureEnd >= 0 && t1 - stop < 0) {
                            tally.countedGrants++;
                        }
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        tally.errors++;
                        if (tally.firstError == null) {
                            tally.firstError = e.toString();
                            System.err.println("fleet worker " + index + ": " + e);
                        }
                        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
                    }
                }
            }));
        }
        long drainDeadline = stop + TimeUnit.MILLISECONDS.toNanos(DRAIN_MILLIS);
        int undrained = 0;
        for (Thread w : workers) {
            long left = drainDeadline - System.nanoTime();
            if (left > 0) {
                w.join(java.time.Duration.ofNanos(left));
            }
            if (w.isAlive()) {
                undrained++;
            }
        }
        sampler.join(java.time.Duration.ofNanos(Math.max(0, measureEnd - System.nanoTime()))
                .plusSeconds(1)); // the window's end sampled (it ended before the tasks did, unless none ran)

        WaitHistogram waits = new WaitHistogram();
        long grants = 0;
        long counted = 0;
        long tasks = 0;
        long errors = 0;
        long violations = 0;
        long maxSeen = 0;
        String firstError = null;
        for (Tally t : tallies) { // the finished threads' tallies are visible after join; the rest are estimates
            waits.add(t.waits);
            grants += t.grants;
            counted += t.countedGrants;
            tasks += t.tasks;
            errors += t.errors;
            violations += t.violations;
            maxSeen = Math.max(maxSeen, t.maxSeen);
            if (firstError == null) {
                firstError = t.firstError;
            }
        }
        System.out.println("RESULT grants=" + grants + " counted=" + counted + " tasks=" + tasks + " errors=" + errors
                + " violations=" + violations + " maxSeen=" + maxSeen + " undrained=" + undrained + " cpuNanos="
                + (cpu[3] - cpu[0]) + " jitMillis=" + (cpu[4] - cpu[1]) + " gcMillis=" + (cpu[5] - cpu[2]) + " waits="
                + waits.encode());
        if (firstError != null) {
            System.out.println("ERROR " + firstError.replace('\n', ' '));
        }
        System.out.flush();
        refereeConnection.close();
        refereeClient.shutdown(0, 2, TimeUnit.SECONDS);
        client.close();
        System.exit(0);
    }

    /** Reads the coordinator's {@code GO} line; halts when the coordinator closes the pipe. */
    private static void listen(CompletableFuture<long[]> go) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith("GO ")) {
                    String[] f = line.split(" ");
                    go.complete(new long[] {Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])});
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // treated as the coordinator being gone
        }
        Runtime.getRuntime().halt(4);
    }

    private static void parkUntil(long nanoTime) {
        for (long left = nanoTime - System.nanoTime(); left > 0; left = nanoTime - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    /** Process CPU time (ns), JIT compilation time (ms) and GC time (ms) into {@code into[at..at+2]}. */
    private static void sample(long[] into, int at) {
        into[at] = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
        into[at + 1] = ManagementFactory.getCompilationMXBean().getTotalCompilationTime();
        long gc = 0;
        for (var b : ManagementFactory.getGarbageCollectorMXBeans()) {
            gc += Math.max(0, b.getCollectionTime());
        }
        into[at + 2] = gc;
    }

    /** Zipf-distributed ranks over {@code n} items: rank {@code k} (1-based) has weight {@code 1 / k^s}. */
    static final class Zipf {
        private final double[] cdf;

        Zipf(int n, double s) {
            cdf = new double[n];
            double sum = 0;
            for (int k = 1; k <= n; k++) {
                sum += 1 / Math.pow(k, s);
                cdf[k - 1] = sum;
            }
            for (int i = 0; i < n; i++) {
                cdf[i] /= sum;
            }
            cdf[n - 1] = 1.0;
        }

        /** The share of draws that pick item {@code i} (0-based). */
        double share(int i) {
            return i == 0 ? cdf[0] : cdf[i] - cdf[i - 1];
        }

        /** The item (0-based: rank - 1) for a uniform {@code u} in [0, 1). */
        int sample(double u) {
            int lo = 0;
            int hi = cdf.length - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (cdf[mid] > u) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            return lo;
        }
    }
}
