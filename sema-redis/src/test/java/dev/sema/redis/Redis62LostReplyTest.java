package dev.sema.redis;

/** {@link RedisLostReplyTest} on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62LostReplyTest extends RedisLostReplyTest implements OnRedis62 {
}
