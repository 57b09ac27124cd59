package dev.sema.spring.readme;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/**
 * The WebFlux application of ReadmeWebFluxTest: the README's QuoteClient behind /api/quotes/{sku}, calling the partner
 * at partner.url (a stub the test serves).
 */
@SpringBootApplication
public class ReadmeApp {

    @Bean
    WebClient partner(@Value("${partner.url}") String url) {
        return WebClient.create(url);
    }

    /** The application's API. */
    @RestController
    public static class Api {
        private final QuoteClient quotes;

        public Api(QuoteClient quotes) {
            this.quotes = quotes;
        }

        @GetMapping("/api/quotes/{sku}")
        public Mono<Quote> quote(@PathVariable String sku) {
            return quotes.quote(sku);
        }
    }
}
