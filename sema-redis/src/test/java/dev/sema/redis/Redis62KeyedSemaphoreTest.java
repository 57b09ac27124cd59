package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The whole {@link RedisKeyedSemaphoreTest} again, on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62KeyedSemaphoreTest extends RedisKeyedSemaphoreTest implements OnRedis62 {

    @Test
    void runsOnRedis62() {
        assertThat(redis.info("server")).contains("redis_version:6.2.");
    }
}
