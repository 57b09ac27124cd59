package dev.sema.spring;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

/**
 * The core of the starter: the {@code sema.*} properties, the {@link SemaphoreRegistry} built from
 * {@code sema.semaphores} (unless the application defines its own {@code SemaphoreRegistry} bean), and
 * {@link WithPermits} on the methods of Spring beans.
 */
@AutoConfiguration
@EnableConfigurationProperties(SemaProperties.class)
public class SemaAutoConfiguration {

    /** Created by Spring Boot. */
    public SemaAutoConfiguration() {
    }

    @Bean
    @ConditionalOnMissingBean(SemaphoreRegistry.class)
    SemaphoreRegistry semaphoreRegistry(SemaProperties properties, ObjectProvider<RedisSemaphoreSource> redis,
            Environment environment) {
        return new SemaphoreRegistryFactory(properties, redis.getIfAvailable(), new Settings(environment)).build();
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static WithPermitsPostProcessor withPermitsPostProcessor(ObjectProvider<SemaphoreRegistry> registry,
            Environment environment) {
        boolean proxyTargetClass = environment.getProperty("spring.aop.proxy-target-class", Boolean.class, true);
        return new WithPermitsPostProcessor(registry, proxyTargetClass);
    }
}
