package dev.sema;

/**
 * Completes async waiters with bounded recursion. Completing a future runs its continuations inline,
 * and a continuation that releases permits grants (and would complete) the next waiter: a chain of N
 * such waiters would recurse N levels deep. Up to {@link #MAX_DEPTH} nested levels complete inline (so a
 * continuation that releases and then joins a future it just let through still works); deeper ones are
 * appended to the outermost call's list on the same thread, which its loop drains. Threads never wait
 * for each other here.
 */
final class Trampoline {
    static final int MAX_DEPTH = 16;

    // One per thread, kept for the thread's life: setting and removing it per release would allocate a
    // map entry every time. depth == 0 means no run is in progress on this thread.
    private static final ThreadLocal<Trampoline> CURRENT = ThreadLocal.withInitial(Trampoline::new);

    private int depth;
    private Waiter first;
    private Waiter last;
    private Throwable failure;

    private Trampoline() {
    }

    /** Completes every waiter of {@code chain} (linked by {@code nextDone}, async only). */
    static void run(Waiter chain) {
        Trampoline t = CURRENT.get();
        if (t.depth == 0) {
            try {
                t.depth = 1;
                t.completeAll(chain);
                for (Waiter w = t.poll(); w != null; w = t.poll()) {
                    t.completeOne(w);
                }
            } finally {
                t.depth = 0;
                t.first = null;
                t.last = null;
            }
            Throwable f = t.failure;
            t.failure = null;
            if (f instanceof RuntimeException re) {
                throw re;
            }
            if (f instanceof Error err) {
                throw err;
            }
        } else if (t.depth < MAX_DEPTH) {
            t.depth++;
            try {
                t.completeAll(chain);
            } finally {
                t.depth--;
            }
        } else {
            t.append(chain);
        }
    }

    private void completeAll(Waiter chain) {
        for (Waiter w = chain; w != null; ) {
            Waiter next = w.nextDone;
            w.nextDone = null;
            completeOne(w);
            w = next;
        }
    }

    private void completeOne(Waiter w) {
        try {
            w.semaphore.complete(w);
        } catch (Throwable e) {
            // Keep going: every other waiter holds a decided grant that must be delivered or given back.
            if (failure == null) {
                failure = e;
            } else if (failure != e) {
                failure.addSuppressed(e);
            }
        }
    }

    private void append(Waiter chain) {
        Waiter end = chain;
        while (end.nextDone != null) {
            end = end.nextDone;
        }
        if (last == null) {
            first = chain;
        } else {
            last.nextDone = chain;
        }
        last = end;
    }

    private Waiter poll() {
        Waiter w = first;
        if (w != null) {
            first = w.nextDone;
            if (first == null) {
                last = null;
            }
            w.nextDone = null;
        }
        return w;
    }
}
