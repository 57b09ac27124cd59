package dev.sema;

import static dev.sema.Waiting.checkInvariants;
import static dev.sema.Waiting.result;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every permit leaves exactly once when two threads race on one Permit, for each kind of Permit a grant
 * can deliver: a blocking grant ({@link PlainPermit}), an async request granted after queueing (the
 * {@link Waiter} itself) or at once (a {@link ReadyPermit}). Their counts are kept by different means
 * (a monitor, atomic exchanges), so each kind runs every race. {@link Kind#grant} checks that it delivered
 * the kind it names, so no kind passes by testing another.
 */
class PermitRaceTest {
    private final ExecutorService pool = Executors.newFixedThreadPool(2);

    @AfterEach
    void tearDown() throws InterruptedException {
        pool.shutdownNow();
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }

    /** How the Permit under test is granted. */
    enum Kind {
        BLOCKING {
            @Override
            Permit grant(Semaphore s, long n) throws Exception {
                return s.acquire(n);
            }
        },
        QUEUED_ASYNC {
            @Override
            Permit grant(Semaphore s, long n) throws Exception {
                Permit blocker = s.acquire(s.availablePermits()); // so that the request queues
                CompletableFuture<Permit> f = s.acquireAsync(n);
                assertThat(f).isNotDone();
                blocker.close();
                Permit p = result(f);
                assertThat(p).as("a queued request is its own grant").isSameAs(f);
                return p;
            }
        },
        READY_ASYNC {
            @Override
            Permit grant(Semaphore s, long n) {
                return s.acquireAsync(n).join();
            }
        };

        private static final List<Class<?>> DELIVERS = List.of(PlainPermit.class, Waiter.class, ReadyPermit.class);

        abstract Permit grant(Semaphore s, long n) throws Exception;

        /** A Permit of this kind holding {@code n} of {@code s}'s permits (fewer than are free stay free). */
        Permit of(Semaphore s, long n) throws Exception {
            Permit p = grant(s, n);
            assertThat(p).isExactlyInstanceOf(DELIVERS.get(ordinal()));
            assertThat(p.permits()).isEqualTo(n);
            return p;
        }
    }

    /** One side of a race, or one round of a test. */
    @FunctionalInterface
    private interface Step {
        void run() throws Exception;
    }

    /** Runs {@code a} and {@code b} on two threads released together; returns when both are done. */
    private void race(Step a, Step b) throws Exception {
        CyclicBarrier start = new CyclicBarrier(2);
        Future<?> fa = pool.submit(() -> {
            start.await();
            a.run();
            return null;
        });
        Future<?> fb = pool.submit(() -> {
            start.await();
            b.run();
            return null;
        });
        fa.get(Waiting.PATIENCE.toSeconds(), TimeUnit.SECONDS);
        fb.get(Waiting.PATIENCE.toSeconds(), TimeUnit.SECONDS);
    }

    /** Runs {@code round} 300 times; after each, every one of {@code s}'s permits is back, exactly once. */
    private static void rounds(Semaphore s, Step round) throws Exception {
        long all = s.permits();
        for (int i = 0; i < 300; i++) {
            round.run();
            assertThat(s.availablePermits()).as("iteration %d", i).isEqualTo(all);
            checkInvariants(s);
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void racingClosesReleaseOnce(Kind kind) throws Exception {
        Semaphore s = Semaphore.create(3);
        rounds(s, () -> {
            Permit p = kind.of(s, 2);
            race(p::close, p::close);
            assertThat(p.permits()).isZero();
        });
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void racingPartialReleasesGiveBackExactlyWhatWasHeld(Kind kind) throws Exception {
        Semaphore s = Semaphore.create(1000);
        Permit p = kind.of(s, 1000);
        race(() -> {
            for (int i = 0; i < 500; i++) {
                p.release(1);
            }
        }, () -> {
            for (int i = 0; i < 250; i++) {
                p.release(2);
            }
        });
        assertThat(p.permits()).isZero();
        assertThat(s.availablePermits()).isEqualTo(1000);
        assertThatThrownBy(() -> p.release(1)).isInstanceOf(IllegalArgumentException.class);
        checkInvariants(s);
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void racingMergeAndCloseReleaseEveryPermitExactlyOnce(Kind kind) throws Exception {
        Semaphore s = Semaphore.create(4);
        rounds(s, () -> {
            Permit q = kind.of(s, 2);
            Permit p = s.acquire(2);
            race(() -> p.merge(q), q::close);
            assertThat(q.permits()).isZero();
            assertThat(p.permits()).isIn(2L, 4L);
            p.close();
        });
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void racingSplitAndCloseLoseNothing(Kind kind) throws Exception {
        Semaphore s = Semaphore.create(4);
        rounds(s, () -> {
            Permit p = kind.of(s, 4);
            List<Permit> parts = new ArrayList<>();
            race(() -> {
                try {
                    parts.add(p.split(3));
                } catch (IllegalArgumentException closedFirst) {
                    assertThat(p.permits()).isZero();
                }
            }, p::close);
            parts.forEach(Permit::close);
        });
    }
}
