package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.internal.PartitionSpec;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Random sequences of requests, releases, cancels, tryAcquires and resizes on a partitioned semaphore, each
 * step compared with a reference model written from API.md §11a's words rather than from the engine: after
 * every step the same requests must have been granted, with the same permits held per partition. Async
 * requests complete on the releasing thread, so the comparison needs no timing.
 *
 * <p>The model serves in two phases, as the contract states them: first, in priority order, the heads that
 * fit in what their partition is owed (earmarking what each such partition is owed as it goes); then the
 * highest-priority waiting head, from what it is owed plus what nobody's earmark claims, and nothing below a
 * head that does not fit.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PartitionsModelTest {
    private static final long SEED = Long.getLong("sema.seed", System.nanoTime());

    @Test
    void theEngineGrantsWhatTheModelGrantsAtEveryStep() {
        System.out.println("PartitionsModelTest seed " + SEED + " (-Dsema.seed=" + SEED + " replays it)");
        SplittableRandom random = new SplittableRandom(SEED);
        for (int run = 0; run < 300; run++) {
            runOnce(random.split(), 200);
        }
    }

    /** One random sequence; throws AssertionError at the first step where engine and model disagree. */
    static void runOnce(SplittableRandom random, int steps) {
        int n = 1 + random.nextInt(4);
        List<String> names = new ArrayList<>();
        List<Double> shares = new ArrayList<>();
        int left = 100;
        for (int i = 0; i < n; i++) {
            int pct = 1 + random.nextInt(Math.max(1, left - (n - i - 1)));
            pct = Math.min(pct, left - (n - i - 1));
            if (pct <= 0) {
                break;
            }
            left -= pct;
            names.add("p" + i);
            shares.add(pct / 100.0);
        }
        long limit = 1 + random.nextInt(12);
        Semaphore.Builder b = Semaphore.builder().name("m").permits(limit).maxPermits(16);
        for (int i = 0; i < names.size(); i++) {
            b.partition(names.get(i), shares.get(i));
        }
        Semaphore parent = b.build();
        Model model = new Model(PartitionSpec.of("m", names, shares), limit);
        int slots = names.size() + 1;
        Map<Integer, CompletableFuture<Permit>> futures = new HashMap<>();
        Map<Integer, Permit> permits = new HashMap<>();
        Map<Integer, Integer> slotOf = new HashMap<>();
        int nextId = 0;
        StringBuilder trace = new StringBuilder();
        for (int step = 0; step < steps; step++) {
            int op = random.nextInt(10);
            if (op < 4) { // an async request
                int slot = random.nextInt(slots);
                long want = 1 + random.nextInt(5);
                int id = nextId++;
                trace.append("acquire#").append(id).append(" ").append(slot).append(" ").append(want).append("; ");
                futures.put(id, view(parent, names, slot).acquireAsync(want));
                slotOf.put(id, slot);
                model.request(id, slot, want);
            } else if (op < 6 && !permits.isEmpty()) { // a release, whole or part
                int id = pick(random, permits.keySet());
                Permit p = permits.get(id);
                long part = 1 + random.nextInt((int) p.permits());
                trace.append("release#").append(id).append(" ").append(part).append("; ");
                p.release(part);
                if (p.permits() == 0) {
                    permits.remove(id);
                }
                model.release(slotOf.get(id), part);
            } else if (op < 7 && !futures.isEmpty()) { // a cancel of a waiting request
                int id = pick(random, futures.keySet());
                trace.append("cancel#").append(id).append("; ");
                if (futures.get(id).cancel(false)) {
                    model.cancel(id);
                }
            } else if (op < 8) { // a tryAcquire
                int slot = random.nextInt(slots);
                long want = 1 + random.nextInt(4);
                trace.append("try ").append(slot).append(" ").append(want).append("; ");
                Optional<Permit> got = view(parent, names, slot).tryAcquire(want);
                boolean expected = model.tryAcquire(slot, want);
                assertThat(got.isPresent()).as("tryAcquire(%s) on slot %s after %s", want, slot, trace)
                        .isEqualTo(expected);
                if (got.isPresent()) {
                    int id = nextId++;
                    permits.put(id, got.get());
                    slotOf.put(id, slot);
                }
            } else if (op < 9) { // a resize
                long to = random.nextInt(17);
                trace.append("setPermits ").append(to).append("; ");
                parent.setPermits(to);
                model.setLimit(to);
            } else if (!permits.isEmpty()) { // a forget
                int id = pick(random, permits.keySet());
                Permit p = permits.remove(id);
                trace.append("forget#").append(id).append("; ");
                long held = p.permits();
                p.forget();
                model.forget(slotOf.get(id), held);
            }
            // what completed must be what the model granted
            for (var it = futures.entrySet().iterator(); it.hasNext(); ) {
                var e = it.next();
                if (e.getValue().isCancelled()) {
                    it.remove();
                } else if (e.getValue().isDone()) {
                    assertThat(model.granted).as("granted #%s after %s", e.getKey(), trace).contains(e.getKey());
                    permits.put(e.getKey(), e.getValue().join());
                    it.remove();
                }
            }
            for (int id : model.granted) {
                assertThat(futures).as("the model granted #%s but the engine did not, after %s", id, trace)
                        .doesNotContainKey(id);
            }
            model.granted.clear();
            model.checkLive(trace);
            assertThat(((LocalSemaphore) parent).group.heldForTests().values())
                    .as("held per slot after %s", trace).containsExactlyElementsOf(model.heldList());
            ((LocalSemaphore) parent).checkInvariants();
        }
        // a cancel may let requests behind it through: those are granted, and their permits closed too
        futures.values().forEach(f -> f.cancel(false));
        futures.values().stream().filter(f -> !f.isCancelled()).forEach(f -> f.join().close());
        permits.values().forEach(Permit::close);
        assertThat(parent.availablePermits()).isEqualTo(parent.permits());
    }

    private static Semaphore view(Semaphore parent, List<String> names, int slot) {
        return slot == names.size() ? parent : parent.partition(names.get(slot));
    }

    private static int pick(SplittableRandom random, Set<Integer> ids) {
        List<Integer> list = new ArrayList<>(ids);
        return list.get(random.nextInt(list.size()));
    }

    /** The reference: §11a's rules, served in the two phases the contract names. */
    static final class Model {
        private final PartitionSpec spec;
        private long limit;
        private final long[] held;
        private final List<Deque<long[]>> queues = new ArrayList<>(); // {id, permits}
        final Set<Integer> granted = new HashSet<>();

        Model(PartitionSpec spec, long limit) {
            this.spec = spec;
            this.limit = limit;
            this.held = new long[spec.size() + 1];
            for (int i = 0; i <= spec.size(); i++) {
                queues.add(new ArrayDeque<>());
            }
        }

        List<Long> heldList() {
            List<Long> l = new ArrayList<>();
            for (long h : held) {
                l.add(h);
            }
            return l;
        }

        void request(int id, int slot, long permits) {
            queues.get(slot).addLast(new long[] {id, permits});
            serve();
        }

        void release(int slot, long permits) {
            held[slot] -= permits;
            serve();
        }

        void forget(int slot, long permits) {
            held[slot] -= permits;
            limit = Math.max(0, limit - permits);
            serve();
        }

        void cancel(int id) {
            for (Deque<long[]> q : queues) {
                q.removeIf(r -> r[0] == id);
            }
            serve();
        }

        void setLimit(long to) {
            limit = to;
            serve();
        }

        boolean tryAcquire(int slot, long permits) {
            if (!queues.get(slot).isEmpty()) {
                return false;
            }
            queues.get(slot).addLast(new long[] {-1, permits});
            serve();
            if (queues.get(slot).isEmpty()) {
                granted.remove(-1);
                return true;
            }
            queues.get(slot).clear();
            return false;
        }

        /**
         * No deadlock: once nothing is held, the highest waiting head asks for more than the limit (anything
         * else would have been served). Earmarks for heads that cannot use them broke this once.
         */
        void checkLive(CharSequence trace) {
            if (free() != limit) {
                return;
            }
            for (Deque<long[]> q : queues) {
                if (!q.isEmpty()) {
                    assertThat(q.peekFirst()[1]).as("nothing held, yet the top head waits, after %s", trace)
                            .isGreaterThan(limit);
                    return;
                }
            }
        }

        private long guarantee(int slot) {
            return slot < spec.size() ? spec.guarantee(slot, limit) : 0;
        }

        private long owed(int slot) {
            return Math.max(0, guarantee(slot) - held[slot]);
        }

        private long free() {
            long sum = 0;
            for (long h : held) {
                sum += h;
            }
            return limit - sum;
        }

        private void grant(int slot) {
            long[] r = queues.get(slot).removeFirst();
            held[slot] += r[1];
            granted.add((int) r[0]);
        }

        private void serve() {
            boolean again = true;
            while (again) {
                again = false;
                // guarantee first: in priority order, a head that fits in what its partition is owed, out of
                // what the heads before it that also fit in theirs have not been earmarked
                long pool = Math.max(0, free());
                for (int i = 0; i < queues.size() && !again; i++) {
                    if (queues.get(i).isEmpty()) {
                        continue;
                    }
                    long want = queues.get(i).peekFirst()[1];
                    long owed = owed(i);
                    if (want <= owed && want <= pool) {
                        grant(i);
                        again = true;
                    } else if (want <= owed) {
                        pool -= Math.min(pool, owed);
                    }
                }
                if (again) {
                    continue;
                }
                // then priority: the highest waiting head, from what it is owed and what the earmarks of the
                // heads below it that fit in theirs leave
                int top = -1;
                for (int i = 0; i < queues.size() && top < 0; i++) {
                    if (!queues.get(i).isEmpty()) {
                        top = i;
                    }
                }
                if (top < 0) {
                    break;
                }
                pool = Math.max(0, free());
                long own = Math.min(pool, owed(top));
                pool -= own;
                for (int i = top + 1; i < queues.size(); i++) {
                    if (!queues.get(i).isEmpty() && queues.get(i).peekFirst()[1] <= owed(i)) {
                        pool -= Math.min(pool, owed(i));
                    }
                }
                if (queues.get(top).peekFirst()[1] <= own + pool) {
                    grant(top);
                    again = true;
                }
            }
        }
    }
}
