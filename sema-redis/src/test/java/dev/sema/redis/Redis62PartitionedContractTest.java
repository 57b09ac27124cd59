package dev.sema.redis;

/** The shared contract on a partitioned semaphore's parent, on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62PartitionedContractTest extends RedisPartitionedContractTest implements OnRedis62 {
}
