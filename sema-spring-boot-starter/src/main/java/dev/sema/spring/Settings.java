package dev.sema.spring;

import java.util.regex.Pattern;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.Environment;

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
        return PLAIN_KEY.matcher(name).matches() ? "sema.semaphores." + name : "sema.semaphores[" + name + "]";
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
