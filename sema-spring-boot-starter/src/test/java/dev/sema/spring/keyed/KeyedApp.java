package dev.sema.spring.keyed;

import dev.sema.spring.WithPermits;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The application of the keyed web tests (profile keyed): sema.web over /api/** holds a permit of the request's
 * X-Tenant key in the family exports and one of the semaphore api; /work/** calls a @WithPermits method keyed by
 * a parameter, which the filter leaves alone.
 */
@SpringBootApplication
public class KeyedApp {

    /** Every /api/*&#47;hold path holds its permits until the test lets it go. */
    @RestController
    public static class Api {
        /** Counted down by the tests: a held request waits until then. */
        public volatile CountDownLatch release = new CountDownLatch(1);
        public final AtomicInteger entered = new AtomicInteger();
        private final Exports exports;

        public Api(Exports exports) {
            this.exports = exports;
        }

        @GetMapping("/api/hold")
        public String hold() throws InterruptedException {
            entered.incrementAndGet();
            return release.await(20, TimeUnit.SECONDS) ? "released" : "timed out";
        }

        @GetMapping("/api/quick")
        public String quick() {
            return "quick";
        }

        @GetMapping("/work/export")
        public String export(@RequestParam String tenant) {
            return exports.export(new Tenant(tenant));
        }
    }

    /** A tenant, whose id is the key. */
    public record Tenant(String id) {
    }

    /** Exports, at most one at a time per tenant. */
    @Service
    public static class Exports {
        @WithPermits(value = "exports", key = "#tenant.id", timeout = "0")
        public String export(Tenant tenant) {
            return "exported for " + tenant.id();
        }
    }
}
