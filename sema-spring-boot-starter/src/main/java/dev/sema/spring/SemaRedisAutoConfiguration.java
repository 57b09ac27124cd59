package dev.sema.spring;

import dev.sema.redis.RedisSemaphoreException;
import dev.sema.redis.RedisSemaphores;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Redis semaphores ({@code redis: true}), when sema-redis is on the class path: a {@link RedisSemaphores}
 * connected to {@code sema.redis.uri}, unless the application defines its own {@code RedisSemaphores} bean
 * (which is then used, and left to the application to close). The starter's own is closed when the
 * application context closes, after the registry: the permits this process still holds are released, its
 * waiters fail, and the semaphores stay open for the rest of the fleet. For Redis Cluster, define the bean
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
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "sema.redis", name = "uri")
    RedisSemaphores redisSemaphores(SemaProperties properties, Environment environment) {
        Settings settings = new Settings(environment);
        String uri = properties.redis().uri();
        try {
            return RedisSemaphores.connect(uri.trim());
        } catch (IllegalArgumentException e) {
            throw settings.invalid("sema.redis.uri", uri, "is not a Redis URI: " + Settings.redacted(e.getMessage()),
                    "Set sema.redis.uri to a Redis URI, e.g. redis://127.0.0.1:6379.", e);
        } catch (RedisSemaphoreException e) {
            throw settings.invalid("sema.redis.uri", uri, "Redis cannot be reached: "
                    + Settings.redacted(e.getMessage()), "Start Redis, or correct sema.redis.uri.", e);
        }
    }

    @Bean
    RedisSemaphoreSource semaRedisSemaphoreSource(ObjectProvider<RedisSemaphores> redis) {
        return new RedisSemaphoreOpener(redis);
    }
}
