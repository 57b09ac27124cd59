package dev.sema.spring;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ClassPathResource;

/** Loads a YAML file of the test resources into a context's environment, as application.yml would be. */
final class YamlFiles {
    private YamlFiles() {
    }

    static void load(ConfigurableApplicationContext context, String file) {
        try {
            for (PropertySource<?> source : new YamlPropertySourceLoader().load(file, new ClassPathResource(file))) {
                context.getEnvironment().getPropertySources().addLast(source);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** As {@link #load}, above every other source, as a profile's file is above application.yml. */
    static void loadFirst(ConfigurableApplicationContext context, String file) {
        try {
            for (PropertySource<?> source : new YamlPropertySourceLoader().load(file, new ClassPathResource(file))) {
                context.getEnvironment().getPropertySources().addFirst(source);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
