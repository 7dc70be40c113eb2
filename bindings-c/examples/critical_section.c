/*
 * Run a critical section under a distributed lock, passing the fencing token on to the
 * protected resource. Build: cc critical_section.c $(pkg-config --cflags --libs polylock)
 * Usage: critical_section [URL]   (default: $POLYLOCK_URL, else sqlite://polylock.db)
 */
#include <inttypes.h>
#include <stdio.h>

#include "polylock.h"

static int fail(const char *what, polylock_status status) {
    fprintf(stderr, "%s: %s: %s\n", what, polylock_status_name(status), polylock_last_error());
    return 1;
}

int main(int argc, char **argv) {
    polylock_client *client = NULL;
    polylock_lock *lock = NULL;
    polylock_status status = polylock_connect(argc > 1 ? argv[1] : NULL, &client);
    if (status != POLYLOCK_OK) return fail("connect", status);

    status = polylock_client_lock(client, "examples:critical-section", &lock);
    if (status != POLYLOCK_OK) {
        polylock_client_free(client);
        return fail("lock", status);
    }

    uint64_t token = 0;
    /* Wait up to 10 s; hold under the watchdog (renewed while this process lives). */
    status = polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, &token);
    if (status == POLYLOCK_OK) {
        printf("in the critical section with fencing token %" PRIu64 "\n", token);
        /* ... write to storage that rejects tokens older than the last one it saw ... */
        status = polylock_lock_release(lock);
        if (status != POLYLOCK_OK) fail("release", status);
    } else {
        fail("acquire", status);
    }

    polylock_lock_free(lock);
    polylock_client_free(client);
    return status == POLYLOCK_OK ? 0 : 1;
}
