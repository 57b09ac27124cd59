package dev.sema.spring;

import dev.sema.spring.reactive.ReactiveApp;
import java.net.URI;
import java.time.Duration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

/** Real HTTP to the embedded Netty server on 127.0.0.1 through WebClient (reactor-netty), every request bounded. */
final class ReactiveHttp {
    static final Duration TIMEOUT = Duration.ofSeconds(20);
    private final WebClient client = WebClient.create();
    private final String base;

    ReactiveHttp(int port) {
        this.base = "http://127.0.0.1:" + port;
    }

    /** To the application's own server. */
    static ReactiveHttp to(ConfigurableApplicationContext app) {
        return new ReactiveHttp(((WebServerApplicationContext) app).getWebServer().getPort());
    }

    /** Starts the tests' reactive application ({@code ReactiveApp}) with the profile, on a free port. */
    static ConfigurableApplicationContext startReactiveApp(String profile) {
        return new SpringApplicationBuilder(ReactiveApp.class).web(WebApplicationType.REACTIVE).profiles(profile)
                .run("--server.port=0");
    }

    /**
     * A GET of {@code path} (sent as written: {@code %61} stays encoded), with headers given as name, value pairs;
     * nothing is sent until it is subscribed.
     */
    Mono<ResponseEntity<String>> get(String path, String... headers) {
        return client.get().uri(URI.create(base + path)).headers(h -> {
            for (int i = 0; i < headers.length; i += 2) {
                h.add(headers[i], headers[i + 1]);
            }
        }).exchangeToMono(r -> r.toEntity(String.class)).timeout(TIMEOUT);
    }

    /** {@link #get}, waited for on the calling thread. */
    ResponseEntity<String> getNow(String path, String... headers) {
        return get(path, headers).block(TIMEOUT.plusSeconds(5));
    }
}
