package dev.sema.spring;

import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * {@code sema.web}, checked once: which requests are limited, the semaphore (or the partition of it) each takes its
 * permit of, how long it waits, and the {@code Retry-After} of a refusal. It knows nothing of servlets, so that a
 * reactive filter can share it with {@link SemaphoreFilter}.
 *
 * <p>A request's partition: the one its {@code partition-header} names, when it names one; else the first of
 * {@code partition-paths}, in declaration order, with a pattern that matches its path; else none, and the request is
 * one of the semaphore's own (API.md §11c). The header comes first because it speaks of this one request (a proxy
 * that knows the client marks it), where the paths are the rule for every request of a route.
 *
 * <p>With {@code keyed}, a request also takes a permit of its key's semaphore in that family, the key read from the
 * request as {@code key} says ({@link #key}); either part may be configured alone.
 */
final class WebLimit {
    static final String PARTITION_PATHS = "sema.web.partition-paths";
    private static final System.Logger LOG = System.getLogger(WebLimit.class.getName());
    /** A class of the actuator's web endpoints: present when the application has the actuator. */
    private static final String ACTUATOR = "org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint";

    /** Where {@code sema.web.key} reads a request's key from. */
    enum KeySource {
        HEADER, PRINCIPAL, REMOTE_ADDRESS
    }

    /**
     * What a limited request takes its permits of, as {@link #admit} decides: its key's semaphore in the family and
     * the semaphore (or the partition's view), each {@code null} when not configured; or, with {@code badRequest}
     * set, nothing, the request being answered 400 with that message.
     */
    record Admission(Semaphore key, Semaphore semaphore, String badRequest) {
    }

    /** What the key and partition rules read of a request, whatever the web stack. */
    interface RequestKeys {
        /** The header's first value, or {@code null}. */
        String header(String name);

        /** The authenticated user's name, or {@code null}. */
        String principal();

        /** The client's address, or {@code null}. */
        String remoteAddress();
    }

    /** The semaphore of every limited request, or {@code null} when only a keyed family limits them. */
    private final Semaphore semaphore;
    /** The keyed family ({@code sema.web.keyed}), or {@code null}. */
    private final KeyedSemaphore<Object> family;
    private final KeySource keySource;
    /** The header of {@link KeySource#HEADER}, else {@code null}. */
    private final String keyHeader;
    private final List<String> patterns;
    private final List<String> excluded;
    private final PathRules limited;
    private final PathRules bypassed;
    private final Duration maxWait;
    private final Duration retryAfter;
    /** The header naming a request's partition, or {@code null}. */
    private final String partitionHeader;
    /** The views by partition name, for the header; empty without one. */
    private final Map<String, Semaphore> views;
    /** {@code partition-paths}, in declaration order: the rules and the views they lead to. */
    private final List<String> pathPartitions;
    private final PathRules[] partitionRules;
    private final Semaphore[] partitionViews;

    private WebLimit(Semaphore semaphore, List<String> patterns, List<String> excluded, Duration maxWait,
            Duration retryAfter, String partitionHeader, Map<String, List<String>> partitionPaths,
            KeyedSemaphore<Object> family, KeySource keySource, String keyHeader) {
        this.semaphore = semaphore;
        this.family = family;
        this.keySource = keySource;
        this.keyHeader = keyHeader;
        this.patterns = List.copyOf(patterns);
        this.excluded = List.copyOf(excluded);
        this.limited = new PathRules(this.patterns);
        this.bypassed = new PathRules(this.excluded);
        this.maxWait = maxWait;
        this.retryAfter = retryAfter;
        this.partitionHeader = partitionHeader;
        Map<String, Semaphore> byName = new HashMap<>();
        if (partitionHeader != null) {
            for (String partition : semaphore.partitionNames()) {
                byName.put(partition, semaphore.partition(partition));
            }
        }
        this.views = Map.copyOf(byName);
        this.pathPartitions = List.copyOf(partitionPaths.keySet());
        this.partitionRules = new PathRules[pathPartitions.size()];
        this.partitionViews = new Semaphore[pathPartitions.size()];
        for (int i = 0; i < pathPartitions.size(); i++) {
            partitionRules[i] = new PathRules(partitionPaths.get(pathPartitions.get(i)));
            partitionViews[i] = semaphore.partition(pathPartitions.get(i));
        }
    }

    /**
     * Checks {@code sema.web} against the registry.
     *
     * @param registry the semaphores
     * @param web the properties
     * @param defaultExcluded the {@code exclude-paths} when the application sets none
     * @param settings for the order of {@code partition-paths} and the messages
     * @return the checked limit
     * @throws SemaConfigurationException naming the property and the value of the first mistake
     */
    static WebLimit check(SemaphoreRegistry registry, SemaProperties.Web web, List<String> defaultExcluded,
            Settings settings) {
        String name = web.semaphore() == null ? "" : web.semaphore().trim();
        KeyedSemaphore<Object> family = null;
        KeySource keySource = null;
        String keyHeader = null;
        String keyed = web.keyed() == null ? "" : web.keyed().trim();
        String key = web.key() == null ? "" : web.key().trim();
        if (!keyed.isEmpty()) {
            family = registry.allKeyed().get(keyed);
            if (family == null) {
                throw settings.invalid("sema.web.keyed", keyed, "names no keyed family (" + (registry.allKeyed()
                        .isEmpty() ? "sema.keyed configures none" : "there are " + registry.allKeyed().keySet()) + ")",
                        "Configure " + Settings.key("sema.keyed", keyed) + ".permits, or set sema.web.keyed to one"
                                + " of the families.");
            }
            if (key.isEmpty()) {
                throw settings.invalid("sema.web.key", null, "is required with sema.web.keyed: where a request's key"
                        + " comes from", "Set sema.web.key to header:NAME, principal or remote-address.");
            }
            if (key.regionMatches(true, 0, "header:", 0, 7) && !key.substring(7).isBlank()) {
                keySource = KeySource.HEADER;
                keyHeader = key.substring(7).trim();
            } else if (key.equalsIgnoreCase("principal")) {
                keySource = KeySource.PRINCIPAL;
            } else if (key.equalsIgnoreCase("remote-address")) {
                keySource = KeySource.REMOTE_ADDRESS;
            } else {
                throw settings.invalid("sema.web.key", key, "is not a key source: header:NAME (a header's value),"
                        + " principal (the authenticated user's name) or remote-address (the client's address)",
                        "Set sema.web.key to header:X-Tenant (say), principal or remote-address.");
            }
        } else if (!key.isEmpty()) {
            throw settings.invalid("sema.web.key", key, "applies only with sema.web.keyed, which is not set",
                    "Set sema.web.keyed to a family of sema.keyed, or remove sema.web.key.");
        }
        if (name.isEmpty()) {
            if (family == null) {
                throw settings.invalid("sema.web.semaphore", web.semaphore(), "names no semaphore, and sema.web.keyed"
                        + " no family: the filter has nothing to limit requests with",
                        "Set sema.web.semaphore to a semaphore of sema.semaphores, or sema.web.keyed to a family.");
            }
            String header = web.partitionHeader() == null || web.partitionHeader().isBlank() ? null
                    : web.partitionHeader().trim();
            if (header != null || !web.partitionPaths().isEmpty()) {
                throw settings.invalid(header != null ? "sema.web.partition-header" : PARTITION_PATHS, header != null
                        ? header : web.partitionPaths().keySet(), "partitions are those of sema.web.semaphore,"
                                + " which is not set", "Set sema.web.semaphore to the partitioned semaphore.");
            }
            checkDurations(web, settings);
            List<String> paths = paths(web, settings);
            List<String> excluded = web.excludePaths() != null ? patterns(settings, "sema.web.exclude-paths",
                    web.excludePaths()) : defaultExcluded;
            return new WebLimit(null, paths, excluded, web.maxWait(), web.retryAfter(), null, Map.of(), family,
                    keySource, keyHeader);
        }
        Semaphore semaphore = registry.find(name).orElseThrow(() -> settings.invalid("sema.web.semaphore", name,
                "names no semaphore (" + (registry.all().isEmpty() ? "sema.semaphores configures none"
                        : "there are " + registry.all().keySet()) + ")",
                "Configure sema.semaphores." + name + ".permits, or set sema.web.semaphore to one of the"
                        + " semaphores."));
        if (semaphore.maxPermits() < 1) {
            // Every filtered request would fail at request time (a request above the ceiling is a programming error).
            throw settings.invalid("sema.web.semaphore", name, "each request takes 1 permit, but semaphore '" + name
                    + "' has max-permits " + semaphore.maxPermits() + ", so no request could ever get one",
                    "Set " + Settings.semaphore(name) + ".max-permits (or .permits) to 1 or more.");
        }
        checkDurations(web, settings);
        List<String> paths = paths(web, settings);
        List<String> excluded = web.excludePaths() != null ? patterns(settings, "sema.web.exclude-paths",
                web.excludePaths()) : defaultExcluded;
        String header = web.partitionHeader() == null || web.partitionHeader().isBlank() ? null
                : web.partitionHeader().trim();
        if (header != null && semaphore.partitionNames().isEmpty()) {
            throw settings.invalid("sema.web.partition-header", header, "semaphore '" + name + "' has no partitions"
                    + " for the header to name", "Declare " + Settings.semaphore(name) + ".partitions, or remove"
                            + " sema.web.partition-header.");
        }
        Map<String, List<String>> partitionPaths = new LinkedHashMap<>();
        for (String partition : settings.declared(PARTITION_PATHS, web.partitionPaths().keySet(), false,
                "partition paths")) {
            String property = Settings.key(PARTITION_PATHS, partition);
            List<String> written = web.partitionPaths().get(partition);
            List<String> known = semaphore.partitionNames();
            if (!known.contains(partition)) {
                throw settings.invalid(property, written == null ? null : String.join(",", written),
                        "'" + partition + "' " + (known.isEmpty() ? "is no partition: semaphore '" + name
                                + "' has no partitions" : "names no partition of semaphore '" + name
                                + "' (its partitions are " + known + ")"),
                        "Name one of the partitions of " + Settings.semaphore(name) + ".partitions.");
            }
            List<String> rules = patterns(settings, property, written == null ? List.of() : written);
            if (rules.isEmpty()) {
                throw settings.invalid(property, written == null ? null : String.join(",", written), "names no path",
                        "List Ant-style patterns such as /api/export/**, or remove the partition from "
                                + PARTITION_PATHS + ".");
            }
            partitionPaths.put(partition, rules);
        }
        return new WebLimit(semaphore, paths, excluded, web.maxWait(), web.retryAfter(), header, partitionPaths,
                family, keySource, keyHeader);
    }

    /**
     * The default of {@code sema.web.exclude-paths}: the actuator's base path and everything under it, so that
     * health and readiness probes are never refused; nothing without the actuator, or when it is served on a port
     * of its own (its requests never reach the filter), or when its base path is the root (then the endpoints
     * cannot be told from the application's own paths by a prefix, and the application must list them).
     *
     * @param prefix what the filter's path within the application has before the actuator's base path (Spring MVC's
     *        servlet path; {@code "/"} for none)
     */
    static List<String> actuatorPaths(Environment environment, String prefix) {
        if (!ClassUtils.isPresent(ACTUATOR, WebLimit.class.getClassLoader())) {
            return List.of();
        }
        Integer managementPort = environment.getProperty("management.server.port", Integer.class);
        Integer serverPort = environment.getProperty("server.port", Integer.class, 8080);
        if (managementPort != null && !managementPort.equals(serverPort)) {
            return List.of();
        }
        String base = environment.getProperty("management.endpoints.web.base-path", "/actuator").trim();
        while (base.endsWith("/")) {
            base = base.substring(0, base.length() - 1);
        }
        if (base.isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "management.endpoints.web.base-path is /: sema.web cannot tell the"
                    + " actuator's endpoints from the application's paths, so it limits them too unless"
                    + " sema.web.exclude-paths lists them (e.g. /health/**)");
            return List.of();
        }
        if (!base.startsWith("/")) {
            base = "/" + base;
        }
        String before = prefix.trim();
        while (before.endsWith("/")) {
            before = before.substring(0, before.length() - 1);
        }
        if (!before.isEmpty() && !before.startsWith("/")) {
            before = "/" + before;
        }
        base = before + base;
        return List.of(base, base + "/**");
    }

    private static void checkDurations(SemaProperties.Web web, Settings settings) {
        if (web.maxWait().isNegative()) {
            throw settings.invalid("sema.web.max-wait", web.maxWait(), "must not be negative", null);
        }
        if (web.retryAfter().isNegative()) {
            throw settings.invalid("sema.web.retry-after", web.retryAfter(), "must not be negative", null);
        }
    }

    private static List<String> paths(SemaProperties.Web web, Settings settings) {
        List<String> paths = patterns(settings, "sema.web.paths", web.paths());
        if (paths.isEmpty()) {
            throw settings.invalid("sema.web.paths", String.join(",", web.paths()), "names no path",
                    "Leave sema.web.paths out for /**, or list Ant-style patterns such as /api/**.");
        }
        return paths;
    }

    private static List<String> patterns(Settings settings, String property, List<String> written) {
        List<String> patterns = written.stream().map(String::trim).filter(p -> !p.isEmpty()).toList();
        for (String pattern : patterns) {
            if (!pattern.startsWith("/")) {
                throw settings.invalid(property, String.join(",", written), "'" + pattern + "' must start with /",
                        "Write the paths as Ant-style patterns such as /api/**.");
            }
        }
        return patterns;
    }

    /** Whether a request of this path (within the application) is limited. */
    boolean limits(String path) {
        return !bypassed.matchesAny(path) && limited.matchesAny(path);
    }

    /**
     * What a limited request takes its permits of: its key's semaphore (when {@code sema.web.keyed} is set) and the
     * semaphore or partition ({@link #select}); or why it is answered 400, a missing key ({@link #missingKey}) or one
     * the family refuses ({@link #badKey}: on Redis, an empty key or one with a brace; limiting it under some other
     * key would share that key's limit).
     *
     * @param path the request's path within the application (read only when {@link #partitioned()})
     * @param request its headers, principal and address
     */
    Admission admit(String path, RequestKeys request) {
        Semaphore keySemaphore = null;
        if (family != null) {
            String key = key(request);
            if (key == null) {
                return new Admission(null, null, missingKey());
            }
            try {
                keySemaphore = family.get(key);
            } catch (IllegalArgumentException refused) {
                return new Admission(null, null, badKey(key, refused));
            }
        }
        Semaphore selected = semaphore == null ? null : partitioned() ? select(path, request::header) : semaphore;
        return new Admission(keySemaphore, selected, null);
    }

    /** Whether {@code sema.web.key} is {@code principal}: a reactive filter resolves it before {@link #admit}. */
    boolean keyedByPrincipal() {
        return keySource == KeySource.PRINCIPAL;
    }

    /**
     * What is left of {@code maxWait} since {@code startNanos}, for the second of a request's two acquires: zero
     * stays zero (a {@code tryAcquire}), as does time run out.
     */
    static Duration remaining(Duration maxWait, long startNanos) {
        if (maxWait.isZero()) {
            return maxWait;
        }
        long left = maxWait.toNanos() - (System.nanoTime() - startNanos);
        return Duration.ofNanos(Math.max(0, left));
    }

    /** Whether the semaphore a request takes its permit of depends on the request. */
    boolean partitioned() {
        return partitionHeader != null || partitionViews.length > 0;
    }

    /** The keyed family of {@code sema.web.keyed}, or {@code null}. */
    KeyedSemaphore<Object> family() {
        return family;
    }

    /**
     * A request's key, as {@code sema.web.key} reads it: a header's value (trimmed), the principal's name or the
     * client's address.
     *
     * @return the key, or {@code null} when the request has none (a blank one counts as none)
     */
    String key(RequestKeys request) {
        String key = switch (keySource) {
            case HEADER -> request.header(keyHeader);
            case PRINCIPAL -> request.principal();
            case REMOTE_ADDRESS -> request.remoteAddress();
        };
        return key == null || key.isBlank() ? null : key.trim();
    }

    /** Why a request without a key is refused: what it lacks. */
    String missingKey() {
        String lacks = switch (keySource) {
            case HEADER -> "the request has no " + keyHeader + " header";
            case PRINCIPAL -> "the request has no authenticated principal";
            case REMOTE_ADDRESS -> "the request has no remote address";
        };
        return lacks + ", which sema.web.key names as the key of keyed semaphore '" + family.name() + "'";
    }

    /** Why a request whose key the family refused ({@code refusal}) is refused: the key and the family's reason. */
    String badKey(String key, IllegalArgumentException refusal) {
        return "the key '" + key + "' that sema.web.key reads (" + (keySource == KeySource.HEADER ? "the " + keyHeader
                + " header" : keySource == KeySource.PRINCIPAL ? "the principal's name" : "the remote address")
                + ") is refused by keyed semaphore '" + family.name() + "': " + refusal.getMessage();
    }

    /**
     * The semaphore, or partition of it, that a limited request takes its permit of.
     *
     * @param path the request's path within the application
     * @param headers the request's headers: a name's first value, or {@code null}
     * @return the view of its partition, or the semaphore itself
     */
    Semaphore select(String path, UnaryOperator<String> headers) {
        if (partitionHeader != null) {
            String value = headers.apply(partitionHeader);
            Semaphore view = value == null ? null : views.get(value.trim());
            if (view != null) {
                return view;
            }
        }
        for (int i = 0; i < partitionRules.length; i++) {
            if (partitionRules[i].matchesAny(path)) {
                return partitionViews[i];
            }
        }
        return semaphore;
    }

    /** The semaphore of every limited request, or {@code null} when only a keyed family limits them. */
    Semaphore semaphore() {
        return semaphore;
    }

    Duration maxWait() {
        return maxWait;
    }

    Duration retryAfter() {
        return retryAfter;
    }

    @Override
    public String toString() {
        List<String> partitions = new ArrayList<>();
        if (partitionHeader != null) {
            partitions.add("partition-header=" + partitionHeader);
        }
        if (!pathPartitions.isEmpty()) {
            partitions.add("partition-paths=" + pathPartitions);
        }
        if (family != null) {
            partitions.add("keyed=" + family.name() + ", key=" + (keySource == KeySource.HEADER ? "header:"
                    + keyHeader : keySource.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')));
        }
        return (semaphore == null ? "" : semaphore.name() + ", ") + "paths=" + patterns + ", exclude-paths="
                + excluded + ", max-wait=" + Durations.format(maxWait) + (partitions.isEmpty() ? "" : ", " + String.join(", ", partitions));
    }
}
