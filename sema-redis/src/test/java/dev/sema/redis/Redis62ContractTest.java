package dev.sema.redis;

/** The shared contract on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62ContractTest extends RedisContractTest implements OnRedis62 {
}
