package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.ParallelTest.Form;
import dev.sema.ParallelTest.LiveItems;
import dev.sema.ParallelTest.Outcome;
import dev.sema.ParallelTest.Probe;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Parallel runs with random sizes, limits, weights, failures and caller interrupts, across every form.
 * Checks throughout: calls (and weights) at once within the limit; at the end, the thrown exception and
 * its suppressed ones are exactly the genuine failures, nothing runs after a blocking form returned, and
 * every permit is back. The seed is printed; rerun one with {@code -Dsema.seed=...}.
 */
@Tag("stress")
class ParallelStressTest {

    @Test
    @Timeout(300)
    void randomFailuresAcrossForms() throws Exception {
        long seed = Long.getLong("sema.seed", System.nanoTime());
        System.out.println("ParallelStressTest.randomFailuresAcrossForms seed " + seed);
        for (int round = 0; round < 400; round++) {
            Random random = new Random(seed + round);
            Form form = Form.values()[random.nextInt(Form.values().length)];
            String label = "seed " + seed + " round " + round + " " + form;
            AtomicReference<Throwable> roundFailure = new AtomicReference<>();
            // a fresh thread per round: an interrupt that arrives after the run ended stays there
            Thread t = Thread.ofVirtual().start(() -> {
                try {
                    failureRound(random, form, label);
                } catch (Throwable e) {
                    roundFailure.set(e);
                }
            });
            t.join(TimeUnit.SECONDS.toMillis(60));
            assertThat(t.isAlive()).as("%s is stuck", label).isFalse();
            if (roundFailure.get() != null) {
                // the cause in the message too: a build summary prints only the message
                throw new AssertionError(label + ": " + roundFailure.get(), roundFailure.get());
            }
        }
    }

