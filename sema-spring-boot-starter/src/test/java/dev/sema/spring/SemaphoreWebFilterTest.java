package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.KeyedSemaphore;
import java.net.InetSocketAddress;
import java.security.Principal;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The WebFlux filter's key sources that need no HTTP client to show: the principal (the exchange's, as Spring
 * Security sets it) and the client's address; each request holds its key's permit while the chain runs, and one
 * without a principal is answered 400 saying so.
 */
@Timeout(30)
class SemaphoreWebFilterTest {
    private static final Duration STEP = Duration.ofSeconds(10);

    private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class, SemaWebFluxAutoConfiguration.class))
            .withPropertyValues("sema.keyed.users.permits=1", "sema.web.keyed=users");

    /** Runs {@code exchange} through {@code filter}, counting the keys held while the chain runs. */
    private static int keysHeldDuring(SemaphoreWebFilter filter, ServerWebExchange exchange,
            KeyedSemaphore<Object> users) {
        AtomicInteger held = new AtomicInteger(-1);
        WebFilterChain chain = e -> Mono.fromRunnable(() -> held.set(users.size()));
        filter.filter(exchange, chain).block(STEP);
        return held.get();
    }

    @Test
    void thePrincipalIsTheExchangesAndARequestWithoutOneIs400() {
        runner.withPropertyValues("sema.web.key=principal").run(context -> {
            assertThat(context).hasNotFailed();
            SemaphoreWebFilter filter = context.getBean(SemaphoreWebFilter.class);
            KeyedSemaphore<Object> users = context.getBean(SemaphoreRegistry.class).keyed("users");
            Principal alice = () -> "alice";
            ServerWebExchange authenticated = MockServerWebExchange.from(MockServerHttpRequest.get("/orders")).mutate()
                    .principal(Mono.just(alice)).build();
            assertThat(keysHeldDuring(filter, authenticated, users)).isEqualTo(1);
            assertThat(users.size()).isZero();

            MockServerWebExchange anonymous = MockServerWebExchange.from(MockServerHttpRequest.get("/orders"));
            assertThat(keysHeldDuring(filter, anonymous, users)).as("the chain never ran").isEqualTo(-1);
            assertThat(anonymous.getResponse().getStatusCode().value()).isEqualTo(400);
            assertThat(anonymous.getResponse().getBodyAsString().block(STEP)).contains("no authenticated principal");
        });
    }

    @Test
    void theRemoteAddressIsTheClientsAddress() {
        runner.withPropertyValues("sema.web.key=remote-address").run(context -> {
            SemaphoreWebFilter filter = context.getBean(SemaphoreWebFilter.class);
            KeyedSemaphore<Object> users = context.getBean(SemaphoreRegistry.class).keyed("users");
            MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.get("/orders")
                    .remoteAddress(new InetSocketAddress("127.0.0.5", 40000)));
            AtomicInteger held = new AtomicInteger();
            WebFilterChain chain = e -> Mono.fromRunnable(() -> held.set(
                    users.get("127.0.0.5").availablePermits() == 0 ? 1 : 0));
            filter.filter(exchange, chain).block(STEP);
            assertThat(held).as("the permit of the key 127.0.0.5 was held").hasValue(1);
            assertThat(users.size()).isZero();
        });
    }
}
