package dev.sema.reactive.example;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * {@code /api/quotes/{symbol}}: behind the {@code sema.web} filter (one permit of {@code inbound} per request). A quote
 * takes {@code example.quote-time} to come, on a timer, not a thread: while it waits, the event loop serves others.
 *
 * <p>{@code /probe/block} sleeps a millisecond on the event loop, on purpose: the demo calls it once to see that
 * BlockHound is watching and would report a real blocking call.
 */
@RestController
class QuoteController {
    record Quote(String symbol, double price) {
    }

    private final InFlight inFlight;
    private final Duration quoteTime;

    QuoteController(ExampleEndpoint example, @Value("${example.quote-time}") Duration quoteTime) {
        this.inFlight = example.quotes();
        this.quoteTime = quoteTime;
    }

    @GetMapping("/api/quotes/{symbol}")
    Mono<Quote> quote(@PathVariable String symbol) {
        return inFlight.around(Mono.delay(quoteTime)
                .map(tick -> new Quote(symbol, 100 + ThreadLocalRandom.current().nextInt(1_000) / 100.0)));
    }

    @GetMapping("/probe/block")
    String block() throws InterruptedException {
        Thread.sleep(1);
        return Thread.currentThread().getName();
    }
}
