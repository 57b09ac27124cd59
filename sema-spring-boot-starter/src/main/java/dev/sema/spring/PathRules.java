package dev.sema.spring;

import java.util.List;
import org.springframework.util.AntPathMatcher;

/**
 * Ant-style path patterns, matched as {@link AntPathMatcher} matches them, but compiled once: a pattern that is a
 * literal path ({@code /health}), or a literal prefix with {@code /**} ({@code /actuator/**}, {@code /**}), is
 * matched with a string comparison, which is what nearly every {@code sema.web.paths} and
 * {@code exclude-paths} entry is; any other goes to an {@code AntPathMatcher}. The filter matches every request
 * against these, so the common forms should cost a comparison, not a tokenization.
 */
final class PathRules {
    private static final AntPathMatcher ANT = new AntPathMatcher();

    private final Rule[] rules;

    PathRules(List<String> patterns) {
        this.rules = patterns.stream().map(PathRules::compile).toArray(Rule[]::new);
    }

    /** Whether any pattern matches {@code path}. */
    boolean matchesAny(String path) {
        for (Rule rule : rules) {
            if (rule.matches(path)) {
                return true;
            }
        }
        return false;
    }

    private static Rule compile(String pattern) {
        if (!pattern.startsWith("/")) {
            return path -> ANT.match(pattern, path);
        }
        if (pattern.endsWith("/**") && literal(pattern.substring(0, pattern.length() - 3))) {
            String prefix = pattern.substring(0, pattern.length() - 3);
            if (prefix.isEmpty()) {
                return path -> path.startsWith("/"); // as AntPathMatcher: a rooted pattern matches rooted paths
            }
            String under = prefix + "/";
            return path -> path.startsWith(prefix) && (path.length() == prefix.length() || path.startsWith(under));
        }
        if (literal(pattern) && !pattern.endsWith("/")) {
            return pattern::equals;
        }
        return path -> ANT.match(pattern, path);
    }

    /** No wildcard, variable, or anything AntPathMatcher would read other than as itself. */
    private static boolean literal(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '*' || c == '?' || c == '{' || c == '}' || Character.isWhitespace(c)) {
                return false;
            }
        }
        return !s.contains("//");
    }

    @FunctionalInterface
    private interface Rule {
        boolean matches(String path);
    }
}
