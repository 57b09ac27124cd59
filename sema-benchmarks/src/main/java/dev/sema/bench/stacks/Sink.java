package dev.sema.bench.stacks;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * The end of one measured Mono: requests everything, keeps the value, and, when it has one, counts the end down
 * on a latch (and an error on a counter). Cheaper than {@code block()} or a lambda subscriber, and the same for
 * every contender.
 */
final class Sink implements CoreSubscriber<Integer> {
    private final CountDownLatch done;
    private final AtomicInteger failed;
    int value;
    Throwable error;

    Sink(CountDownLatch done, AtomicInteger failed) {
        this.done = done;
        this.failed = failed;
    }

    @Override
    public void onSubscribe(Subscription s) {
        s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(Integer v) {
        value = v;
    }

    @Override
    public void onError(Throwable t) {
        error = t;
        if (failed != null) {
            failed.incrementAndGet();
        }
        if (done != null) {
            done.countDown();
        }
    }

    @Override
    public void onComplete() {
        if (done != null) {
            done.countDown();
        }
    }
}
