package dev.sema;

/**
 * Completes async waiters iteratively. Completing a future runs its continuations inline, and a
 * continuation that releases permits grants (and would complete) the next waiter: without this, a chain
 * of N such waiters would recurse N frames deep. A nested call on the same thread only appends to the
 * outer call's list, which the outer loop then drains. Threads never wait for each other here.
 */
final class Trampoline {
    private static final ThreadLocal<Trampoline> CURRENT = new ThreadLocal<>();

    private Waiter first;
    private Waiter last;

    private Trampoline() {
    }

    /** Completes every waiter of {@code chain} (linked by {@code next}, async only). */
    static void run(Waiter chain) {
        Trampoline t = CURRENT.get();
        if (t != null) {
            t.append(chain);
            return;
        }
        t = new Trampoline();
        t.append(chain);
        CURRENT.set(t);
        Throwable failure = null;
        try {
            for (Waiter w = t.poll(); w != null; w = t.poll()) {
                try {
                    w.semaphore.complete(w);
                } catch (Throwable e) {
                    // Keep going: every waiter left in the list holds a decided grant that must be
                    // delivered (or given back), whatever one of them threw.
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
        } finally {
            CURRENT.remove();
        }
        if (failure instanceof RuntimeException re) {
            throw re;
        }
        if (failure instanceof Error err) {
            throw err;
        }
    }

    private void append(Waiter chain) {
        Waiter tailOfChain = chain;
        while (tailOfChain.next != null) {
            tailOfChain = tailOfChain.next;
        }
        if (last == null) {
            first = chain;
        } else {
            last.next = chain;
        }
        last = tailOfChain;
    }

    private Waiter poll() {
        Waiter w = first;
        if (w != null) {
            first = w.next;
            if (first == null) {
                last = null;
            }
            w.next = null;
        }
        return w;
    }
}
