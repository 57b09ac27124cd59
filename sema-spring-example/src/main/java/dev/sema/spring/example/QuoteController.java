package dev.sema.spring.example;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /api/quotes/{symbol}}: behind the {@code sema.web} filter (one permit of {@code inbound} per request,
 * refused at once beyond the adaptive limit). The code knows nothing of it: the filter is configured in
 * {@code application.yml}.
 */
@RestController
public class QuoteController {
    private final PartnerApi partner;
    private final InFlight.Counter inFlight;

    QuoteController(PartnerApi partner, InFlight inFlight, @Value("${sema.web.semaphore}") String semaphore) {
        this.partner = partner;
        this.inFlight = inFlight.counter("quotes", semaphore);
    }

    /**
     * A quote from the partner.
     *
     * @param symbol what to quote
     * @return the quote
     * @throws InterruptedException if interrupted while the partner works
     */
    @GetMapping("/api/quotes/{symbol}")
    public PartnerApi.Quote quote(@PathVariable String symbol) throws InterruptedException {
        try (InFlight.Entry entry = inFlight.enter()) {
            return partner.quote(symbol);
        }
    }
}
