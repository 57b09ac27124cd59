package dev.sema;

import dev.sema.internal.AbstractKeyView;
import dev.sema.internal.Failures;

/**
 * The semaphore of one key of a {@link LocalKeyedSemaphore}: it finds (or makes) the key's engine at each request,
 * through the family. What it refuses, and what makes two views equal, is {@link AbstractKeyView}'s.
 */
final class KeyView<K> extends AbstractKeyView<K, Permit> {
    /** Built when first asked for: a view of a key not live is made for every request, its name only for messages. */
    private String name;

    /**
     * The key's entry when this view was made, or null: a request asks its engine first (K7 of LocalKeyedSemaphore),
     * which refuses at once once it is retired, and the request then looks the key up as a view without one does.
     */
    final LocalKeyedSemaphore.Entry<K> entry;

    KeyView(LocalKeyedSemaphore<K> family, K key, LocalKeyedSemaphore.Entry<K> entry) {
        super(family, key);
        this.entry = entry;
    }

    private LocalKeyedSemaphore<K> local() {
        return (LocalKeyedSemaphore<K>) family();
    }

    /** The key's limit: its live semaphore's, or the one it would get now. */
    @Override
    public long permits() {
        return local().limitNow(key());
    }

    @Override
    public long maxPermits() {
        LocalKeyedSemaphore.Entry<K> e = local().peek(key());
        return e != null ? e.engine.maxPermits() : local().limitNow(key());
    }

    @Override
    public long availablePermits() {
        LocalKeyedSemaphore.Entry<K> e = local().peek(key());
        return e != null ? e.engine.availablePermits() : local().limitNow(key());
    }

    @Override
    public int queueLength() {
        LocalKeyedSemaphore.Entry<K> e = local().peek(key());
        return e != null ? e.engine.queueLength() : 0;
    }

    @Override
    public String name() {
        String n = name;
        if (n == null) {
            n = local().name() + "[" + key() + "]"; // racy but idempotent: a String is safely published
            name = n;
        }
        return n;
    }

    @Override
    public String toString() {
        LocalKeyedSemaphore.Entry<K> e = local().peek(key());
        if (e != null) {
            return e.engine.toString();
        }
        long limit = local().limitNow(key());
        return "Semaphore[name=" + name() + ", " + Failures.counts(limit, limit, 0, isClosed()) + ", idle]";
    }
}
