/* Built by tests/release/run-tests.sh against the released C tarball with pkg-config: take a
 * lock on SQLite and on Redis through libpolylock and check the version it reports.
 *
 *   lock_smoke VERSION NAME URL...
 */
#include <polylock.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s VERSION NAME URL...\n", argv[0]);
        return 64;
    }
    const char *version = polylock_version();
    if (strcmp(version, argv[1]) != 0) {
        fprintf(stderr, "polylock_version() is %s, expected %s\n", version, argv[1]);
        return 1;
    }
    for (int i = 3; i < argc; i++) {
        polylock_client *client = NULL;
        polylock_lock *lock = NULL;
        uint64_t token = 0;
        if (polylock_connect(argv[i], &client) != POLYLOCK_OK ||
            polylock_client_lock(client, argv[2], &lock) != POLYLOCK_OK ||
            polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, &token) != POLYLOCK_OK || token == 0 ||
            polylock_lock_release(lock) != POLYLOCK_OK) {
            fprintf(stderr, "c: %s\n", polylock_last_error());
            return 1;
        }
        polylock_lock_free(lock);
        polylock_client_free(client);
        char scheme[16] = {0};
        sscanf(argv[i], "%15[^:]", scheme);
        printf("c: polylock %s: locked and released on %s (token %llu)\n", version, scheme,
               (unsigned long long)token);
    }
    return 0;
}
