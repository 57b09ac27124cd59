package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.Semaphore;
import java.util.Map;
import java.util.Optional;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * An application's own SemaphoreRegistry bean, holding one local semaphore named {@code own} with
 * {@link #PERMITS} permits: the starter must back off for it, and its other parts must use it.
 */
@Configuration(proxyBeanMethods = false)
class OwnRegistryConfiguration {
    static final int PERMITS = 5;

    @Bean
    SemaphoreRegistry ownRegistry() {
        Semaphore own = Semaphore.builder().name("own").permits(PERMITS).build();
        return new SemaphoreRegistry() {
            @Override
            public Semaphore get(String name) {
                return find(name).orElseThrow();
            }

            @Override
            public Optional<Semaphore> find(String name) {
                return "own".equals(name) ? Optional.of(own) : Optional.empty();
            }

            @Override
            public Map<String, Semaphore> all() {
                return Map.of("own", own);
            }

            @Override
            public Optional<AdaptiveLimit> adaptive(String name) {
                return Optional.empty();
            }
        };
    }
}
