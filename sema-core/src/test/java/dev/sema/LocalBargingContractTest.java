package dev.sema;

/** The shared contract on the local semaphore, BARGING. */
class LocalBargingContractTest extends LocalFifoContractTest {
    @Override
    protected Fairness fairness() {
        return Fairness.BARGING;
    }
}
