package io.polylock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import java.util.stream.Stream;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * A node on ShedLock's own JdbcTemplateLockProvider and a node on PolylockLockProvider share ShedLock's {@code
 * shedlock} table and exclude each other, both ways, on PostgreSQL and MariaDB; with ShedLock on the database's clock
 * ({@code usingDbTime()}) and on the JVM's clock in UTC ({@code withTimeZone(UTC)}).
 */
class ShedLockJdbcInteropTest {
    static Stream<Arguments> databases() {
        return Stream.of(
                Arguments.of("POSTGRES", "postgresql", true),
                Arguments.of("POSTGRES", "postgresql", false),
                Arguments.of("MARIADB", "mariadb", true),
                Arguments.of("MARIADB", "mariadb", false));
    }

    private static JdbcTemplate jdbc(String url, String jdbcScheme) {
        URI uri = URI.create(url);
        String[] user = uri.getRawUserInfo().split(":", 2);
        String jdbcUrl = "jdbc:" + jdbcScheme + "://" + uri.getHost() + ":" + uri.getPort() + uri.getPath();
        return new JdbcTemplate(new DriverManagerDataSource(jdbcUrl, user[0], user.length > 1 ? user[1] : ""));
    }

    private static LockProvider shedLock(JdbcTemplate jdbc, boolean dbTime) {
        JdbcTemplateLockProvider.Configuration.Builder builder =
                JdbcTemplateLockProvider.Configuration.builder().withJdbcTemplate(jdbc);
        return new JdbcTemplateLockProvider(dbTime ? builder.usingDbTime().build() : builder.withTimeZone(java.util.TimeZone.getTimeZone("UTC")).build());
    }

    private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
        return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
    }

    private static LockConfiguration config(String name) {
        return config(name, Duration.ofMinutes(1), Duration.ZERO);
    }

    @ParameterizedTest(name = "{0}, ShedLock on the database clock: {2}")
    @MethodSource("databases")
    void shedLockAndPolylockExcludeEachOther(String server, String jdbcScheme, boolean dbTime) {
        String url = TestServers.server(server);
        JdbcTemplate jdbc = jdbc(url, jdbcScheme);
        LockProvider shedLock = shedLock(jdbc, dbTime);
        String name = "plk-" + TestServers.unique();
        try (PolylockClient client = Polylock.connect(url)) {
            LockProvider polylock = new PolylockLockProvider(client);

            // polylock holds: the row is ShedLock's, and ShedLock's node is refused.
            SimpleLock ours = polylock.lock(config(name)).orElseThrow();
            assertThat(jdbc.queryForObject("SELECT count(*) FROM shedlock WHERE name = ?", Integer.class, name))
                    .isEqualTo(1);
            assertThat(shedLock.lock(config(name))).isEmpty();
            ours.unlock();

            // ShedLock holds: polylock's node is refused until ShedLock unlocks.
            SimpleLock theirs = shedLock.lock(config(name)).orElseThrow();
            assertThat(polylock.lock(config(name))).isEmpty();
            assertThat(client.getLeaseLock(name).isLocked()).isTrue();
            theirs.unlock();
            Optional<SimpleLock> again = polylock.lock(config(name));
            assertThat(again).isNotEmpty();
            again.get().unlock();
        }
    }

    @ParameterizedTest(name = "{0}, ShedLock on the database clock: {2}")
    @MethodSource("databases")
    void lockAtLeastForHoldsAcrossProviders(String server, String jdbcScheme, boolean dbTime) {
        String url = TestServers.server(server);
        JdbcTemplate jdbc = jdbc(url, jdbcScheme);
        LockProvider shedLock = shedLock(jdbc, dbTime);
        String theirsFirst = "plk-" + TestServers.unique();
        String oursFirst = "plk-" + TestServers.unique();
        Duration minute = Duration.ofMinutes(1);
        try (PolylockClient client = Polylock.connect(url)) {
            LockProvider polylock = new PolylockLockProvider(client);

            // ShedLock's unlock leaves lock_until at lockedAt + lockAtLeastFor: polylock honours the row.
            shedLock.lock(config(theirsFirst, minute, minute)).orElseThrow().unlock();
            assertThat(polylock.lock(config(theirsFirst))).isEmpty();

            // polylock's unlock keeps the row until lockedAt + lockAtLeastFor: ShedLock is refused meanwhile.
            polylock.lock(config(oursFirst, minute, minute)).orElseThrow().unlock();
            assertThat(shedLock.lock(config(oursFirst))).isEmpty();
        }
    }
}
