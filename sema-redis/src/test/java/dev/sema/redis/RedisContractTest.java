package dev.sema.redis;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.Semaphore;
import dev.sema.contract.SemaphoreContract;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
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
    private static RedisServer server;
    private static String missing;
    private static RedisClient inspector;
    private static RedisCommands<String, String> redis;

    private RedisSemaphores a;
    private RedisSemaphores b;

    @BeforeAll
    static void startServer(TestInfo info) throws Exception {
        Class<?> testClass = info.getTestClass().orElseThrow();
        server = RedisServer.startFor(testClass);
        if (server == null) {
            missing = RedisServer.missing(testClass);
            return;
        }
        inspector = RedisClient.create(server.uri());
        redis = inspector.connect().sync();
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (inspector != null) {
            inspector.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            inspector = null;
        }
        if (server != null) {
            server.close();
            server = null;
        }
    }

    @BeforeEach
    void connect() {
        assumeTrue(server != null, missing);
        a = RedisSemaphores.connect(server.uri());
        b = RedisSemaphores.connect(server.uri());
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
        RedisTestSupport.checkInvariants(redis, s.name());
    }
}
