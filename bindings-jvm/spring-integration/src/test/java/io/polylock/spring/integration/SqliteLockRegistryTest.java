package io.polylock.spring.integration;

/** Spring Integration's registry cases on the embedded default, an SQLite file. */
class SqliteLockRegistryTest extends LockRegistryContract {
    private final String url = TestServers.sqliteUrl();

    @Override
    String url() {
        return url;
    }
}
