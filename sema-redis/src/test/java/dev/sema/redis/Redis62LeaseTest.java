package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The whole {@link RedisLeaseTest} again, on Redis 6.2 (the binary bundled by embedded-redis). */
class Redis62LeaseTest extends RedisLeaseTest implements OnRedis62 {

    @Test
    void runsOnRedis62() {
        assertThat(redis.info("server")).contains("redis_version:6.2.");
    }
}
