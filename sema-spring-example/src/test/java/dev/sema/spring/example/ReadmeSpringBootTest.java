package dev.sema.spring.example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.spring.SemaphoreRegistry;
import java.io.IOException;
import java.io.StringReader;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.ClassPathResource;
import org.springframework.core.io.Resource;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.InputSource;

/**
 * The README's Spring Boot section, which sema-examples' ReadmeExamplesTest leaves to this module (its classes need
 * Spring Boot): its Java is the example's source verbatim, its YAML is part of the example's application.yml and
 * runs the example on its own, the endpoint answers what it shows, and its dependencies are the example's (all of
 * them, with versions and scopes as written, but for the test dependencies and sema-redis of the redis profile).
 */
@Timeout(60)
class ReadmeSpringBootTest {
    private static final Pattern BLOCK = Pattern.compile("```(\\w+)\\n(.*?)```", Pattern.DOTALL);
    /** The example's dependencies that the section's example does not use: sema-redis is for its redis profile. */
    private static final Set<String> NOT_FOR_THE_SECTION = Set.of("dev.sema:sema-redis");

    @Test
    void everyJavaBlockIsTheExamplesSourceVerbatim() throws IOException {
        List<String> java = blocks("java");
        assertThat(java).isNotEmpty();
        String sources;
        try (Stream<Path> files = Files.list(Path.of("src/main/java/dev/sema/spring/example"))) {
            List<String> texts = new ArrayList<>();
            for (Path f : files.sorted().toList()) {
                texts.add(Files.readString(f));
            }
            sources = normalized(String.join("\n", texts));
        }
        for (String block : java) {
            assertThat(sources).as("a Java block of the README's Spring Boot section is not in sema-spring-example's"
                    + " sources (update them together):\n" + block).contains(normalized(block));
        }
    }

    @Test
    void theYamlBlockIsPartOfTheExamplesApplicationYml() throws IOException {
        Map<String, Object> readme = flat(new ByteArrayResource(yaml().getBytes()));
        Map<String, Object> example = flat(new ClassPathResource("application.yml"));

        assertThat(readme).containsKeys("sema.semaphores.inbound.adaptive.algorithm", "sema.web.semaphore",
                "sema.semaphores.reports.permits", "management.metrics.distribution.percentiles-histogram.sema");
        for (Map.Entry<String, Object> e : readme.entrySet()) {
            String key = e.getKey();
            String value = String.valueOf(e.getValue());
            assertThat(example).as("the example's application.yml sets " + key).containsKey(key);
            String theirs = String.valueOf(example.get(key));
            if (value.contains(",")) {
                assertThat(items(theirs)).as(key).containsAll(items(value)); // the example exposes more endpoints
            } else {
                assertThat(theirs).as(key).isEqualTo(value);
            }
        }
    }

