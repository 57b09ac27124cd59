package dev.sema.bench;

import com.ibm.asyncutil.locks.FairAsyncSemaphore;
import dev.sema.Fairness;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntPredicate;

/**
 * Benchmark 7 (not JMH): the heap taken by one queued waiter, for Sema and the implementations it is
 * compared with. Prints a Markdown section on standard output.
 *
 * <p>Method: for each case, the semaphore (with no free permit) and an array to keep the waiters
 * reachable are made first; the used heap is read after full GCs (polled until it settles); then N
 * waiters are queued and, once every one is queued (and, for threads, parked), the used heap is read the
 * same way again. The difference divided by N is the cost per waiter. Each case runs one uncounted
 * warm-up round, then rounds until the last few agree within 2 % (the first platform-thread rounds in a
 * fresh JVM read low for a few seconds); their median is printed with their range. The waiters are kept
 * reachable through a static field while they are measured (a local array alone may be dead to the JIT).
 * Waiters are:
 * <ul>
 *   <li><b>async</b>: N {@code acquireAsync(1)} (or {@code acquire(1)}) calls whose futures are kept, as a
 *       caller keeps them: the figure includes the returned future.</li>
 *   <li><b>virtual thread</b>: N virtual threads blocked in {@code acquire(1)}. A parked virtual thread's
 *       stack lives on the heap, so the figure includes the thread; the row "bare park" measures virtual
 *       threads parked in {@code LockSupport.park()} without any semaphore, and the last column subtracts
 *       it, leaving what the semaphore adds (its queue node and the deeper stack of its acquire). Frame
 *       sizes depend on how the JIT compiled the acquire path when each thread parked, so these rows vary
 *       more between rounds than the others; the warm-up round uses at least 50,000 threads.</li>
 *   <li><b>platform thread</b>: the same with platform threads. Only their heap part is counted: each
 *       also has a native stack outside the heap (reserved up to {@code -Xss}, typically 1 MiB).</li>
 * </ul>
 * The JDK semaphore has no async acquire; asyncutil's FairAsyncSemaphore and the hand-written semaphore
 * have no blocking acquire of their own, so each appears only where it applies.
 *
 * <p>Run (bin/benchmarks does this): {@code java -XX:+UseParallelGC -Xms2g -Xmx2g -cp
 * sema-benchmarks/target/benchmarks.jar dev.sema.bench.WaiterFootprint [asyncN [virtualN [platformN
 * [rounds]]]]}, defaults 100000 100000 1000 3. Parallel GC and a fixed-size heap keep the readings exact.
 */
public final class WaiterFootprint {

    private WaiterFootprint() {
    }

    /** One kind of waiter of one implementation. */
    private interface Case {
        /** Makes the semaphore; nothing queued. */
        void prepare(int n);

        /** Queues {@code keep.length} waiters, keeping each in {@code keep}; returns once all are queued. */
        void fill(Object[] keep) throws Exception;

        /** Lets every waiter go and waits for their threads to end. */
        void clear(Object[] keep) throws Exception;
    }

    private record Result(String kind, String impl, int n, double bytesPerWaiter, double min, double max,
            boolean settled) {
    }

    /**
     * Measures and prints the footprint table.
     *
     * @param args optional: async N, virtual-thread N, platform-thread N, rounds
     * @throws Exception if a case fails
     */
    public static void main(String[] args) throws Exception {
        int asyncN = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int virtualN = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        int platformN = args.length > 2 ? Integer.parseInt(args[2]) : 1_000;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;

        List<Result> results = new ArrayList<>();
        results.add(measure("async (future kept)", "Sema FIFO", asyncN, rounds, semaAsync()));
        results.add(measure("async (future kept)", Impl.ASYNCUTIL_FAIR.label(), asyncN, rounds, asyncutil()));
        results.add(measure("async (future kept)", Impl.HAND_WRITTEN.label(), asyncN, rounds, handWritten()));
        // Platform threads first: once virtual threads ran, their idle carrier threads retire some time later
        // (keep-alive), which would free memory in the middle of a later measurement.
        for (boolean virtual : new boolean[] {false, true}) {
            String kind = virtual ? "virtual thread" : "platform thread";
            int n = virtual ? virtualN : platformN;
            results.add(measure(kind, "bare park (no semaphore)", n, rounds, bareParked(virtual)));
            results.add(measure(kind, "Sema FIFO", n, rounds, semaBlocking(virtual)));
            results.add(measure(kind, Impl.JDK_NONFAIR.label(), n, rounds, jdkBlocking(virtual, false)));
            results.add(measure(kind, Impl.JDK_FAIR.label(), n, rounds, jdkBlocking(virtual, true)));
        }
        print(results, rounds);
    }

