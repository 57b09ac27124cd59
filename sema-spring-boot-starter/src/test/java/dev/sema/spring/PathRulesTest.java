package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.util.AntPathMatcher;

/** {@link PathRules} answers as {@link AntPathMatcher} does, for the patterns it compiles and those it hands on. */
@Timeout(30)
class PathRulesTest {
    private static final List<String> PATTERNS = List.of("/**", "/actuator/**", "/actuator", "/api/**", "/api/*/x",
            "/api/v?", "/a/b/**", "/health", "/health/", "/api/{id}", "/**/x", "/ap*", "/api/**/x", "/");
    private static final List<String> PATHS = List.of("", "/", "/actuator", "/actuator/", "/actuator/health",
            "/actuator/health/liveness", "/actuatorial", "/actuatorial/x", "/app/actuator/health", "/api", "/api/",
            "/api/x", "/api/v1", "/api/v1/x", "/a/b", "/a/b/c", "/a/bc", "/health", "/health/", "/healthz",
            "/x", "/ap", "/apx", "actuator/health");

    @Test
    void everyPatternMatchesWhatAntPathMatcherMatches() {
        AntPathMatcher ant = new AntPathMatcher();
        for (String pattern : PATTERNS) {
            PathRules rules = new PathRules(List.of(pattern));
            for (String path : PATHS) {
                assertThat(rules.matchesAny(path)).as("%s against %s", pattern, path)
                        .isEqualTo(ant.match(pattern, path));
            }
        }
    }

    @Test
    void anyOfSeveralPatterns() {
        PathRules rules = new PathRules(List.of("/actuator", "/actuator/**", "/open/*"));
        assertThat(rules.matchesAny("/actuator/health")).isTrue();
        assertThat(rules.matchesAny("/open/quick")).isTrue();
        assertThat(rules.matchesAny("/api/quick")).isFalse();
        assertThat(new PathRules(List.of()).matchesAny("/")).isFalse();
    }
}
