package dev.sema.bench.redis;

import dev.sema.Permit;
import dev.sema.redis.RedisSemaphore;
import dev.sema.redis.RedisSemaphores;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The two Redis semaphores compared, behind one small interface: a {@link Client} is what one process
 * would have (Sema's {@link RedisSemaphores}, a {@link RedissonClient}), a {@link Handle} one semaphore
 * through it. Every grant carries the same lease, {@link #LEASE}.
 */
enum Impl {
    /** Sema's {@link RedisSemaphore}: {@code acquire(1)}, {@code Permit.close()}. */
    SEMA("Sema RedisSemaphore", "sema-") {
        @Override
        Client connect(Endpoint redis, String role) {
            RedisSemaphores rs = RedisSemaphores.connect(redis.uri() + "?timeout=10s&clientName=" + prefix + role);
            return new Client() {
                @Override
                public Handle semaphore(String name, int permits) {
                    RedisSemaphore s = rs.semaphore(name).permits(permits).lease(LEASE).build();
                    String queueKey = "sem:{" + name + "}:queue";
                    return new Handle() {
                        @Override
                        public Object acquire() throws InterruptedException {
                            return s.acquire(1);
                        }

                        @Override
                        public void release(Object grant) {
                            ((Permit) grant).close();
                        }

                        @Override
                        public boolean blocked(Thread waiter, int waiters, RawRedis observer) throws IOException {
                            // Queued in Redis (the queue is a sorted set, see dev.sema.redis's package
                            // documentation), and the thread parked on its future.
                            Thread.State st = waiter.getState();
                            return (st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING)
                                    && ((Long) observer.call("ZCARD", queueKey)) >= waiters;
                        }
                    };
                }

                @Override
                public void close() {
                    rs.close();
                }
            };
        }
    },

    /**
     * Redisson's {@link RPermitExpirableSemaphore}: {@code acquire(leaseTime, unit)} returns a permit id,
     * {@code release(id)}; the client with Redisson's default configuration but for the address and a
     * client name.
     */
    REDISSON("Redisson RPermitExpirableSemaphore", "redisson-") {
        @Override
        Client connect(Endpoint redis, String role) {
            RedissonClient r = Redisson.create(config(redis, prefix + role));
            return new Client() {
                @Override
                public Handle semaphore(String name, int permits) {
                    RPermitExpirableSemaphore s = r.getPermitExpirableSemaphore(name);
                    s.trySetPermits(permits);
                    // Redisson's wake-up channel for this semaphore (RedissonPermitExpirableSemaphore).
                    String channel = "redisson_sc:{" + name + "}";
                    return new Handle() {
                        @Override
                        public Object acquire() throws InterruptedException {
                            return s.acquire(LEASE.toMillis(), TimeUnit.MILLISECONDS);
                        }

                        @Override
                        public void release(Object grant) {
                            s.release((String) grant);
                        }

                        @Override
                        public boolean blocked(Thread waiter, int waiters, RawRedis observer) throws IOException {
                            // Subscribed to the channel (one subscription per waiting client), and the thread
                            // parked on the subscription's latch (a java.util.concurrent.Semaphore) after its
                            // last try failed.
                            if (!parkedOnLatch(waiter)) {
                                return false;
                            }
                            Object r = observer.call("PUBSUB", "NUMSUB", channel);
                            return r instanceof java.util.List<?> l && l.size() == 2
                                    && ((Long) l.get(1)) >= waiters;
                        }
                    };
                }

                @Override
                public void close() {
                    r.shutdown(0, 5, TimeUnit.SECONDS);
                }
            };
        }
    };

    /** The lease of every grant: Sema's default lease (Sema renews it while held; Redisson does not). */
    static final Duration LEASE = RedisSemaphore.DEFAULT_LEASE;

    final String label;
    /** The prefix of the client names of this implementation's connections ({@code CLIENT SETNAME}). */
    final String prefix;

    Impl(String label, String prefix) {
        this.label = label;
        this.prefix = prefix;
    }

    /** Connects one client whose connections are named {@code prefix + role}. */
    abstract Client connect(Endpoint redis, String role);

    /** One process's client. */
    interface Client extends AutoCloseable {
        /** A handle on semaphore {@code name}, created with {@code permits} if it does not exist. */
        Handle semaphore(String name, int permits);

        @Override
        void close();
    }

    /** One semaphore through one client; a grant is whatever {@link #acquire()} returned. */
    interface Handle {
        /** Acquires one permit, blocking. */
        Object acquire() throws InterruptedException;

        /** Releases a grant of {@link #acquire()}. */
        void release(Object grant);

        /**
         * Whether {@code waiter} is blocked in {@link #acquire()} and registered as waiting in Redis, with
         * {@code waiters} waiting clients in all (one thread each).
         */
        boolean blocked(Thread waiter, int waiters, RawRedis observer) throws IOException;
    }

    static Config config(Endpoint redis, String clientName) {
        Config c = new Config();
        c.useSingleServer().setAddress(redis.uri()).setClientName(clientName);
        return c;
    }

    /** The Redisson settings that matter here, as the default configuration has them. */
    static Map<String, Object> redissonSettings(Endpoint redis) {
        Config c = config(redis, "x");
        var s = c.useSingleServer();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("useScriptCache", c.isUseScriptCache());
        m.put("threads", c.getThreads());
        m.put("nettyThreads", c.getNettyThreads());
        m.put("connectionPoolSize", s.getConnectionPoolSize());
        m.put("connectionMinimumIdleSize", s.getConnectionMinimumIdleSize());
        m.put("subscriptionConnectionPoolSize", s.getSubscriptionConnectionPoolSize());
        m.put("subscriptionConnectionMinimumIdleSize", s.getSubscriptionConnectionMinimumIdleSize());
        m.put("pingConnectionIntervalMs", s.getPingConnectionInterval());
        return m;
    }

    static boolean parkedOnLatch(Thread t) {
        Thread.State st = t.getState();
        if (st != Thread.State.WAITING && st != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().equals("java.util.concurrent.Semaphore")) {
                return true;
            }
        }
        return false;
    }
}
