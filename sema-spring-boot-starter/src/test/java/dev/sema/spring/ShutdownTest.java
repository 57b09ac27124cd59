package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.AdaptiveLimit;
import dev.sema.Semaphore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Shutdown: local semaphores and adaptive limits are closed once the web server has stopped taking requests. */
@Timeout(60)
class ShutdownTest {
    /** The web server's start/stop lifecycle phase (stopping after it means: once it no longer takes requests). */
    private static final int WEB_SERVER_PHASE = SmartLifecycle.DEFAULT_PHASE - 2048;

    @Test
    void localSemaphoresAreClosedAfterTheWebServerStopped() {
        ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class).web(WebApplicationType.SERVLET)
                .properties("server.port=0", "spring.main.banner-mode=off", "logging.level.root=warn",
                        "sema.semaphores.db.permits=4", "sema.semaphores.db.max-permits=8",
                        "sema.semaphores.db.adaptive.algorithm=aimd", "sema.web.semaphore=db")
                .run();
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        Semaphore db = context.getBean(SemaphoreRegistry.class).get("db");
        AdaptiveLimit adaptive = context.getBean(SemaphoreRegistry.class).adaptive("db").orElseThrow();
        AfterTheWebServer probe = context.getBean(AfterTheWebServer.class);
        probe.semaphore = db;
        probe.port = port;
        assertThat(accepts(port)).isTrue();

        context.close();

        assertThat(probe.seen.get()).as("when the lifecycle after the web server stopped")
                .isEqualTo("semaphore open, port closed");
        assertThat(db.isClosed()).isTrue();
        long limit = db.permits();
        adaptive.dropped();
        assertThat(db.permits()).as("a closed adaptive limit no longer adjusts").isEqualTo(limit);
    }

    private static boolean accepts(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1_000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Stops right after the web server: records what it finds then. */
    static final class AfterTheWebServer implements SmartLifecycle {
        volatile Semaphore semaphore;
        volatile int port;
        final AtomicReference<String> seen = new AtomicReference<>();
        private volatile boolean running;

        @Override
        public void start() {
            running = true;
        }

        @Override
        public void stop() {
            seen.set("semaphore " + (semaphore.isClosed() ? "closed" : "open") + ", port "
                    + (accepts(port) ? "open" : "closed"));
            running = false;
        }

        @Override
        public boolean isRunning() {
            return running;
        }

        @Override
        public int getPhase() {
            return WEB_SERVER_PHASE - 1;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        AfterTheWebServer afterTheWebServer() {
            return new AfterTheWebServer();
        }
    }
}
