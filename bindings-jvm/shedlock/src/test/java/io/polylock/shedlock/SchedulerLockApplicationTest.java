package io.polylock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Two Spring Boot applications (two nodes: two contexts, each with its own client) schedule one job with
 * {@code @SchedulerLock} on one Redis; the job's runs never overlap, and both nodes get to run it.
 */
class SchedulerLockApplicationTest {
    /** What the nodes' runs saw: shared by the two contexts of this JVM. */
    static final AtomicInteger RUNNING = new AtomicInteger();
    static final AtomicInteger OVERLAPS = new AtomicInteger();
    static final ConcurrentHashMap<String, AtomicInteger> RUNS_BY_NODE = new ConcurrentHashMap<>();
    /** Three runs by each node: the nodes start one after the other, so each must have competed for a while. */
    static final ConcurrentHashMap<String, CountDownLatch> RUNS_TO_WAIT_FOR = new ConcurrentHashMap<>();

    // The application, as a user writes it: only the LockProvider bean is polylock's.
    @SpringBootApplication
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "PT30S")
    static class ReportApplication {
        @Bean(destroyMethod = "close")
        PolylockClient polylockClient(@Value("${polylock.url}") String url) {
            return Polylock.connect(url);
        }

        @Bean
        LockProvider lockProvider(PolylockClient client) {
            return new PolylockLockProvider(client);
        }
    }

    @Component
    static class ReportJob {
        @Value("${node}")
        String node;

        @Scheduled(fixedDelay = 20)
        @SchedulerLock(name = "${report.lock}", lockAtLeastFor = "PT0.1S")
        void sendReport() {
            if (RUNNING.incrementAndGet() > 1) {
                OVERLAPS.incrementAndGet();
            }
            try {
                ShedLockProviderContract.sleepQuietly(30); // the job's work, long enough for the other node to try
            } finally {
                RUNNING.decrementAndGet();
            }
            RUNS_BY_NODE.computeIfAbsent(node, n -> new AtomicInteger()).incrementAndGet();
            RUNS_TO_WAIT_FOR.get(node).countDown();
        }
    }

    private static ConfigurableApplicationContext node(String name, String url, String lock) {
        return new SpringApplicationBuilder(ReportApplication.class)
                .web(WebApplicationType.NONE)
                .properties("polylock.url=" + url, "report.lock=" + lock, "node=" + name,
                        "spring.main.banner-mode=off", "logging.level.root=warn")
                .run();
    }

    @Test
    void runsOnTwoNodesNeverOverlap() throws InterruptedException {
        String url = TestServers.server("REDIS");
        String lock = "report-" + TestServers.unique();
        RUNS_TO_WAIT_FOR.put("first", new CountDownLatch(3));
        RUNS_TO_WAIT_FOR.put("second", new CountDownLatch(3));
        try (ConfigurableApplicationContext first = node("first", url, lock);
                ConfigurableApplicationContext second = node("second", url, lock)) {
            for (String node : RUNS_TO_WAIT_FOR.keySet()) {
                assertThat(RUNS_TO_WAIT_FOR.get(node).await(60, TimeUnit.SECONDS)).describedAs("3 runs on " + node).isTrue();
            }
        }
        assertThat(OVERLAPS.get()).describedAs("runs that overlapped another").isZero();
        assertThat(RUNS_BY_NODE.keySet()).describedAs("nodes that ran the job").containsExactlyInAnyOrder("first", "second");
    }
}
