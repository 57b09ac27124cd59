package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Platform and virtual threads enter, leave and close one gate at once. Checks throughout: no pass opens
 * once a thread saw the gate closed, and the close futures complete only when the work of every pass is
 * over; at the end, every pass is counted out and the invariants hold. The seed is printed; rerun one with
 * {@code -Dsema.seed=...}.
 */
@Tag("stress")
@Timeout(120)
class GateStressTest {

    private static final int MAX_ENTRIES_PER_THREAD = 5_000;

    @Test
    void enterLeaveAndCloseRace() throws Exception {
        long seed = Long.getLong("sema.seed", System.nanoTime());
        System.out.println("GateStressTest seed " + seed);
        for (int round = 0; round < 200; round++) {
            runRound(new Random(seed + round), "seed " + seed + " round " + round);
        }
    }

    private void runRound(Random random, String label) throws Exception {
        Gate gate = new Gate("stress");
        int threads = 2 + random.nextInt(7);
        int closers = 1 + random.nextInt(3);
        long closeAfter = random.nextInt(threads * MAX_ENTRIES_PER_THREAD / 2);
        AtomicLong entered = new AtomicLong();
        AtomicLong working = new AtomicLong(); // passes whose work has not finished yet
        AtomicInteger workersDone = new AtomicInteger();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<CompletableFuture<Void>> closeFutures = new ArrayList<>();
        List<Thread> all = new ArrayList<>();

        for (int t = 0; t < threads; t++) {
            long threadSeed = random.nextLong();
            Runnable worker = () -> {
                Random r = new Random(threadSeed);
                await(start);
                // Bounded: a thread that never blocks must not keep a carrier (or a core) for good.
                for (int i = 0; i < MAX_ENTRIES_PER_THREAD; i++) {
                    boolean sawClosed = gate.isClosed();
                    Optional<Gate.Pass> pass;
                    if (r.nextBoolean()) {
                        pass = gate.tryEnter();
                    } else {
                        try {
                            pass = Optional.of(gate.enter());
                        } catch (GateClosedException e) {
                            pass = Optional.empty();
                        }
                    }
                    if (pass.isEmpty()) {
                        if (!gate.isClosed()) {
                            errors.add("refused entry to an open gate");
                        }
                        return;
                    }
                    if (sawClosed) {
                        errors.add("entered after the gate was seen closed");
                    }
                    entered.incrementAndGet();
                    working.incrementAndGet();
                    for (int k = r.nextInt(4); k > 0; k--) {
                        Thread.yield();
                    }
                    working.decrementAndGet();
                    pass.get().close();
                    if (r.nextInt(4) == 0) {
                        pass.get().close(); // idempotent
                    }
                }
                workersDone.incrementAndGet();
            };
            all.add(t % 2 == 0 ? Thread.ofPlatform().unstarted(worker) : Thread.ofVirtual().unstarted(worker));
        }
        for (int c = 0; c < closers; c++) {
            CompletableFuture<Void> mine = new CompletableFuture<>();
            closeFutures.add(mine);
            Runnable closer = () -> {
                await(start);
                while (entered.get() < closeAfter && !gate.isClosed() && workersDone.get() < threads) {
                    // Parks rather than yields: a virtual thread that only yields can keep its carrier from the
                    // workers just released by the start latch, and the round stalls (2 carriers on 2 cores).
                    LockSupport.parkNanos(10_000);
                }
                gate.close().whenComplete((v, e) -> {
                    if (working.get() != 0 || gate.inside() != 0) {
                        errors.add("close completed with " + working.get() + " still working, inside "
                                + gate.inside());
                    }
                    mine.complete(null);
                });
            };
            all.add(c % 2 == 0 ? Thread.ofVirtual().unstarted(closer) : Thread.ofPlatform().unstarted(closer));
        }
        all.forEach(Thread::start);
        start.countDown();
        for (Thread t : all) {
            t.join(TimeUnit.SECONDS.toMillis(30));
            if (t.isAlive()) {
                StringBuilder dump = new StringBuilder();
                for (Thread s : all) {
                    dump.append(s).append(' ').append(s.getState()).append('\n');
                    for (StackTraceElement e : s.getStackTrace()) {
                        dump.append("    at ").append(e).append('\n');
                    }
                }
                throw new AssertionError(label + ": a thread is stuck; entered " + entered + ", " + gate
                        + ", errors " + errors + "\n" + dump);
            }
        }
        CompletableFuture.allOf(closeFutures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        assertThat(errors).as(label).isEmpty();
        assertThat(gate.inside()).as(label).isZero();
        assertThat(gate.isClosed()).isTrue();
        gate.checkInvariants();
    }

    @Test
    void manyPassesClosedConcurrentlyCountOutExactly() throws Exception {
        Gate gate = new Gate("bulk");
        int n = 100_000;
        List<Gate.Pass> passes = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            passes.add(gate.enter());
        }
        CompletableFuture<Void> closed = gate.close();
        AtomicInteger next = new AtomicInteger();
        List<Thread> closers = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Runnable r = () -> {
                // every pass is closed by two threads: each must leave once
                for (int i; (i = next.getAndIncrement()) < 2 * n; ) {
                    passes.get(i % n).close();
                }
            };
            closers.add(t % 2 == 0 ? Thread.ofPlatform().start(r) : Thread.ofVirtual().start(r));
        }
        for (Thread t : closers) {
            t.join();
        }
        closed.get(10, TimeUnit.SECONDS);
        assertThat(gate.inside()).isZero();
        gate.checkInvariants();
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
