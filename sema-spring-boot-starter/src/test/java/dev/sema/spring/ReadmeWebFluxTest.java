package dev.sema.spring;

import static dev.sema.spring.WebFilterTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.readme.ReadmeApp;
import dev.sema.testing.Readme;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.http.ResponseEntity;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * The README's "### WebFlux" subsection of "## Spring Boot" (whose other examples sema-spring-example checks): its
 * Java is QuoteClient's source verbatim, and a WebFlux application on its YAML alone limits /api/** with 503 and
 * Retry-After and falls back to the last quote when the partner's permits are all taken.
 */
@Timeout(60)
class ReadmeWebFluxTest {
    private static final Pattern BLOCK = Pattern.compile("```(\\w+)\\n(.*?)```", Pattern.DOTALL);

    static String subsection() {
        String section = Readme.section("Spring Boot");
        int start = section.indexOf("\n### WebFlux\n");
        assertThat(start).as("the README's Spring Boot section has a \"### WebFlux\" subsection").isNotNegative();
        int next = section.indexOf("\n### ", start + 1);
        return next < 0 ? section.substring(start) : section.substring(start, next);
    }

    private static List<String> blocks(String language) {
        List<String> blocks = new ArrayList<>();
        Matcher m = BLOCK.matcher(subsection());
        while (m.find()) {
            if (m.group(1).equals(language)) {
                blocks.add(m.group(2));
            }
        }
        return blocks;
    }

    @Test
    void theJavaBlockIsQuoteClientsSourceVerbatim() throws IOException {
        List<String> java = blocks("java");
        assertThat(java).hasSize(1);
        String source = Files.readString(Path.of("src/test/java/dev/sema/spring/readme/QuoteClient.java"));
        assertThat(Readme.normalized(source)).as("QuoteClient and the README's WebFlux example (update them together)")
                .contains(Readme.normalized(java.get(0)));
    }

    @Test
    void aWebFluxApplicationOnTheYamlBlockAloneDoesWhatTheSubsectionSays(@TempDir Path dir) throws Exception {
        List<String> yaml = blocks("yaml");
        assertThat(yaml).hasSize(1);
        Path yml = dir.resolve("readme.yml");
        Files.writeString(yml, yaml.get(0));
        AtomicInteger partnerCalls = new AtomicInteger();
        DisposableServer partner = HttpServer.create().host("127.0.0.1").port(0)
                .route(routes -> routes.get("/quotes/{sku}", (request, response) -> {
                    partnerCalls.incrementAndGet();
                    return response.header("Content-Type", "application/json")
                            .sendString(reactor.core.publisher.Mono.just("{\"sku\":\"" + request.param("sku")
                                    + "\",\"cents\":1234}"));
                })).bindNow();
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(ReadmeApp.class)
                .web(WebApplicationType.REACTIVE).run("--spring.config.location=file:" + yml, "--server.port=0",
                        "--partner.url=http://127.0.0.1:" + partner.port(), "--logging.level.root=warn",
                        "--spring.main.banner-mode=off")) {
            ReactiveHttp http = new ReactiveHttp(((WebServerApplicationContext) app).getWebServer().getPort());
            SemaphoreRegistry registry = app.getBean(SemaphoreRegistry.class);
            Semaphore inbound = registry.get("inbound");
            Semaphore partnerLimit = registry.get("partner");

            ResponseEntity<String> live = http.getNow("/api/quotes/A1");
            assertThat(live.getStatusCode().value()).isEqualTo(200);
            assertThat(live.getBody()).isEqualTo("{\"sku\":\"A1\",\"cents\":1234}");
            assertThat(partnerCalls).hasValue(1);

            try (Permit all = partnerLimit.tryAcquire(partnerLimit.permits()).orElseThrow()) {
                ResponseEntity<String> last = http.getNow("/api/quotes/A1");
                assertThat(last.getBody()).as("the last quote").isEqualTo("{\"sku\":\"A1\",\"cents\":1234}");
                ResponseEntity<String> never = http.getNow("/api/quotes/B2");
                assertThat(never.getStatusCode().value()).isEqualTo(503);
                assertThat(never.getHeaders().getFirst("Retry-After")).isEqualTo("1");
                assertThat(never.getBody()).contains("\"semaphore\":\"partner\"");
            }
            assertThat(partnerCalls).hasValue(1);

            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                ResponseEntity<String> refused = http.getNow("/api/quotes/A1");
                assertThat(refused.getStatusCode().value()).isEqualTo(503);
                assertThat(refused.getHeaders().getFirst("Retry-After")).isEqualTo("1");
                assertThat(refused.getBody()).contains("\"semaphore\":\"inbound\"");
            }
            await(() -> inbound.availablePermits() == inbound.permits()
                    && partnerLimit.availablePermits() == partnerLimit.permits());
        } finally {
            partner.disposeNow();
        }
    }
}