    // ---------------------------------------------------------------- measuring

    /** Extra rounds allowed, beyond one warm-up and {@code rounds}, for the readings to settle. */
    private static final int MAX_EXTRA_ROUNDS = 12;

    /** Keeps the waiters of the case being measured reachable whatever the JIT decides about locals. */
    private static volatile Object retained;

    private static Result measure(String kind, String impl, int n, int rounds, Case c) throws Exception {
        // Round 0 warms up (class loading, JIT) and is not counted. A parked virtual thread's frames are
        // copied to the heap, and interpreted or C1-compiled frames are larger than C2-compiled ones, so
        // virtual-thread cases warm up with enough threads for the acquire path to reach C2. Then rounds
        // repeat until the last `rounds` readings agree: the first platform-thread rounds in a fresh JVM
        // read low for a few seconds (memory of earlier work being freed meanwhile, the cause not pinned
        // down), then settle on the same figure round after round.
        int warmN = kind.startsWith("virtual") ? Math.max(n, 50_000) : n;
        List<Double> readings = new ArrayList<>();
        boolean settled = false;
        for (int r = 0; r <= rounds + MAX_EXTRA_ROUNDS && !settled; r++) {
            int size = r == 0 ? warmN : n;
            c.prepare(size);
            Object[] keep = new Object[size];
            retained = keep;
            long before = usedAfterGc();
            c.fill(keep);
            long after = usedAfterGc();
            c.clear(keep);
            retained = null;
            if (r > 0) {
                readings.add((double) (after - before) / size);
                int window = Math.max(rounds, 2); // one reading alone proves nothing
                settled = readings.size() >= window && agree(readings.subList(readings.size() - window,
                        readings.size()));
            }
        }
        double[] last = readings.subList(readings.size() - rounds, readings.size()).stream()
                .mapToDouble(Double::doubleValue).sorted().toArray();
        Result result = new Result(kind, impl, n, last[rounds / 2], last[0], last[rounds - 1], settled);
        System.err.printf(Locale.ROOT, "%-16s %-30s n=%-7d %8.1f B/waiter%s (all rounds: %s)%n", kind, impl, n,
                result.bytesPerWaiter(), settled ? "" : " UNSETTLED", readings);
        return result;
    }

    /** Whether the readings agree within 2 % or 4 bytes per waiter, whichever is larger. */
    private static boolean agree(List<Double> readings) {
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        for (double d : readings) {
            min = Math.min(min, d);
            max = Math.max(max, d);
        }
        return max - min <= Math.max(4.0, 0.02 * Math.abs(max));
    }

    /**
     * The used heap after a full collection, polled every 50 ms until three readings in a row agree within
     * 1 KiB (at most 3 s): the JVM tears down ended platform threads asynchronously, and memory freed that
     * way would otherwise be missing from a later reading. Needs a GC whose figures are exact after a
     * full collection: Parallel GC is (Serial GC in JDK 25 leaves the young generation's figure stale).
     */
    private static long usedAfterGc() throws InterruptedException {
        long[] last = {Long.MAX_VALUE, Long.MIN_VALUE, 0};
        for (int i = 0; i < 60; i++) {
            if (i > 0) {
                Thread.sleep(50);
            }
            System.gc();
            last[i % 3] = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            long max = Math.max(last[0], Math.max(last[1], last[2]));
            long min = Math.min(last[0], Math.min(last[1], last[2]));
            if (i >= 2 && max - min <= 1024) {
                return last[i % 3];
            }
        }
        System.err.println("warning: the used heap did not settle within 3 s");
        return last[2];
    }

