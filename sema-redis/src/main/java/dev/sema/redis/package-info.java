/**
 * The distributed semaphore: {@code RedisSemaphores} connects to Redis and builds
 * {@code RedisSemaphore}s whose state lives in Redis and is shared by every process that
 * builds the same name.
 */
package dev.sema.redis;
