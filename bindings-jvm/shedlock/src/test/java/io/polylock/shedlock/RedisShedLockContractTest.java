package io.polylock.shedlock;

/** ShedLock's provider contract on the Redis of tests/services (a Redisson lock per name). */
class RedisShedLockContractTest extends ShedLockProviderContract {
    @Override
    String url() {
        return TestServers.server("REDIS");
    }
}
