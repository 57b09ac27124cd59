package dev.sema;

import dev.sema.contract.SemaphoreContract;

/** The shared contract on the local semaphore, FIFO. */
class LocalFifoContractTest extends SemaphoreContract {
    @Override
    protected Semaphore create(long permits, long maxPermits) {
        return Semaphore.builder().permits(permits).maxPermits(maxPermits).fairness(fairness()).build();
    }

    @Override
    protected void checkInvariants(Semaphore s) {
        ((LocalSemaphore) s).checkInvariants();
    }
}
