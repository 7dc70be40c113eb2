package io.polylock.spring.integration;

/** Spring Integration's registry cases on the Redis of tests/services. */
class RedisLockRegistryTest extends LockRegistryContract {
    @Override
    String url() {
        return TestServers.server("REDIS");
    }
}