    /** Waits (bounded) until {@code done} holds for every index below {@code n}. */
    private static void awaitAll(String what, int n, IntPredicate done) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        int i = 0;
        while (i < n) {
            if (done.test(i)) {
                i++;
            } else if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("timed out waiting for " + what + " (" + i + " of " + n + ")");
            } else {
                Thread.onSpinWait();
                Thread.yield();
            }
        }
    }

    private static void awaitParked(Object[] keep) throws InterruptedException {
        awaitAll("threads to park", keep.length, i -> ((Thread) keep[i]).getState() == Thread.State.WAITING);
    }

    /**
     * Joins every thread, then (for platform threads) waits until the JVM has dropped them from its live
     * thread list: a platform thread's {@code Thread} object stays reachable from the JVM for a moment
     * after {@code join} returns, and would otherwise be freed during the next case's measurement.
     */
    private static void joinAll(Object[] keep) throws InterruptedException {
        for (Object t : keep) {
            ((Thread) t).join();
        }
        int before = platformThreadsBefore;
        if (before >= 0) {
            awaitAll("ended platform threads to leave the JVM", 1,
                    i -> ManagementFactory.getThreadMXBean().getThreadCount() <= before);
        }
    }

    /** The live platform threads when the current case's platform threads were started; -1 for virtual. */
    private static int platformThreadsBefore;

    /** Starts one thread per slot of {@code keep}, each running {@code task}. */
    private static void started(boolean virtual, Object[] keep, Runnable task) {
        platformThreadsBefore = virtual ? -1 : ManagementFactory.getThreadMXBean().getThreadCount();
        for (int i = 0; i < keep.length; i++) {
            keep[i] = virtual ? Thread.ofVirtual().start(task) : Thread.ofPlatform().start(task);
        }
    }

    // ---------------------------------------------------------------- cases

    private static Semaphore emptySema(int n) {
        return Semaphore.builder().permits(0).maxPermits(n).fairness(Fairness.FIFO).build();
    }

    private static Case semaAsync() {
        return new Case() {
            private Semaphore s;

            @Override
            public void prepare(int n) {
                s = emptySema(n);
            }

            @Override
            public void fill(Object[] keep) {
                for (int i = 0; i < keep.length; i++) {
                    keep[i] = s.acquireAsync(1);
                }
                Verify.state(s.queueLength() == keep.length, "Sema: not every async waiter is queued");
            }

            @Override
            public void clear(Object[] keep) {
                s.close();
                s = null;
            }
        };
    }

    private static Case asyncutil() {
        return new Case() {
            private FairAsyncSemaphore s;

            @Override
            public void prepare(int n) {
                s = new FairAsyncSemaphore(0);
            }

            @Override
            public void fill(Object[] keep) {
                for (int i = 0; i < keep.length; i++) {
                    keep[i] = s.acquire(1);
                }
                Verify.state(s.getQueueLength() == keep.length, "asyncutil: not every async waiter is queued");
            }

            @Override
            public void clear(Object[] keep) {
                s = null;
            }
        };
    }

    private static Case handWritten() {
        return new Case() {
            private LockedQueueSemaphore s;

            @Override
            public void prepare(int n) {
                s = new LockedQueueSemaphore(0);
            }

            @Override
            public void fill(Object[] keep) {
                for (int i = 0; i < keep.length; i++) {
                    keep[i] = s.acquire(1);
                }
                Verify.state(s.queueLength() == keep.length, "hand-written: not every async waiter is queued");
            }

            @Override
            public void clear(Object[] keep) {
                s = null;
            }
        };
    }

    private static Case bareParked(boolean virtual) {
        return new Case() {
            private volatile boolean released;

            @Override
            public void prepare(int n) {
                released = false;
            }

            @Override
            public void fill(Object[] keep) throws InterruptedException {
                Runnable task = () -> {
                    while (!released) {
                        LockSupport.park(this);
                    }
                };
                started(virtual, keep, task);
                awaitParked(keep);
            }

            @Override
            public void clear(Object[] keep) throws InterruptedException {
                released = true;
                for (Object t : keep) {
                    LockSupport.unpark((Thread) t);
                }
                joinAll(keep);
            }
        };
    }

    private static Case semaBlocking(boolean virtual) {
        return new Case() {
            private Semaphore s;

            @Override
            public void prepare(int n) {
                s = emptySema(n);
            }

            @Override
            public void fill(Object[] keep) throws InterruptedException {
                Semaphore sem = s;
                Runnable task = () -> {
                    try (Permit p = sem.acquire(1)) {
                        Verify.state(p.permits() == 1, "Sema: wrong grant");
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                };
                started(virtual, keep, task);
                awaitAll("Sema waiters to queue", 1, i -> sem.queueLength() == keep.length);
                awaitParked(keep);
            }

            @Override
            public void clear(Object[] keep) throws InterruptedException {
                s.addPermits(keep.length);
                joinAll(keep);
                Verify.state(s.availablePermits() == keep.length, "Sema: permits missing after the case");
                s = null;
            }
        };
    }

    private static Case jdkBlocking(boolean virtual, boolean fair) {
        return new Case() {
            private java.util.concurrent.Semaphore s;

            @Override
            public void prepare(int n) {
                s = new java.util.concurrent.Semaphore(0, fair);
            }

            @Override
            public void fill(Object[] keep) throws InterruptedException {
                java.util.concurrent.Semaphore sem = s;
                Runnable task = () -> {
                    try {
                        sem.acquire(1);
                        sem.release(1);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                };
                started(virtual, keep, task);
                awaitAll("JDK waiters to queue", 1, i -> sem.getQueueLength() == keep.length);
                awaitParked(keep);
            }

            @Override
            public void clear(Object[] keep) throws InterruptedException {
                s.release(keep.length);
                joinAll(keep);
                Verify.state(s.availablePermits() == keep.length, "JDK: permits missing after the case");
                s = null;
            }
        };
    }

    // ---------------------------------------------------------------- output

    private static void print(List<Result> results, int rounds) {
        StringBuilder gcs = new StringBuilder();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs.append(gcs.isEmpty() ? "" : ", ").append(gc.getName());
        }
        StringBuilder out = new StringBuilder();
        out.append("JVM: ").append(System.getProperty("java.vm.name")).append(' ')
                .append(System.getProperty("java.runtime.version")).append("; GC: ").append(gcs)
                .append("; max heap ").append(Runtime.getRuntime().maxMemory() >> 20).append(" MiB; JVM flags: `")
                .append(String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()))
                .append("`; median of the last ").append(rounds)
                .append(" rounds, which agree within 2 % (or 4 B) unless marked unsettled.\n\n");
        out.append("| waiter | implementation | N | heap bytes per waiter (median) | min - max | minus bare park |\n");
        out.append("|---|---|---:|---:|---:|---:|\n");
        for (Result r : results) {
            String extra = "";
            if (!r.kind().startsWith("async") && !r.impl().startsWith("bare")) {
                for (Result base : results) {
                    if (base.kind().equals(r.kind()) && base.impl().startsWith("bare")) {
                        extra = String.format(Locale.ROOT, "%.0f", r.bytesPerWaiter() - base.bytesPerWaiter());
                    }
                }
            }
            out.append(String.format(Locale.ROOT, "| %s | %s | %d | %.0f%s | %.0f - %.0f | %s |%n", r.kind(),
                    r.impl(), r.n(), r.bytesPerWaiter(), r.settled() ? "" : " (unsettled)", r.min(), r.max(),
                    extra));
        }
        System.out.print(out);
    }
}
