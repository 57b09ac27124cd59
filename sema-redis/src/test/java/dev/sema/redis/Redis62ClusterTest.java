package dev.sema.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The whole {@link RedisClusterTest} again, on a cluster of Redis 6.2 masters (the binary bundled by
 * embedded-redis): no sharded pub/sub there, so wake-ups go by {@code PUBLISH}.
 */
class Redis62ClusterTest extends RedisClusterTest implements OnRedis62 {

    @Test
    void runsOnRedis62WithPlainPubSub() {
        for (int i = 0; i < 3; i++) {
            assertThat(cluster.node(i).info("server")).contains("redis_version:6.2.");
        }
        assertThat(a.sharded()).isFalse();
    }
}
