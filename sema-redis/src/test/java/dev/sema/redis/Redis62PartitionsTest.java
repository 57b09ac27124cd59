package dev.sema.redis;

/** The partition scenarios on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62PartitionsTest extends RedisPartitionsTest implements OnRedis62 {
}