    @Test
    void theExampleRunsOnTheYamlBlockAloneAndAnswersWhatTheSectionShows(@TempDir Path dir) throws IOException {
        Path yml = dir.resolve("readme.yml");
        Files.writeString(yml, yaml());
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ExampleApplication.class)
                .run("--spring.config.location=file:" + yml, "--server.port=0", "--server.address=127.0.0.1",
                        "--logging.level.root=warn");
                Http http = new Http(((WebServerApplicationContext) context).getWebServer().getPort())) {
            SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
            assertThat(registry.all().keySet()).containsExactly("inbound", "reports");
            assertThat(registry.adaptive("inbound")).isPresent();

            // The endpoint answers the JSON the section shows.
            String shown = section().lines().filter(l -> l.startsWith("# {\"kind\"")).findFirst().orElseThrow()
                    .substring(2);
            assertThat(http.get("/actuator/semaphores/reports").body()).isEqualTo(shown);

            // The filter guards /api/** only, with 503 and Retry-After; @WithPermits guards render.
            Semaphore inbound = registry.get("inbound");
            try (Permit all = inbound.tryAcquire(inbound.permits()).orElseThrow()) {
                HttpResponse<String> refused = http.get("/api/quotes/ACME");
                assertThat(refused.statusCode()).isEqualTo(503);
                assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
                assertThat(http.get("/reports/1").statusCode()).isEqualTo(200);
            }
            Semaphore reports = registry.get("reports");
            try (Permit all = reports.tryAcquire(reports.permits()).orElseThrow()) {
                assertThat(http.get("/reports/2").statusCode()).isEqualTo(503);
            }

            // The POST the section shows.
            HttpResponse<String> raised = http.post("/actuator/semaphores/reports", "{\"permits\": 16}");
            assertThat(raised.statusCode()).isEqualTo(200);
            assertThat(reports.permits()).isEqualTo(16);

            String scrape = http.get("/actuator/prometheus").body();
            assertThat(scrape).contains("sema_permits_limit{name=\"reports\"} 16.0",
                    "sema_acquire_seconds_bucket{name=\"reports\",outcome=\"timeout\",partition=\"\",le=\"+Inf\"} 1");
        }
    }

    @Test
    void theDependenciesAreTheExamples() throws Exception {
        List<String> xml = blocks("xml");
        assertThat(xml).hasSize(1);
        Element block = parse(xml.get(0));
        assertThat(block.getTagName()).as("the section's XML block is a <dependencies> element")
                .isEqualTo("dependencies");
        List<Dependency> readme = dependencies(block);

        Element project = parse(Files.readString(Path.of("pom.xml")));
        List<Element> declared = children(project, "dependencies");
        assertThat(declared).hasSize(1);
        List<Dependency> example = dependencies(declared.get(0)).stream()
                .filter(d -> !"test".equals(d.scope()) && !NOT_FOR_THE_SECTION.contains(d.key()))
                .toList();

        // Both ways, with versions and scopes as written: what the section lists is what the example compiles with.
        assertThat(readme).as("the README's Spring Boot dependencies against sema-spring-example's pom.xml"
                + " (update them together)").containsExactlyInAnyOrderElementsOf(example);
        assertThat(readme).extracting(Dependency::key)
                .contains("dev.sema:sema-spring-boot-starter", "dev.sema:sema-micrometer");
        assertThat(section()).as("the section points to the BOM's import for sema's versions")
                .contains("(#use-sema-in-your-project)");
    }

    /** A dependency as a POM writes it; {@code version} and {@code scope} are null when it leaves them out. */
    private record Dependency(String groupId, String artifactId, String version, String scope) {
        String key() {
            return groupId + ":" + artifactId;
        }
    }

    private static List<Dependency> dependencies(Element dependencies) {
        List<Dependency> all = new ArrayList<>();
        for (Element d : children(dependencies, "dependency")) {
            all.add(new Dependency(text(d, "groupId"), text(d, "artifactId"), text(d, "version"), text(d, "scope")));
        }
        return all;
    }

    private static Element parse(String xml) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new InputSource(new StringReader(xml))).getDocumentElement();
    }

    private static List<Element> children(Element parent, String name) {
        List<Element> children = new ArrayList<>();
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                children.add(e);
            }
        }
        return children;
    }

    private static String text(Element parent, String name) {
        List<Element> found = children(parent, name);
        assertThat(found).as("<" + name + "> in a <" + parent.getTagName() + ">").hasSizeLessThanOrEqualTo(1);
        return found.isEmpty() ? null : found.get(0).getTextContent().strip();
    }

    // ---------------------------------------------------------------- the section

    /**
     * The README's "## Spring Boot" section, up to the next section, but for its "### WebFlux" subsection, whose
     * examples sema-spring-boot-starter's ReadmeWebFluxTest checks.
     */
    static String section() throws IOException {
        String readme = Files.readString(ProjectFiles.at("README.md"));
        int start = readme.indexOf("\n## Spring Boot\n");
        assertThat(start).as("README.md has a \"## Spring Boot\" section").isNotNegative();
        int end = readme.indexOf("\n## ", start + 1);
        String section = end < 0 ? readme.substring(start) : readme.substring(start, end);
        int webflux = section.indexOf("\n### WebFlux\n");
        if (webflux >= 0) {
            int next = section.indexOf("\n### ", webflux + 1);
            section = section.substring(0, webflux) + (next < 0 ? "" : section.substring(next));
        }
        return section;
    }

    private static List<String> blocks(String language) throws IOException {
        List<String> blocks = new ArrayList<>();
        Matcher m = BLOCK.matcher(section());
        while (m.find()) {
            if (m.group(1).equals(language)) {
                blocks.add(m.group(2));
            }
        }
        return blocks;
    }

    private static String yaml() throws IOException {
        List<String> yaml = blocks("yaml");
        assertThat(yaml).hasSize(1);
        return yaml.get(0);
    }

    /** A YAML file's first document as property names and values, as Spring Boot reads it. */
    private static Map<String, Object> flat(Resource resource) throws IOException {
        List<PropertySource<?>> documents = new YamlPropertySourceLoader().load("yaml", resource);
        assertThat(documents).isNotEmpty();
        EnumerablePropertySource<?> first = (EnumerablePropertySource<?>) documents.get(0);
        return Arrays.stream(first.getPropertyNames())
                .collect(Collectors.toMap(n -> n, n -> String.valueOf(first.getProperty(n))));
    }

    private static List<String> items(String list) {
        return Arrays.stream(list.split(",")).map(String::strip).toList();
    }

    /** Code with indentation, trailing space and blank lines removed, as sema-examples' ReadmeExamplesTest does. */
    private static String normalized(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
    }
}
