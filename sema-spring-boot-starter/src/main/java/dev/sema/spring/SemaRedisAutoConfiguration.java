package dev.sema.spring;

import dev.sema.redis.RedisSemaphores;
import io.lettuce.core.RedisURI;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Redis semaphores ({@code redis: true}), when sema-redis is on the class path: through the application's own
 * {@link RedisSemaphores} bean if it defines one (left to the application to close), else through a connection to
 * {@code sema.redis.uri} that the starter makes and owns ({@link RedisConnector}). That connection is not a bean:
 * it may not exist yet, since the application starts while Redis is unreachable (its Redis semaphores refuse until
 * Redis is reached) unless {@code sema.redis.fail-fast} is {@code true}. It is closed when the application context
 * closes, after the registry: the permits this process still holds are released, its waiters fail, and the
 * semaphores stay open for the rest of the fleet. For Redis Cluster, define the bean
 * ({@code RedisSemaphores.connectCluster(...)}).
 */
@AutoConfiguration(before = SemaAutoConfiguration.class)
@ConditionalOnClass(RedisSemaphores.class)
@EnableConfigurationProperties(SemaProperties.class)
public class SemaRedisAutoConfiguration {

    /** Created by Spring Boot. */
    public SemaRedisAutoConfiguration() {
    }

    @Bean(destroyMethod = "close")
    RedisConnector semaRedisConnector(SemaProperties properties, ObjectProvider<RedisSemaphores> own,
            Environment environment) {
        Settings settings = new Settings(environment);
        String uri = properties.redis().uri();
        if (uri != null && !uri.isBlank()) {
            try {
                RedisURI.create(uri.trim());
            } catch (IllegalArgumentException e) {
                throw settings.invalid("sema.redis.uri", uri, "is not a Redis URI: " + Settings.redacted(e.getMessage()),
                        "Set sema.redis.uri to a Redis URI, e.g. redis://127.0.0.1:6379.", e);
            }
        }
        RedisConnector connector = new RedisConnector(own.getIfAvailable(), uri == null || uri.isBlank() ? null
                : uri.trim(), RedisSemaphores::connect, properties.redis().failFast());
        try {
            connector.checkAtStartup();
        } catch (RedisConnector.Unreachable e) {
            throw unreachable(settings, uri, e);
        }
        return connector;
    }

    static SemaConfigurationException unreachable(Settings settings, String uri, RedisConnector.Unreachable e) {
        return settings.invalid("sema.redis.uri", uri, "Redis cannot be reached: " + Settings.redacted(e.getMessage())
                + " (sema.redis.fail-fast is true)", "Start Redis, or correct sema.redis.uri, or set"
                + " sema.redis.fail-fast to false to start without it (its semaphores refuse until it is reached).",
                e.getCause());
    }

    @Bean
    RedisSemaphoreSource semaRedisSemaphoreSource(RedisConnector connector) {
        return new RedisSemaphoreOpener(connector);
    }
}
