package dev.sema.chaos;

import dev.sema.testing.FaultProxy;
import dev.sema.testing.RedisServer;
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.Map;

/** One Redis with an append-only file: each worker connects straight to its own proxy in front of it. */
final class SingleRedis extends Topology {
    private final RedisServer redis;

    private SingleRedis(RedisServer redis) {
        this.redis = redis;
    }

    static SingleRedis start(RedisServer.Binary binary) throws IOException, InterruptedException {
        return new SingleRedis(RedisServer.builder(binary).appendOnly().start());
    }

    /** The topology of a Redis started elsewhere (which {@link #close()} then stops). */
    static SingleRedis over(RedisServer redis) {
        return new SingleRedis(redis);
    }

    @Override
    String describe() {
        return "single (one Redis, append-only file)";
    }

    @Override
    List<Endpoint> endpoints() {
        return List.of(new Endpoint("redis", redis.port(), redis.port()));
    }

    @Override
    String workerUri(Map<String, FaultProxy> proxies) {
        return proxies.get("redis").redisUri("timeout=1s");
    }

    @Override
    boolean mapped() {
        return false;
    }

    @Override
    int locate(String semaphore) {
        return redis.port();
    }

    @Override
    RedisServer primary() {
        return redis;
    }

    @Override
    String nameOf(RedisServer server) {
        return "redis";
    }

    @Override
    List<Fault> faults() {
        return List.of();
    }

    @Override
    void heal(PrintStream out) {
        // the Redis restart fault ends with Redis running
    }

    @Override
    public void close() throws Exception {
        redis.close();
    }
}
