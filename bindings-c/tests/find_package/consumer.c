/* The find_package(polylock) consumer: one lock+unlock on the URL given, one snowflake ID. */
#include <inttypes.h>
#include <stdio.h>

#include <polylock.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: consumer URL\n");
        return 2;
    }
    polylock_client *client = NULL;
    polylock_lock *lock = NULL;
    polylock_snowflake *ids = NULL;
    uint64_t token = 0, id = 0;
    int ok = polylock_connect(argv[1], &client) == POLYLOCK_OK &&
             polylock_client_lock(client, "consumer:find_package", &lock) == POLYLOCK_OK &&
             polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, &token) == POLYLOCK_OK &&
             polylock_lock_release(lock) == POLYLOCK_OK &&
             polylock_snowflake_new(7, &ids) == POLYLOCK_OK && polylock_snowflake_next(ids, &id) == POLYLOCK_OK;
    if (ok) {
        printf("consumer: fencing token %" PRIu64 ", snowflake %" PRIu64 "\n", token, id);
    } else {
        fprintf(stderr, "consumer: %s\n", polylock_last_error());
    }
    polylock_snowflake_free(ids);
    polylock_lock_free(lock);
    polylock_client_free(client);
    return ok ? 0 : 1;
}
