//! What several integration suites share: where the test servers of tests/services are.
// Each suite is its own crate and uses only some of these.
#![allow(dead_code)]

/// `$POLYLOCK_TEST_POSTGRES_URL`, else the `postgres` service's default.
pub fn postgres_url() -> String {
    std::env::var("POLYLOCK_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://polylock:polylock@127.0.0.1:15432/polylock".to_string())
}

/// `$POLYLOCK_TEST_MARIADB_URL`, else the `mariadb` service's default.
pub fn mariadb_url() -> String {
    std::env::var("POLYLOCK_TEST_MARIADB_URL")
        .unwrap_or_else(|_| "mysql://polylock:polylock@127.0.0.1:13306/polylock".to_string())
}
