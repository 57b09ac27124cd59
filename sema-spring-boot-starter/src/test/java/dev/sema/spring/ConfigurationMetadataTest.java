package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The configuration metadata the jar ships for IDE completion: every sema.* property, with descriptions. */
@Timeout(30)
class ConfigurationMetadataTest {

    @Test
    void everyPropertyIsDescribed() throws Exception {
        JsonNode metadata;
        try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).as("META-INF/spring-configuration-metadata.json").isNotNull();
            metadata = JsonMapper.builder().build().readTree(in);
        }
        List<String> names = new ArrayList<>();
        for (JsonNode p : metadata.get("properties")) {
            String name = p.get("name").asString();
            names.add(name);
            if (name.startsWith("sema.")) {
                assertThat(p.has("description")).as(name + " has a description").isTrue();
                assertThat(p.get("description").asString()).as(name).doesNotContain("{@");
            }
        }
        assertThat(names).contains("sema.redis.uri", "sema.semaphores", "sema.web.semaphore", "sema.web.paths",
                "sema.web.max-wait", "sema.web.retry-after", "sema.web.partition-header", "sema.web.partition-paths",
                "sema.web.keyed", "sema.web.key", "sema.keyed",
                "sema.metrics.per-sample-timers",
                "management.endpoint.semaphores.access");
        JsonNode semaphores = find(metadata.get("properties"), "sema.semaphores");
        assertThat(semaphores.get("type").asString())
                .isEqualTo("java.util.Map<java.lang.String,dev.sema.spring.SemaProperties$SemaphoreProperties>");
        assertThat(find(metadata.get("properties"), "sema.keyed").get("type").asString())
                .isEqualTo("java.util.Map<java.lang.String,dev.sema.spring.SemaProperties$KeyedProperties>");
        List<String> hints = new ArrayList<>();
        metadata.get("hints").forEach(h -> hints.add(h.get("name").asString()));
        assertThat(hints).contains("sema.redis.uri", "sema.semaphores.keys", "sema.web.paths", "sema.web.max-wait",
                "sema.keyed.keys", "sema.web.key");
        assertThat(find(metadata.get("properties"), "sema.web.max-wait").get("defaultValue").asString())
                .isEqualTo("0ms");
    }

    private static JsonNode find(JsonNode properties, String name) {
        for (JsonNode p : properties) {
            if (p.get("name").asString().equals(name)) {
                return p;
            }
        }
        throw new AssertionError(name + " not in the metadata");
    }
}
