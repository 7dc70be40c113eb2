package io.polylock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.polylock.PolylockClient;
import io.polylock.shedlock.PolylockLockProvider;
import io.polylock.spring.integration.PolylockLockRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

/** The starter in real Spring Boot contexts on an SQLite file. */
class PolylockAutoConfigurationTest {
    @TempDir
    Path dir;

    private ApplicationContextRunner runner() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(PolylockAutoConfiguration.class))
                .withPropertyValues("polylock.url=sqlite://" + dir.resolve("locks.db"));
    }

    @SpringBootApplication
    static class App {}

    @Test
    void aSpringBootApplicationGetsTheClientAndBothIntegrations() {
        PolylockClient client;
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.NONE)
                .properties("polylock.url=sqlite://" + dir.resolve("app.db"), "spring.main.banner-mode=off")
                .run()) {
            client = context.getBean(PolylockClient.class);
            LockProvider provider = context.getBean(LockProvider.class);
            LockRegistry registry = context.getBean(LockRegistry.class);
            assertThat(provider).isInstanceOf(PolylockLockProvider.class);
            assertThat(registry).isInstanceOf(PolylockLockRegistry.class);

            // One client under both: a job ShedLock runs and a registry lock of the same name exclude each other.
            SimpleLock job = provider.lock(new LockConfiguration(Instant.now(), "nightly", Duration.ofMinutes(1),
                    Duration.ZERO)).orElseThrow();
            Lock lock = registry.obtain("nightly");
            assertThat(lock.tryLock()).isFalse();
            job.unlock();
            assertThat(lock.tryLock()).isTrue();
            lock.unlock();
        }
        assertThat(client.isShutdown()).describedAs("the client closes with the context").isTrue();
    }

    @Test
    void withoutShedLockThereIsNoProvider() {
        runner().withClassLoader(new FilteredClassLoader(LockProvider.class)).run(context -> {
            assertThat(context).hasSingleBean(PolylockClient.class);
            assertThat(context).doesNotHaveBean(LockProvider.class);
            assertThat(context).hasSingleBean(PolylockLockRegistry.class);
        });
    }

    @Test
    void withoutSpringIntegrationThereIsNoRegistry() {
        runner().withClassLoader(new FilteredClassLoader(LockRegistry.class)).run(context -> {
            assertThat(context).hasSingleBean(PolylockClient.class);
            assertThat(context).hasSingleBean(PolylockLockProvider.class);
            assertThat(context).doesNotHaveBean(LockRegistry.class);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnBeans {
        @Bean
        LockRegistry lockRegistry() {
            return new DefaultLockRegistry();
        }
    }

    @Test
    void theApplicationsOwnBeansWin() {
        runner().withUserConfiguration(OwnBeans.class).run(context -> {
            assertThat(context).hasSingleBean(LockRegistry.class);
            assertThat(context.getBean(LockRegistry.class)).isInstanceOf(DefaultLockRegistry.class);
            assertThat(context).hasSingleBean(PolylockLockProvider.class);
        });
    }

    @Test
    void anUnknownPropertyFailsTheStart() {
        runner().withPropertyValues("polylock.lease=30s").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining("polylock.lease");
        });
    }

    @Test
    void aBadUrlFailsTheStart() {
        runner().withPropertyValues("polylock.url=sqlite://" + dir.resolve("x.db") + "?nope=1").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining("nope");
        });
        assertThat(Files.exists(dir)).isTrue();
    }
}
