package dev.sema;

import dev.sema.contract.SemaphoreContract;

/**
 * The shared contract on a partitioned local semaphore: the requests of the parent itself (of no partition)
 * while its partitions, idle, are owed nothing they wait for; every call then takes the partitioned paths
 * (P0: no lock-free fast path, serving by the partition rules).
 */
class LocalPartitionedContractTest extends SemaphoreContract {
    @Override
    protected Semaphore create(long permits, long maxPermits) {
        return Semaphore.builder().permits(permits).maxPermits(maxPermits)
                .partition("checkout", 0.5).partition("batch", 0.25).build();
    }

    @Override
    protected void checkInvariants(Semaphore s) {
        ((LocalSemaphore) s).checkInvariants();
    }
}
