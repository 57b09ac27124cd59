package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Semaphore;
import dev.sema.redis.RedisSemaphoreException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Reading many semaphores at once, as the actuator endpoint and the health contributor do. */
@Timeout(30)
class SemaphoreStateTest {

    @Test
    void aSemaphoreThatCannotBeReadIsReportedAndTheOthersAreRead() {
        Semaphore db = Semaphore.builder().permits(3).name("db").build();
        Map<String, Semaphore> all = new LinkedHashMap<>();
        all.put("broken", failingReads(Semaphore.builder().permits(1).name("broken").build(),
                new RedisSemaphoreException("cannot reach redis://app:secret@10.0.0.1:6379", null)));
        all.put("db", db);

        Map<String, SemaphoreState.Reading> readings = SemaphoreState.readAll(all);

        assertThat(readings.keySet()).containsExactly("broken", "db");
        assertThat(readings.get("broken")).isEqualTo(new SemaphoreState.Unreadable("local",
                "RedisSemaphoreException: cannot reach redis://app:***@10.0.0.1:6379"));
        assertThat(readings.get("db")).isEqualTo(new SemaphoreState.Readable(
                new SemaphoreState("local", 3, 3, 3, 0, false, List.of())));
    }

    /** A semaphore whose every count fails as a Redis semaphore's does when Redis cannot be reached. */
    private static Semaphore failingReads(Semaphore delegate, RuntimeException failure) {
        return (Semaphore) Proxy.newProxyInstance(Semaphore.class.getClassLoader(), new Class<?>[] {Semaphore.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("permits") || method.getName().equals("availablePermits")) {
                        throw failure;
                    }
                    try {
                        return method.invoke(delegate, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
