package dev.sema.internal;

/**
 * A semaphore whose counts can be read together: for observers (metrics) that show several counts at
 * once, so that a remote engine answers them with one round trip instead of one per count.
 */
public interface StateSource {

    /**
     * The counts now: for a local engine, each read as it stands (not atomically together); for a
     * remote one, as one reply.
     *
     * @return the counts
     */
    State state();

    /**
     * The counts of a semaphore at one moment.
     *
     * @param limit {@code permits()}
     * @param max {@code maxPermits()}
     * @param available {@code availablePermits()}, negative after the limit was lowered below what is held
     * @param queued {@code queueLength()}
     * @param closed {@code isClosed()}
     * @param remote whether reading it costs a round trip (then readers should cache it briefly)
     */
    record State(long limit, long max, long available, int queued, boolean closed, boolean remote) {

        /**
         * Permits held by open Permits.
         *
         * @return {@code limit - available}
         */
        public long used() {
            return limit - available;
        }
    }
}
