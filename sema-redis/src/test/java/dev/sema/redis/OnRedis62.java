package dev.sema.redis;

/**
 * Marks a test class that runs against the Redis 6.2 bundled in embedded-redis instead of the installed
 * server ({@link RedisTestSupport#sourceFor}), so that every build runs it on Redis 6.2 as well as on the
 * installed version; skipped where embedded-redis bundles no binary for the platform.
 */
interface OnRedis62 {
}
