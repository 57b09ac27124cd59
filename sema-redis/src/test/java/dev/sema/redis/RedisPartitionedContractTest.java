package dev.sema.redis;

import dev.sema.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The shared contract on a partitioned Redis semaphore (API.md §11a): the requests of the parent itself (of no
 * partition, the lowest slot) while its partitions, idle, are owed nothing they wait for; every call then runs
 * the partitioned scripts (partitions.lua). The second process's handle declares no partitions and takes the
 * stored ones. {@link Redis62PartitionedContractTest} runs it on Redis 6.2.
 */
class RedisPartitionedContractTest extends RedisContractTest {
    private static final AtomicInteger NAMES = new AtomicInteger();

    @Override
    protected Semaphore create(long permits, long maxPermits) {
        return a.semaphore("partitioned-contract-" + NAMES.incrementAndGet()).permits(permits).maxPermits(maxPermits)
                .partition("checkout", 0.5).partition("batch", 0.25).build();
    }

    @Override
    protected void checkInvariants(Semaphore s) {
        RedisTestSupport.checkPartitionInvariants(RedisTestSupport.redis, s.name());
    }
}
