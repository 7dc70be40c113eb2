package io.polylock.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * Takes ShedLock locks the way a scheduled Java job does, for the Rust interop test.
 *
 * <pre>
 * ShedLockCli JDBC_URL USER PASSWORD NAME try          prints LOCKED (then unlocks) or BUSY
 * ShedLockCli JDBC_URL USER PASSWORD NAME hold AT_MOST prints LOCKED or BUSY; if locked, holds
 *                                                      until a line arrives on stdin, unlocks,
 *                                                      prints UNLOCKED
 * </pre>
 */
public final class ShedLockCli {
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: ShedLockCli JDBC_URL USER PASSWORD NAME try|hold [AT_MOST_MS]");
            System.exit(2);
        }
        DriverManagerDataSource dataSource = new DriverManagerDataSource(args[0], args[1], args[2]);
        JdbcTemplateLockProvider provider = new JdbcTemplateLockProvider(
                JdbcTemplateLockProvider.Configuration.builder()
                        .withJdbcTemplate(new JdbcTemplate(dataSource))
                        .usingDbTime()
                        .build());
        String name = args[3];
        long atMostMs = args.length > 5 ? Long.parseLong(args[5]) : 30_000;
        LockConfiguration config =
                new LockConfiguration(Instant.now(), name, Duration.ofMillis(atMostMs), Duration.ZERO);
        Optional<SimpleLock> lock = provider.lock(config);
        if (lock.isEmpty()) {
            System.out.println("BUSY");
            return;
        }
        System.out.println("LOCKED");
        System.out.flush();
        if (args[4].equals("hold")) {
            new BufferedReader(new InputStreamReader(System.in)).readLine();
        }
        lock.get().unlock();
        System.out.println("UNLOCKED");
        System.out.flush();
    }
}
