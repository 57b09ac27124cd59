package dev.sema.spring.reactive;

import dev.sema.spring.WithPermits;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The WebFlux application of the reactive web tests (profiles reactive, reactive-keyed): sema.web over /api/**, every
 * handler non-blocking (but /api/blocking, which BlockHound must catch), counting the requests it serves at once;
 * /work/** calls @WithPermits services, outside sema.web.
 */
@SpringBootApplication
public class ReactiveApp {

    /** The handlers, which count what they serve at once. */
    @RestController
    public static class Api {
        /** Completed by the tests: a held request waits until then, without holding a thread. */
        public volatile Sinks.One<String> release = Sinks.one();
        public final AtomicInteger entered = new AtomicInteger();
        public final AtomicInteger inFlight = new AtomicInteger();
        public final AtomicInteger maxInFlight = new AtomicInteger();
        public final AtomicInteger cancelled = new AtomicInteger();
        private final Work work;

        public Api(Work work) {
            this.work = work;
        }

        /** Resets the counters and the gate. */
        public void reset() {
            release = Sinks.one();
            entered.set(0);
            inFlight.set(0);
            maxInFlight.set(0);
            cancelled.set(0);
        }

        @GetMapping({ "/api/hold", "/api/checkout/hold", "/api/other/hold" })
        public Mono<String> hold() {
            Sinks.One<String> gate = release;
            return counted(Mono.defer(() -> {
                entered.incrementAndGet();
                return gate.asMono();
            }));
        }

        @GetMapping("/api/delay")
        public Mono<String> delay() {
            return counted(Mono.delay(Duration.ofMillis(10)).thenReturn("done"));
        }

        @GetMapping({ "/api/quick", "/api/checkout/quick", "/api/other/quick" })
        public Mono<String> quick() {
            return Mono.just("quick");
        }

        @GetMapping("/open/quick")
        public Mono<String> open() {
            return Mono.just("open");
        }

        /** Blocks the event loop: BlockHound must report it. */
        @GetMapping("/api/blocking")
        public Mono<String> blocking() {
            return Mono.fromCallable(() -> {
                Thread.sleep(1);
                return "slept";
            });
        }

        @GetMapping("/work/try")
        public Mono<String> tryWork() {
            return work.tryWork();
        }

        private Mono<String> counted(Mono<String> body) {
            return Mono.defer(() -> {
                int now = inFlight.incrementAndGet();
                maxInFlight.accumulateAndGet(now, Math::max);
                return body;
            }).doOnCancel(() -> {
                cancelled.incrementAndGet();
                inFlight.decrementAndGet();
            // Once the value is emitted the handler's work is done: counted out before the value goes on, since the
            // response may be written, and the permit given to the next request, within the value's signal.
            }).doOnSuccess(value -> inFlight.decrementAndGet()).doOnError(error -> inFlight.decrementAndGet());
        }
    }

    /** A @WithPermits service called by a handler: its refusal becomes 503 through the WebExceptionHandler. */
    @Service
    public static class Work {
        @WithPermits(value = "work", timeout = "0")
        public Mono<String> tryWork() {
            return Mono.just("worked");
        }
    }
}
