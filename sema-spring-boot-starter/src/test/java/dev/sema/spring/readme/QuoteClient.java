package dev.sema.spring.readme;

import dev.sema.spring.PermitUnavailableException;
import dev.sema.spring.WithPermits;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Service;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/** The README's WebFlux example (section "### WebFlux" of "## Spring Boot"): ReadmeWebFluxTest checks it is there. */
@Service
public class QuoteClient {
    private final WebClient partner;
    private final Map<String, Quote> quoted = new ConcurrentHashMap<>();

    QuoteClient(WebClient partner) {
        this.partner = partner;
    }

    @WithPermits(value = "partner", timeout = "200ms", fallback = "lastQuote")
    public Mono<Quote> quote(String sku) {                // the permit is held until the Mono ends
        return partner.get().uri("/quotes/{sku}", sku).retrieve().bodyToMono(Quote.class)
                .doOnNext(quote -> quoted.put(sku, quote));
    }

    Mono<Quote> lastQuote(String sku, PermitUnavailableException refusal) {
        return Mono.justOrEmpty(quoted.get(sku))         // no permit within 200 ms: the last quote,
                .switchIfEmpty(Mono.error(refusal));     // or the refusal: 503 with Retry-After
    }
}
