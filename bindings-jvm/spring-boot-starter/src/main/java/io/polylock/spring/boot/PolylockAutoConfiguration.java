package io.polylock.spring.boot;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.shedlock.PolylockLockProvider;
import io.polylock.spring.integration.PolylockLockRegistry;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * A {@link PolylockClient} connected to {@code polylock.url} (closed with the context, which gives its locks back),
 * and, when their modules are on the classpath, ShedLock's {@link LockProvider} and Spring Integration's {@link
 * LockRegistry} over it. Each bean backs off when the application defines its own.
 */
@AutoConfiguration
@ConditionalOnClass(PolylockClient.class)
@EnableConfigurationProperties(PolylockProperties.class)
public class PolylockAutoConfiguration {
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public PolylockClient polylockClient(PolylockProperties properties) {
        return properties.getUrl() == null ? Polylock.connect() : Polylock.connect(properties.getUrl());
    }

    /** ShedLock's provider, with polylock-shedlock on the classpath. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({LockProvider.class, PolylockLockProvider.class})
    static class ShedLockConfiguration {
        @Bean
        @ConditionalOnMissingBean(LockProvider.class)
        public PolylockLockProvider polylockLockProvider(PolylockClient client) {
            return new PolylockLockProvider(client);
        }
    }

    /** Spring Integration's registry, with polylock-spring-integration on the classpath. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({LockRegistry.class, PolylockLockRegistry.class})
    static class LockRegistryConfiguration {
        @Bean
        @ConditionalOnMissingBean(LockRegistry.class)
        public PolylockLockRegistry polylockLockRegistry(PolylockClient client) {
            return new PolylockLockRegistry(client);
        }
    }
}