    private void failureRound(Random random, Form form, String label) throws Exception {
        int limit = 1 + random.nextInt(8);
        int n = random.nextInt(300);
        double failureRate = random.nextInt(3) == 0 ? 0 : random.nextDouble() * 0.05;
        boolean interrupt = form != Form.MAP_ASYNC && random.nextInt(4) == 0;
        long interruptAfterCalls = random.nextInt(Math.max(1, n));
        long[] plan = random.longs(n).toArray();
        Probe probe = new Probe();
        Set<Throwable> thrownByCalls = Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));

        ThrowingFunction<Integer, Object> fn = i -> {
            probe.enter();
            try {
                Random r = new Random(plan[i]);
                for (int k = r.nextInt(4); k > 0; k--) {
                    Thread.yield();
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw new InterruptedException("cancelled");
                }
                if (r.nextDouble() < failureRate) {
                    Exception failure = switch (r.nextInt(3)) {
                        case 0 -> new IllegalStateException("call " + i);
                        case 1 -> new IOException("call " + i);
                        default -> new UnsupportedOperationException("call " + i);
                    };
                    thrownByCalls.add(failure);
                    throw failure;
                }
                return i % 5 == 0 ? null : i;
            } finally {
                probe.leave();
            }
        };

        Thread caller = Thread.currentThread();
        AtomicBoolean done = new AtomicBoolean();
        Thread interrupter = null;
        if (interrupt) {
            interrupter = Thread.ofVirtual().start(() -> {
                while (!done.get() && probe.calls.get() < interruptAfterCalls) {
                    Thread.onSpinWait();
                }
                if (!done.get()) {
                    caller.interrupt();
                }
            });
        }
        Outcome out = ParallelTest.outcome(form, ParallelTest.range(n), limit, fn);
        int runningAfter = probe.inFlight.get();
        done.set(true);
        if (interrupter != null) {
            // the interrupter may have read done before it was set and interrupt this join: keep waiting
            while (true) {
                try {
                    interrupter.join();
                    break;
                } catch (InterruptedException late) {
                    // cleared by the catch; the run is over, so it is not this round's business
                }
            }
        }
        Thread.interrupted(); // an interrupt that came after the run is not this round's business

        assertThat(probe.max.get()).as("%s: calls at once", label).isLessThanOrEqualTo(limit);
        if (form != Form.MAP_ASYNC) {
            assertThat(runningAfter).as("%s: calls running after the return", label).isZero();
        }
        Throwable thrown = out.thrown();
        if (thrown == null) {
            assertThat(thrownByCalls).as(label).isEmpty();
            if (form.collects()) {
                List<Object> expected = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    expected.add(i % 5 == 0 ? null : i);
                }
                assertThat(out.results()).as(label).isEqualTo(expected);
            }
            return;
        }
        List<Throwable> reported = new ArrayList<>(Arrays.asList(thrown.getSuppressed()));
        if (thrown instanceof InterruptedException) {
            assertThat(interrupt).as("%s: interrupted without an interrupt", label).isTrue();
        } else {
            Throwable primary = thrown instanceof CompletionException && thrown.getCause() != null
                    ? thrown.getCause() : thrown;
            if (primary instanceof IOException) {
                assertThat(thrown).as(label).isExactlyInstanceOf(CompletionException.class);
            }
            reported.add(primary);
        }
        assertThat(reported).as("%s: reported failures are distinct", label).doesNotHaveDuplicates();
        if (form == Form.MAP_ASYNC) {
            // stages cancelled by the stop may still fail afterwards, where nobody can report it; such a
            // late failure may be added while this reads, so read a copy taken under the set's lock
            List<Throwable> thrownSoFar;
            synchronized (thrownByCalls) {
                thrownSoFar = new ArrayList<>(thrownByCalls);
            }
            assertThat(thrownSoFar).as(label).containsAll(reported);
        } else {
            assertThat(reported).as("%s: exactly the genuine failures", label)
                    .containsExactlyInAnyOrderElementsOf(thrownByCalls);
        }
    }

    @Test
    @Timeout(300)
    void randomWeightsStayWithinTheBudget() throws Exception {
        long seed = Long.getLong("sema.seed", System.nanoTime());
        System.out.println("ParallelStressTest.randomWeightsStayWithinTheBudget seed " + seed);
        Semaphore shared = Semaphore.builder().permits(12).maxPermits(16).fairness(Fairness.FIFO).build();
        AtomicLong inUse = new AtomicLong();
        AtomicLong maxInUse = new AtomicLong();
        List<Thread> runs = new ArrayList<>();
        ArrayList<Throwable> errors = new ArrayList<>();
        for (int run = 0; run < 6; run++) {
            Random random = new Random(seed + run);
            int n = 500 + random.nextInt(500);
            long[] weights = random.longs(n, 0, 13).toArray();
            boolean fails = random.nextBoolean();
            int failAt = random.nextInt(n);
            runs.add(Thread.ofVirtual().start(() -> {
                try {
                    List<Integer> results = Parallel.mapWeighted(ParallelTest.range(n), shared, i -> weights[i],
                            i -> {
                                long w = weights[i];
                                maxInUse.accumulateAndGet(inUse.addAndGet(w), Math::max);
                                try {
                                    Thread.yield();
                                    if (fails && i == failAt) {
                                        throw new IllegalStateException("planned");
                                    }
                                    return i;
                                } finally {
                                    inUse.addAndGet(-w);
                                }
                            });
                    assertThat(fails).as("seed %d: a planned failure was not thrown", seed).isFalse();
                    assertThat(results).isEqualTo(ParallelTest.range(n));
                } catch (IllegalStateException e) {
                    if (!fails || !"planned".equals(e.getMessage())) {
                        synchronized (errors) {
                            errors.add(e);
                        }
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            }));
        }
        // resize while the runs go on: the budget is the current limit, never more than the ceiling
        Random resizer = new Random(seed);
        while (runs.stream().anyMatch(Thread::isAlive)) {
            shared.setPermits(12 + resizer.nextInt(5));
            LockSupport.parkNanos(100_000); // pacing, not coordination
        }
        for (Thread t : runs) {
            t.join();
        }
        assertThat(errors).as("seed %d", seed).isEmpty();
        assertThat(maxInUse.get()).as("seed %d", seed).isLessThanOrEqualTo(16);
        assertThat(shared.availablePermits()).isEqualTo(shared.permits());
        ((LocalSemaphore) shared).checkInvariants();
    }

    @Test
    @Timeout(120)
    void mapAsyncOverTenMillionItems() {
        long n = 10_000_000;
        LiveItems items = new LiveItems(n);
        List<Object> results = Parallel.mapAsync(items, 8, i -> {
            items.finished();
            return CompletableFuture.<Object>completedFuture(i % 2 == 0 ? null : i);
        }).join();
        assertThat(results).hasSize((int) n);
        assertThat(results.get((int) n - 1)).isEqualTo((int) n - 1);
        assertThat(items.maxLive.get()).isLessThanOrEqualTo(8);
    }

    @Test
    @Timeout(300)
    void forEachOverTenMillionItemsRunsInASixteenMegabyteHeap() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path log = Files.createTempFile("sema-small-heap", ".log"); // a file, so a chatty child never blocks
        Process child = new ProcessBuilder(java.toString(), "-Xmx16m", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"), SmallHeapRun.class.getName(), "10000000", "8")
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        boolean exited = child.waitFor(280, TimeUnit.SECONDS);
        if (!exited) {
            child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        Files.deleteIfExists(log);
        System.out.println("small-heap run: " + output.strip());
        assertThat(exited).as("the child finished in time").isTrue();
        assertThat(child.exitValue()).as(output).isZero();
        assertThat(output).contains("ok taken=10000000");
    }

    /** Run in a child JVM with a tiny heap; exits non-zero on any failure. */
    static final class SmallHeapRun {
        public static void main(String[] args) throws Exception {
            long n = Long.parseLong(args[0]);
            int limit = Integer.parseInt(args[1]);
            LiveItems items = new LiveItems(n);
            AtomicLong sum = new AtomicLong();
            Parallel.forEach(items, limit, i -> {
                sum.addAndGet(i);
                items.finished();
            });
            if (items.taken.get() != n || sum.get() != n * (n - 1) / 2 || items.maxLive.get() > limit + 1) {
                System.out.println("FAILED taken=" + items.taken.get() + " sum=" + sum.get() + " maxLive="
                        + items.maxLive.get());
                System.exit(1);
            }
            System.out.println("ok taken=" + items.taken.get() + " maxLive=" + items.maxLive.get()
                    + " maxHeap=" + Runtime.getRuntime().maxMemory() / (1024 * 1024) + "MB");
        }
    }
}
