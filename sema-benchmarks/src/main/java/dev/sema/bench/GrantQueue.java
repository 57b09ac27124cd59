package dev.sema.bench;

import java.util.function.Consumer;

/**
 * A single-threaded run queue of grants (which may be {@code null}): the async benchmarks' continuations
 * only {@link #accept} their grant here, and the benchmark loop takes it back out, releases it and
 * issues the next request. So no continuation releases inline, the stack stays flat whatever the
 * implementation does on completion, and every implementation runs the same continuation.
 */
final class GrantQueue implements Consumer<Object> {
    private Object[] items = new Object[64];
    private int head;
    private int size;
    private long accepted;

    @Override
    public void accept(Object grant) {
        if (size == items.length) {
            grow();
        }
        items[(head + size) & (items.length - 1)] = grant;
        size++;
        accepted++;
    }

    boolean isEmpty() {
        return size == 0;
    }

    int size() {
        return size;
    }

    /** How many grants were ever accepted. */
    long accepted() {
        return accepted;
    }

    Object poll() {
        if (size == 0) {
            throw new IllegalStateException("no grant is ready: a request was never granted");
        }
        Object grant = items[head];
        items[head] = null;
        head = (head + 1) & (items.length - 1);
        size--;
        return grant;
    }

    private void grow() {
        Object[] bigger = new Object[items.length * 2];
        for (int i = 0; i < size; i++) {
            bigger[i] = items[(head + i) & (items.length - 1)];
        }
        items = bigger;
        head = 0;
    }
}
