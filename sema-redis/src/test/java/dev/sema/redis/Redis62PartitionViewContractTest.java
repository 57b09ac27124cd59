package dev.sema.redis;

/** The shared contract on a partition's view, on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62PartitionViewContractTest extends RedisPartitionViewContractTest implements OnRedis62 {
}
