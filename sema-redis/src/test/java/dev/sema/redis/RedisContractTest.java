package dev.sema.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Semaphore;
import dev.sema.contract.SemaphoreContract;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInfo;

/**
 * The shared {@link SemaphoreContract} on Redis (the installed server; {@link Redis62ContractTest} runs it
 * on Redis 6.2): each semaphore is built through one {@link RedisSemaphores} and its {@link #other} handle
 * through a second one, standing for a second process.
 */
@Tag("redis")
class RedisContractTest extends SemaphoreContract {
    private static final AtomicInteger NAMES = new AtomicInteger();

    RedisSemaphores a;
    RedisSemaphores b;

    // The server's life is RedisTestSupport's (one per class; Redis 6.2 for OnRedis62 classes).
    @BeforeAll
    static void startServer(TestInfo info) throws Exception {
        RedisTestSupport.startServer(info);
    }

    @AfterAll
    static void stopServer() throws Exception {
        RedisTestSupport.stopServer();
    }

    @BeforeEach
    void connect() {
        assumeTrue(RedisTestSupport.server != null, RedisTestSupport.missing);
        a = RedisSemaphores.connect(RedisTestSupport.uri(RedisTestSupport.server));
        b = RedisSemaphores.connect(RedisTestSupport.uri(RedisTestSupport.server));
    }

    @AfterEach
    void disconnect() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    @Override
    protected Semaphore create(long permits, long maxPermits) {
        String name = "contract-" + NAMES.incrementAndGet();
        return a.semaphore(name).permits(permits).maxPermits(maxPermits).build();
    }

    @Override
    protected Semaphore other(Semaphore s) {
        return b.semaphore(s.name()).build(); // exists: the stored limit and ceiling win
    }

    @Override
    protected void checkInvariants(Semaphore s) {
        RedisTestSupport.checkInvariants(RedisTestSupport.redis, s.name());
    }
}
