/*
 * The C binding's contract tests. Usage: test_polylock <test> <url>
 * Each test is its own ctest entry, run against every backend CMake was told about.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *url;
static char lock_name[128];

static void unique_name(const char *test) {
    /* Unique per run, so that tests on a shared Redis never see each other's locks. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(lock_name, sizeof lock_name, "c-test:%s:%ld:%ld", test, (long)getpid(), (long)now.tv_nsec);
}

static polylock_client *connect_or_die(void) {
    polylock_client *client = NULL;
    CHECK_OK(polylock_connect(url, &client));
    CHECK(client != NULL);
    return client;
}

/* Bad input: NULL everywhere, bad URLs, invalid UTF-8, bad leases, and NULL-safe frees. */
static void test_bad_input(void) {
    polylock_client *client = NULL;
    CHECK_STATUS(polylock_connect("nosuch://x", &client), POLYLOCK_INVALID_ARGUMENT);
    CHECK(client == NULL);
    CHECK(polylock_last_error() != NULL && strlen(polylock_last_error()) > 0);
    CHECK_STATUS(polylock_connect("\xff\xfe", &client), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "UTF-8") != NULL);
    CHECK_STATUS(polylock_connect(url, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "NULL") != NULL);

    client = connect_or_die();
    polylock_lock *lock = NULL;
    CHECK_STATUS(polylock_client_lock(NULL, "x", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, NULL, &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, "x", NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, "", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, "bad\xc3", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock_kind(client, "x", "nosuch", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK(lock == NULL);
    CHECK_STATUS(polylock_lock_acquire(NULL, 0, 0, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_lock_release(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(!polylock_lock_is_held(NULL));
    CHECK(polylock_lock_hold_count(NULL) == 0);

    unique_name("bad");
    CHECK_OK(polylock_client_lock(client, lock_name, &lock));
    CHECK_STATUS(polylock_lock_acquire(lock, 0, -5, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "lease") != NULL);
    CHECK_STATUS(polylock_client_close(NULL), POLYLOCK_INVALID_ARGUMENT);

    CHECK(strcmp(polylock_status_name(POLYLOCK_NOT_OWNER), "NOT_OWNER") == 0);
    CHECK(strcmp(polylock_status_name(99), "UNKNOWN") == 0);

    /* Closing fails later calls with CONNECTION; freeing the client before its lock is fine. */
    CHECK_OK(polylock_client_close(client));
    CHECK_STATUS(polylock_lock_acquire(lock, 0, 0, NULL), POLYLOCK_CONNECTION);
    polylock_client_free(client);
    CHECK_STATUS(polylock_lock_acquire(lock, 0, 0, NULL), POLYLOCK_CONNECTION);
    polylock_lock_free(lock);
    polylock_lock_free(NULL);
    polylock_client_free(NULL);
    polylock_snowflake_free(NULL);
}

/* ---- the lock contract across threads, with a fencing ledger ---- */

enum { THREADS = 4, ROUNDS = 25 };

struct ledger {
    polylock_lock *lock;
    pthread_mutex_t mutex; /* guards last_token and tokens; never held while waiting on polylock */
    uint64_t last_token;
    atomic_int inside;
    atomic_int failures;
};

static void *contend(void *arg) {
    struct ledger *ledger = arg;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t token = 0;
        if (polylock_lock_acquire(ledger->lock, -1, 0, &token) != POLYLOCK_OK) {
            fprintf(stderr, "acquire failed: %s\n", polylock_last_error());
            atomic_fetch_add(&ledger->failures, 1);
            return NULL;
        }
        if (atomic_fetch_add(&ledger->inside, 1) != 0) {
            fprintf(stderr, "two holders at once\n");
            atomic_fetch_add(&ledger->failures, 1);
        }
        pthread_mutex_lock(&ledger->mutex);
        if (token <= ledger->last_token) {
            fprintf(stderr, "fencing token %llu after %llu\n", (unsigned long long)token,
                    (unsigned long long)ledger->last_token);
            atomic_fetch_add(&ledger->failures, 1);
        }
        ledger->last_token = token;
        pthread_mutex_unlock(&ledger->mutex);
        if (!polylock_lock_is_held(ledger->lock)) atomic_fetch_add(&ledger->failures, 1);
        atomic_fetch_sub(&ledger->inside, 1);
        if (polylock_lock_release(ledger->lock) != POLYLOCK_OK) {
            fprintf(stderr, "release failed: %s\n", polylock_last_error());
            atomic_fetch_add(&ledger->failures, 1);
        }
    }
    return NULL;
}

static void test_contract(void) {
    polylock_client *client = connect_or_die();
    unique_name("contract");
    struct ledger ledger = {.last_token = 0};
    pthread_mutex_init(&ledger.mutex, NULL);
    atomic_init(&ledger.inside, 0);
    atomic_init(&ledger.failures, 0);
    /* One handle shared by every thread: each thread is its own owner. */
    CHECK_OK(polylock_client_lock(client, lock_name, &ledger.lock));
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&threads[i], NULL, contend, &ledger) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(atomic_load(&ledger.failures) == 0);
    CHECK(ledger.last_token > 0);
    pthread_mutex_destroy(&ledger.mutex);
    polylock_lock_free(ledger.lock);
    polylock_client_free(client);
}

/* ---- try once, non-owner release: a second thread meets the first thread's hold ---- */

struct probe {
    polylock_lock *lock;
    polylock_status try_once, release, timed_wait;
};

static void *probe_held_lock(void *arg) {
    struct probe *probe = arg;
    probe->try_once = polylock_lock_acquire(probe->lock, 0, 0, NULL);
    probe->timed_wait = polylock_lock_acquire(probe->lock, 100, 0, NULL);
    probe->release = polylock_lock_release(probe->lock);
    return NULL;
}

static void test_other_thread(void) {
    polylock_client *client = connect_or_die();
    unique_name("other");
    struct probe probe = {0};
    CHECK_OK(polylock_client_lock(client, lock_name, &probe.lock));
    uint64_t token = 0;
    CHECK_OK(polylock_lock_acquire(probe.lock, 0, 0, &token));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, probe_held_lock, &probe) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_STATUS(probe.try_once, POLYLOCK_TIMEOUT);
    CHECK_STATUS(probe.timed_wait, POLYLOCK_TIMEOUT);
    CHECK_STATUS(probe.release, POLYLOCK_NOT_OWNER);
    CHECK(polylock_lock_is_held(probe.lock)); /* the failed release did not touch our hold */
    CHECK_OK(polylock_lock_release(probe.lock));
    CHECK_STATUS(polylock_lock_release(probe.lock), POLYLOCK_NOT_OWNER);
    CHECK(strstr(polylock_last_error(), "not held") != NULL);
    polylock_lock_free(probe.lock);
    polylock_client_free(client);
}

/* ---- reentrancy: one thread, several holds, one token ---- */

static void test_reentrant(void) {
    polylock_client *client = connect_or_die();
    unique_name("reentrant");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, lock_name, &lock));
    uint64_t first = 0, second = 0;
    CHECK_OK(polylock_lock_acquire(lock, 0, 0, &first));
    CHECK_OK(polylock_lock_acquire(lock, 0, 5000, &second));
    CHECK(first == second && first > 0);
    CHECK(polylock_lock_hold_count(lock) == 2);
    CHECK(!polylock_lock_is_lost(lock));
    CHECK_OK(polylock_lock_release(lock));
    CHECK(polylock_lock_is_held(lock));
    CHECK_OK(polylock_lock_release(lock));
    CHECK(!polylock_lock_is_held(lock));
    /* A second acquisition after a full release gets a larger token. */
    uint64_t third = 0;
    CHECK_OK(polylock_lock_acquire(lock, 0, 0, &third));
    CHECK(third > first);
    CHECK_OK(polylock_lock_release(lock));
    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* ---- a lease runs out: the hold is lost, and releasing it says so ---- */

static void test_lease_lost(void) {
    polylock_client *client = connect_or_die();
    unique_name("lease");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, lock_name, &lock));
    CHECK_OK(polylock_lock_acquire(lock, 0, 100, NULL));
    struct timespec pause = {0, 400 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(polylock_lock_is_lost(lock));
    CHECK(!polylock_lock_is_held(lock));
    CHECK_STATUS(polylock_lock_release(lock), POLYLOCK_LOST);
    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* ---- snowflake IDs: unique and increasing; worker ids checked ---- */

static void test_snowflake(void) {
    polylock_snowflake *generator = NULL;
    CHECK_STATUS(polylock_snowflake_new(1024, &generator), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_snowflake_new(1, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_snowflake_new(7, &generator));
    CHECK_STATUS(polylock_snowflake_next(generator, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_snowflake_next(NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    uint64_t previous = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t id = 0;
        CHECK_OK(polylock_snowflake_next(generator, &id));
        CHECK(id > previous);
        previous = id;
    }
    polylock_snowflake_free(generator);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s bad_input|contract|other_thread|reentrant|lease_lost|snowflake URL\n", argv[0]);
        return 2;
    }
    url = argv[2];
    const struct {
        const char *name;
        void (*run)(void);
    } tests[] = {
        {"bad_input", test_bad_input},   {"contract", test_contract},     {"other_thread", test_other_thread},
        {"reentrant", test_reentrant},   {"lease_lost", test_lease_lost}, {"snowflake", test_snowflake},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (strcmp(tests[i].name, argv[1]) == 0) {
            tests[i].run();
            printf("%s on %s: ok\n", argv[1], url);
            return 0;
        }
    }
    fprintf(stderr, "unknown test %s\n", argv[1]);
    return 2;
}
