package dev.sema.spring;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Hashtable;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.CommandLinePropertySource;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Names the {@code sema.*} properties in messages, with the value as the application wrote it and where it
 * came from, found in the {@link Environment}.
 */
final class Settings {
    private static final Pattern PLAIN_KEY = Pattern.compile("[a-z0-9][a-z0-9-]*");
    /** The password of a URI's user information: {@code redis://user:secret@host} shows as {@code redis://user:***@host}. */
    private static final Pattern PASSWORD = Pattern.compile("(://[^:@/\\s]*:)[^@/\\s]+@");

    private final Environment environment;

    /** @param environment where the properties came from; {@code null} when unknown (no origins then) */
    Settings(Environment environment) {
        this.environment = environment;
    }

    /** {@code sema.semaphores.db}, or {@code sema.semaphores[Partner.Api]} for a name that needs brackets. */
    static String semaphore(String name) {
        return key("sema.semaphores", name);
    }

    /** The entry {@code key} of the map property {@code map}: {@code map.key}, or {@code map[Key]}. */
    static String key(String map, String key) {
        return PLAIN_KEY.matcher(key).matches() ? map + "." + key : map + "[" + key + "]";
    }

    /**
     * The keys of the map property {@code property} in the order the application declared them, where that order
     * means something (partitions' priority, the first matching partition path). Spring Boot's binder puts the
     * keys of the source with the highest precedence first, so that an environment variable changing one share
     * would move that partition to the top; here a key keeps the place it has in the source of lowest precedence
     * that declares it (application.yml, say), and a key that only a later source declares comes after those
     * declared before. Environment variables, system properties and command-line arguments have no order: two or
     * more keys that first appear in one of them cannot be put in an order, and stop the start.
     *
     * @param property the map property, such as {@code sema.semaphores.api.partitions}
     * @param bound the keys as bound
     * @param scalar whether the values are single values (a key is then the whole rest of a property's name, as
     *        the binder reads it) rather than lists (then only its next element)
     * @param what what the keys are, for the message ({@code "partitions"})
     * @return the bound keys, each once, in declaration order
     * @throws SemaConfigurationException if the order cannot be told
     */
    List<String> declared(String property, Collection<String> bound, boolean scalar, String what) {
        ConfigurationPropertyName root = ConfigurationPropertyName.ofIfValid(property);
        if (environment == null || root == null || bound.size() < 2) {
            return List.copyOf(bound);
        }
        List<ConfigurationPropertySource> sources = new ArrayList<>();
        ConfigurationPropertySources.get(environment).forEach(sources::add);
        Set<String> placed = new LinkedHashSet<>();
        for (int i = sources.size() - 1; i >= 0; i--) { // lowest precedence first
            if (!(sources.get(i) instanceof IterableConfigurationPropertySource source)) {
                continue;
            }
            List<String> fresh = new ArrayList<>();
            source.filter(root::isAncestorOf).forEach(name -> {
                String key = keyOf(root, name, scalar);
                if (bound.contains(key) && placed.add(key)) {
                    fresh.add(key);
                }
            });
            if (fresh.size() > 1 && !ordered(source.getUnderlyingSource())) {
                String from = source.getUnderlyingSource() instanceof PropertySource<?> p ? p.getName()
                        : String.valueOf(source.getUnderlyingSource());
                throw invalid(property, bound, "the " + what + " " + fresh + " are declared only in " + from
                        + ", which has no order, and the order of the " + what + " is their priority",
                        "Declare " + property + " in application.yml or application.properties, in order;"
                                + " environment variables and system properties may then change their values.");
            }
        }
        placed.addAll(bound); // keys of a source that cannot be listed keep the binder's order
        return List.copyOf(placed);
    }

    /** The key of a map as the binder reads it from {@code name} under {@code root}. */
    private static String keyOf(ConfigurationPropertyName root, ConfigurationPropertyName name, boolean scalar) {
        int from = root.getNumberOfElements();
        int to = scalar ? name.getNumberOfElements() : from + 1;
        StringBuilder key = new StringBuilder();
        for (int i = from; i < to; i++) {
            if (!key.isEmpty()) {
                key.append('.');
            }
            key.append(name.getElement(i, ConfigurationPropertyName.Form.ORIGINAL));
        }
        return key.toString();
    }

    /** Whether the properties of {@code source} come in the order they were written. */
    private static boolean ordered(Object source) {
        if (source instanceof SystemEnvironmentPropertySource || source instanceof CommandLinePropertySource<?>) {
            return false;
        }
        Object map = source instanceof PropertySource<?> p ? p.getSource() : null;
        // Properties (system properties) are a Hashtable; a HashMap has no order either.
        return !(map instanceof Hashtable<?, ?>) && !(map instanceof java.util.HashMap<?, ?>
                && !(map instanceof LinkedHashMap<?, ?>));
    }

    /** A mistake in {@code property}, whose bound value is {@code bound}. */
    SemaConfigurationException invalid(String property, Object bound, String reason, String action) {
        return invalid(property, bound, reason, action, null);
    }

    SemaConfigurationException invalid(String property, Object bound, String reason, String action, Throwable cause) {
        ConfigurationProperty written = find(property);
        String value = written != null && written.getValue() != null ? String.valueOf(written.getValue())
                : bound == null ? "(not set)" : String.valueOf(bound);
        value = redacted(value);
        String origin = written != null && written.getOrigin() != null ? written.getOrigin().toString() : null;
        return new SemaConfigurationException(SemaConfigurationException.Kind.PROPERTY, property, value, origin,
                reason, action == null ? "Update your application's configuration." : action, cause);
    }

    /** {@code text} with the password of every URI in it replaced by {@code ***}. */
    static String redacted(String text) {
        return text == null ? null : PASSWORD.matcher(text).replaceAll("$1***@");
    }

    private ConfigurationProperty find(String property) {
        if (environment == null) {
            return null;
        }
        ConfigurationPropertyName name = ConfigurationPropertyName.ofIfValid(property);
        if (name == null) {
            return null;
        }
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            ConfigurationProperty p = source.getConfigurationProperty(name);
            if (p != null) {
                return p;
            }
        }
        return null;
    }
}
