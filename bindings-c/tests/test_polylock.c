/*
 * The C binding's contract tests. Usage: test_polylock <test> <url>
 * Each test is its own ctest entry, run against every backend CMake was told about.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

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

    client = connect_to(url);
    polylock_lock *lock = NULL;
    CHECK_STATUS(polylock_client_lock(NULL, "x", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, NULL, &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, "x", NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, "", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock(client, "bad\xc3", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_lock_kind(client, "x", "nosuch", &lock), POLYLOCK_INVALID_ARGUMENT);
    CHECK(lock == NULL);
    CHECK_STATUS(polylock_lock_acquire(NULL, 0, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_lock_release(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(!polylock_lock_is_held(NULL));
    CHECK(polylock_lock_hold_count(NULL) == 0);

    unique_name("bad");
    CHECK_OK(polylock_client_lock(client, name, &lock));
    /* Outside 10 ms .. 365 days, the range every backend honours, and every negative value
     * but the two constants: refused before any write, naming the argument. */
    const int64_t year_ms = INT64_C(365) * 24 * 3600 * 1000;
    const int64_t bad_leases[] = {-5, 0, INT64_MIN, 5, year_ms + 1, INT64_MAX};
    for (size_t i = 0; i < sizeof bad_leases / sizeof bad_leases[0]; i++) {
        CHECK_STATUS(polylock_lock_acquire(lock, 0, bad_leases[i], NULL), POLYLOCK_INVALID_ARGUMENT);
        CHECK(strstr(polylock_last_error(), "lease_ms must be") != NULL);
    }
    const int64_t bad_waits[] = {-5, -2, INT64_MIN, year_ms + 1, INT64_MAX};
    for (size_t i = 0; i < sizeof bad_waits / sizeof bad_waits[0]; i++) {
        CHECK_STATUS(polylock_lock_acquire(lock, bad_waits[i], POLYLOCK_LEASE_WATCHDOG, NULL),
                     POLYLOCK_INVALID_ARGUMENT);
        CHECK(strstr(polylock_last_error(), "wait_ms must be") != NULL);
    }
    /* The same one reading for every wait: a hold's, a latch's, a campaign's. */
    polylock_hold *no_hold = NULL;
    CHECK_STATUS(polylock_lock_acquire_hold(lock, -5, POLYLOCK_LEASE_WATCHDOG, NULL, &no_hold),
                 POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_lock_acquire_hold(lock, 0, 0, NULL, &no_hold), POLYLOCK_INVALID_ARGUMENT);
    CHECK(no_hold == NULL);
    CHECK(!polylock_lock_is_held(lock));
    uint64_t longest = 0;
    CHECK_OK(polylock_lock_acquire(lock, year_ms, year_ms, &longest));
    CHECK_OK(polylock_lock_release(lock));
    CHECK_OK(polylock_lock_acquire(lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, &longest));
    CHECK_OK(polylock_lock_release(lock));
    CHECK_OK(polylock_lock_acquire(lock, 0, 10, &longest)); /* the shortest lease is accepted */
    const polylock_status short_release = polylock_lock_release(lock); /* 10 ms may have passed */
    CHECK(short_release == POLYLOCK_OK || short_release == POLYLOCK_LOST);
    CHECK_STATUS(polylock_client_close(NULL), POLYLOCK_INVALID_ARGUMENT);

    CHECK(strcmp(polylock_status_name(POLYLOCK_NOT_OWNER), "NOT_OWNER") == 0);
    CHECK(strcmp(polylock_status_name(99), "UNKNOWN") == 0);

    /* Closing fails later calls with CONNECTION; freeing the client before its lock is fine. */
    CHECK_OK(polylock_client_close(client));
    CHECK_STATUS(polylock_lock_acquire(lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_CONNECTION);
    polylock_client_free(client);
    CHECK_STATUS(polylock_lock_acquire(lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_CONNECTION);
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
        if (polylock_lock_acquire(ledger->lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, &token) != POLYLOCK_OK) {
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
    polylock_client *client = connect_to(url);
    unique_name("contract");
    struct ledger ledger = {.last_token = 0};
    pthread_mutex_init(&ledger.mutex, NULL);
    atomic_init(&ledger.inside, 0);
    atomic_init(&ledger.failures, 0);
    /* One handle shared by every thread: each thread is its own owner. */
    CHECK_OK(polylock_client_lock(client, name, &ledger.lock));
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
    probe->try_once = polylock_lock_acquire(probe->lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL);
    probe->timed_wait = polylock_lock_acquire(probe->lock, 100, POLYLOCK_LEASE_WATCHDOG, NULL);
    probe->release = polylock_lock_release(probe->lock);
    return NULL;
}

static void test_other_thread(void) {
    polylock_client *client = connect_to(url);
    unique_name("other");
    struct probe probe = {0};
    CHECK_OK(polylock_client_lock(client, name, &probe.lock));
    uint64_t token = 0;
    CHECK_OK(polylock_lock_acquire(probe.lock, 0, POLYLOCK_LEASE_WATCHDOG, &token));
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
    polylock_client *client = connect_to(url);
    unique_name("reentrant");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));
    uint64_t first = 0, second = 0;
    CHECK_OK(polylock_lock_acquire(lock, 0, POLYLOCK_LEASE_WATCHDOG, &first));
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
    CHECK_OK(polylock_lock_acquire(lock, 0, POLYLOCK_LEASE_WATCHDOG, &third));
    CHECK(third > first);
    CHECK_OK(polylock_lock_release(lock));
    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* ---- a lease runs out: the hold is lost, and releasing it says so ---- */

static void test_lease_lost(void) {
    polylock_client *client = connect_to(url);
    unique_name("lease");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));
    /* Nothing held by this thread: nothing whose loss it could wait for. */
    CHECK_STATUS(polylock_lock_wait_lost(lock, 0, NULL), POLYLOCK_NOT_OWNER);
    CHECK_STATUS(polylock_lock_wait_lost(NULL, 0, NULL), POLYLOCK_INVALID_ARGUMENT);
    /* 1.5 s: long enough that a 50 ms wait runs out first, also under valgrind. */
    CHECK_OK(polylock_lock_acquire(lock, 0, 1500, NULL));
    CHECK_STATUS(polylock_lock_wait_lost(lock, 50, NULL), POLYLOCK_TIMEOUT); /* not lost yet */
    CHECK_STATUS(polylock_lock_wait_lost(lock, -3, NULL), POLYLOCK_INVALID_ARGUMENT);
    polylock_cancel *cancel = NULL;
    CHECK_OK(polylock_cancel_new(&cancel));
    CHECK_OK(polylock_cancel_fire(cancel));
    CHECK_STATUS(polylock_lock_wait_lost(lock, POLYLOCK_WAIT_FOREVER, cancel), POLYLOCK_CANCELLED);
    polylock_cancel_free(cancel);
    /* The lost signal: the wait ends when the lease runs out, not before. */
    struct timespec before, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    CHECK_OK(polylock_lock_wait_lost(lock, 30000, NULL));
    clock_gettime(CLOCK_MONOTONIC, &after);
    CHECK((after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000 >= 150);
    CHECK(polylock_lock_is_lost(lock));
    CHECK_OK(polylock_lock_wait_lost(lock, 0, NULL)); /* lost already: at once */
    CHECK(!polylock_lock_is_held(lock));
    CHECK_STATUS(polylock_lock_release(lock), POLYLOCK_LOST);
    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* ---- read-write locks: shared reads, exclusive writes, downgrade, refused upgrade ---- */

struct rw_probe {
    polylock_rwlock *rw;
    polylock_status read, write, release;
    uint64_t read_token;
};

static void *probe_rwlock(void *arg) {
    struct rw_probe *probe = arg;
    probe->read = polylock_rwlock_read_acquire(probe->rw, 1000, POLYLOCK_LEASE_WATCHDOG, &probe->read_token);
    if (probe->read == POLYLOCK_OK) CHECK_OK(polylock_rwlock_read_release(probe->rw));
    probe->write = polylock_rwlock_write_acquire(probe->rw, 50, POLYLOCK_LEASE_WATCHDOG, NULL);
    probe->release = polylock_rwlock_write_release(probe->rw);
    return NULL;
}

static void test_rwlock(void) {
    polylock_client *client = connect_to(url);
    unique_name("rwlock");
    polylock_rwlock *rw = NULL;
    CHECK_STATUS(polylock_client_rwlock(client, "", &rw), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_rwlock_read_acquire(NULL, 0, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_client_rwlock(client, name, &rw));
    uint64_t read = 0;
    CHECK_OK(polylock_rwlock_read_acquire(rw, 0, POLYLOCK_LEASE_WATCHDOG, &read));
    /* Another thread may read too, but not write. */
    struct rw_probe probe = {.rw = rw};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, probe_rwlock, &probe) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_OK(probe.read);
    CHECK(probe.read_token > read);
    CHECK_STATUS(probe.write, POLYLOCK_TIMEOUT);
    CHECK_STATUS(probe.release, POLYLOCK_NOT_OWNER);
    /* A reader asking for the write side is refused at once: an upgrade could deadlock. */
    CHECK_STATUS(polylock_rwlock_write_acquire(rw, 5000, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_rwlock_read_release(rw));
    CHECK_STATUS(polylock_rwlock_read_release(rw), POLYLOCK_NOT_OWNER);
    /* The writer may read too (a downgrade), then let go of the write side. */
    uint64_t write = 0;
    CHECK_OK(polylock_rwlock_write_acquire(rw, 0, POLYLOCK_LEASE_WATCHDOG, &write));
    CHECK(write > probe.read_token);
    CHECK_OK(polylock_rwlock_read_acquire(rw, 0, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK_OK(polylock_rwlock_write_release(rw));
    CHECK_OK(polylock_rwlock_read_release(rw));
    polylock_rwlock_free(rw);
    polylock_rwlock_free(NULL);
    polylock_client_free(client);
}

/* ---- semaphores: N owned permits, released by id from any thread ---- */

struct permit_release {
    polylock_semaphore *semaphore;
    uint64_t permit;
    polylock_status status;
};

static void *release_permit(void *arg) {
    struct permit_release *job = arg;
    job->status = polylock_semaphore_release(job->semaphore, job->permit);
    return NULL;
}

static void test_semaphore(void) {
    polylock_client *client = connect_to(url);
    unique_name("semaphore");
    polylock_semaphore *semaphore = NULL;
    CHECK_STATUS(polylock_client_semaphore(client, name, 0, &semaphore), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_client_semaphore(client, name, 2, &semaphore));
    uint64_t a = 0, b = 0, token_a = 0, token_b = 0, none = 0;
    CHECK_STATUS(polylock_semaphore_acquire(semaphore, 0, POLYLOCK_LEASE_WATCHDOG, NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_semaphore_acquire(semaphore, 0, POLYLOCK_LEASE_WATCHDOG, &a, &token_a));
    CHECK_OK(polylock_semaphore_acquire(semaphore, 0, POLYLOCK_LEASE_WATCHDOG, &b, &token_b));
    CHECK(a != b && token_b > token_a);
    CHECK_STATUS(polylock_semaphore_acquire(semaphore, 50, POLYLOCK_LEASE_WATCHDOG, &none, NULL), POLYLOCK_TIMEOUT);
    /* Any thread may release a permit by its id; a second release is NOT_OWNER. */
    struct permit_release job = {.semaphore = semaphore, .permit = a};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, release_permit, &job) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_OK(job.status);
    CHECK_STATUS(polylock_semaphore_release(semaphore, a), POLYLOCK_NOT_OWNER);
    /* A permit whose lease runs out comes back. */
    uint64_t short_lived = 0, later = 0;
    CHECK_OK(polylock_semaphore_acquire(semaphore, 0, 150, &short_lived, NULL));
    CHECK_OK(polylock_semaphore_acquire(semaphore, 5000, POLYLOCK_LEASE_WATCHDOG, &later, NULL));
    CHECK_STATUS(polylock_semaphore_release(semaphore, short_lived), POLYLOCK_LOST);
    CHECK_OK(polylock_semaphore_release(semaphore, later));
    CHECK_OK(polylock_semaphore_release(semaphore, b));
    /* The count is fixed by the first use of the name. */
    polylock_semaphore *other = NULL;
    CHECK_OK(polylock_client_semaphore(client, name, 3, &other));
    CHECK_STATUS(polylock_semaphore_acquire(other, 0, POLYLOCK_LEASE_WATCHDOG, &none, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "has 2 permits") != NULL);
    polylock_semaphore_free(other);
    polylock_semaphore_free(semaphore);
    polylock_semaphore_free(NULL);
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

/* ---- UUIDv7 and ULID: text of the right shape, increasing, buffers checked ---- */

static void test_uuid7_ulid(void) {
    char small[8];
    CHECK_STATUS(polylock_uuid7(NULL, POLYLOCK_UUID_TEXT_SIZE), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_uuid7(small, sizeof small), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "37 bytes") != NULL);
    CHECK_STATUS(polylock_ulid(small, sizeof small), POLYLOCK_INVALID_ARGUMENT);
    char previous_uuid[POLYLOCK_UUID_TEXT_SIZE] = "";
    char previous_ulid[POLYLOCK_ULID_TEXT_SIZE] = "";
    for (int i = 0; i < 50000; i++) {
        char uuid[POLYLOCK_UUID_TEXT_SIZE];
        char ulid[POLYLOCK_ULID_TEXT_SIZE];
        CHECK_OK(polylock_uuid7(uuid, sizeof uuid));
        CHECK_OK(polylock_ulid(ulid, sizeof ulid));
        CHECK(strlen(uuid) == 36 && uuid[14] == '7' && uuid[8] == '-');
        CHECK(strlen(ulid) == 26);
        CHECK(strcmp(uuid, previous_uuid) > 0);
        CHECK(strcmp(ulid, previous_ulid) > 0);
        memcpy(previous_uuid, uuid, sizeof uuid);
        memcpy(previous_ulid, ulid, sizeof ulid);
    }
    /* Reading them: the vectors of the spec and of every surface (tests/conformance). */
    uint64_t ms = 0;
    CHECK_OK(polylock_uuid7_timestamp_ms("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", &ms));
    CHECK(ms == UINT64_C(1645557742000));
    CHECK_OK(polylock_ulid_timestamp_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV", &ms));
    CHECK(ms == UINT64_C(1469922850259));
    char uuid[POLYLOCK_UUID_TEXT_SIZE], ulid[POLYLOCK_ULID_TEXT_SIZE];
    CHECK_OK(polylock_ulid_to_uuid("01ARZ3NDEKTSV4RRFFQ69G5FAV", uuid, sizeof uuid));
    CHECK(strcmp(uuid, "01563e3a-b5d3-d676-4c61-efb99302bd5b") == 0);
    CHECK_OK(polylock_uuid_to_ulid("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", ulid, sizeof ulid));
    CHECK(strcmp(ulid, "01FWHE4YDGFK1SHH6W1G60EECF") == 0);
    CHECK_OK(polylock_uuid_to_ulid(uuid, ulid, sizeof ulid)); /* and back */
    CHECK(strcmp(ulid, "01ARZ3NDEKTSV4RRFFQ69G5FAV") == 0);
    /* Bad input is refused, the output untouched. */
    ms = 7;
    CHECK_STATUS(polylock_uuid7_timestamp_ms("not-a-uuid", &ms), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_uuid7_timestamp_ms(uuid /* version 13 */, &ms), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_uuid7_timestamp_ms(NULL, &ms), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_ulid_timestamp_ms("01ARZ3NDEKTSV4RRFFQ69G5FA", &ms), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_ulid_timestamp_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV", NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(ms == 7);
    CHECK_STATUS(polylock_ulid_to_uuid("01ARZ3NDEKTSV4RRFFQ69G5FAV", small, sizeof small), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_uuid_to_ulid("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", NULL, 27), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_ulid_to_uuid("U0000000000000000000000000", uuid, sizeof uuid), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_ulid_to_uuid("80000000000000000000000000", uuid, sizeof uuid), POLYLOCK_INVALID_ARGUMENT);
}

/* ---- holds that are their own owner, cancellation, waiting for loss ---- */

struct cancel_probe {
    polylock_lock *lock;
    polylock_cancel *cancel;
    polylock_status status;
    polylock_hold *hold;
};

static void *acquire_cancellable(void *arg) {
    struct cancel_probe *probe = arg;
    probe->status = polylock_lock_acquire_hold(probe->lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, probe->cancel, &probe->hold);
    return NULL;
}

static void test_hold(void) {
    polylock_client *client = connect_to(url);
    unique_name("hold");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));

    /* Two holds through one handle on one thread are two owners: they exclude each other. */
    polylock_hold *first = NULL, *second = NULL, *again = NULL;
    CHECK_OK(polylock_lock_acquire_hold(lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, NULL, &first));
    uint64_t token = polylock_hold_fencing_token(first);
    CHECK(token > 0);
    CHECK_STATUS(polylock_lock_acquire_hold(lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &second), POLYLOCK_TIMEOUT);
    CHECK(second == NULL);
    CHECK(polylock_hold_permit_id(first) == 0);

    /* Re-entry is the same owner: same token; the lock is free after both releases. */
    CHECK_OK(polylock_hold_reenter(first, &again));
    CHECK(polylock_hold_fencing_token(again) == token);
    CHECK_OK(polylock_hold_release(first));
    CHECK_STATUS(polylock_hold_release(first), POLYLOCK_NOT_OWNER);
    CHECK_STATUS(polylock_hold_reenter(first, &second), POLYLOCK_NOT_OWNER);
    CHECK_STATUS(polylock_lock_acquire_hold(lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &second), POLYLOCK_TIMEOUT);
    /* A wait for loss ends without loss when the hold is released meanwhile. */
    bool lost = true;
    CHECK_STATUS(polylock_hold_wait_lost(again, 20, NULL, &lost), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_hold_release(again));
    CHECK_OK(polylock_hold_wait_lost(again, POLYLOCK_WAIT_FOREVER, NULL, &lost));
    CHECK(!lost);
    polylock_hold_free(first);
    polylock_hold_free(again);

    /* A waiting acquisition cancelled from another thread ends CANCELLED, holding nothing. */
    polylock_hold *holder = NULL;
    CHECK_OK(polylock_lock_acquire_hold(lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, NULL, &holder));
    CHECK(polylock_hold_fencing_token(holder) > token);
    struct cancel_probe probe = {.lock = lock};
    CHECK_OK(polylock_cancel_new(&probe.cancel));
    pthread_t waiter;
    CHECK(pthread_create(&waiter, NULL, acquire_cancellable, &probe) == 0);
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK_OK(polylock_cancel_fire(probe.cancel));
    CHECK_OK(polylock_cancel_fire(probe.cancel)); /* twice is harmless */
    CHECK(pthread_join(waiter, NULL) == 0);
    CHECK_STATUS(probe.status, POLYLOCK_CANCELLED);
    CHECK(probe.hold == NULL);
    /* A fired token cancels a wait for loss at once, and a new acquisition too. */
    CHECK_STATUS(polylock_hold_wait_lost(holder, POLYLOCK_WAIT_FOREVER, probe.cancel, &lost), POLYLOCK_CANCELLED);
    CHECK_STATUS(polylock_lock_acquire_hold(lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, probe.cancel, &second), POLYLOCK_CANCELLED);
    polylock_cancel_free(probe.cancel);
    CHECK_OK(polylock_hold_release(holder));
    polylock_hold_free(holder);
    /* Nothing was left held: a wait the store was still serving is given back in the background. */
    CHECK_OK(polylock_lock_acquire_hold(lock, 10000, POLYLOCK_LEASE_WATCHDOG, NULL, &second));
    CHECK_OK(polylock_hold_release(second));
    polylock_hold_free(second);

    /* A lease that runs out: the wait for loss says lost, and the release says LOST. The lease
     * is long enough that a slow grant (valgrind, a loaded machine: the ZooKeeper case took
     * over 100 ms once) is not already over when it is checked. */
    polylock_hold *leased = NULL;
    CHECK_OK(polylock_lock_acquire_hold(lock, POLYLOCK_WAIT_FOREVER, 600, NULL, &leased));
    CHECK(!polylock_hold_is_lost(leased));
    lost = false;
    CHECK_OK(polylock_hold_wait_lost(leased, 30000, NULL, &lost));
    CHECK(lost);
    CHECK(polylock_hold_is_lost(leased));
    CHECK_STATUS(polylock_hold_release(leased), POLYLOCK_LOST);
    polylock_hold_free(leased);

    /* Bad input, and NULL-safe frees. */
    CHECK_STATUS(polylock_lock_acquire_hold(NULL, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &second), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_lock_acquire_hold(lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_lock_acquire_hold(lock, 0, -5, NULL, &second), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_hold_wait_lost(NULL, 0, NULL, &lost), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_cancel_fire(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_cancel_new(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_hold_fencing_token(NULL) == 0 && !polylock_hold_is_lost(NULL));
    polylock_hold_free(NULL);
    polylock_cancel_free(NULL);

    /* An unreleased hold freed is released in the background; the client's close frees it anyway. */
    CHECK_OK(polylock_lock_acquire_hold(lock, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, NULL, &second));
    polylock_hold_free(second);
    CHECK_OK(polylock_lock_acquire_hold(lock, 10000, POLYLOCK_LEASE_WATCHDOG, NULL, &second));
    CHECK_OK(polylock_hold_release(second));
    polylock_hold_free(second);
    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* A client connected before fork(): in the child every call fails at once with
 * POLYLOCK_CONNECTION naming fork() (the runtime's threads stayed in the parent, so a call
 * would otherwise wait forever), and freeing it there returns at once without giving back
 * the parent's hold. The parent's client goes on. */
static void test_fork(void) {
    unique_name("fork");
    polylock_client *client = connect_to(url);
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));
    uint64_t token = 0;
    CHECK_OK(polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, &token));
    int report[2];
    CHECK(pipe(report) == 0);
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(20); /* a hang ends the child by SIGALRM, which the parent reports */
        uint64_t child_token = 0;
        char code = 0;
        if (polylock_lock_acquire(lock, 1000, POLYLOCK_LEASE_WATCHDOG, &child_token) != POLYLOCK_CONNECTION) {
            code = 1;
        } else if (strstr(polylock_last_error(), "fork()") == NULL) {
            code = 2;
        } else if (polylock_lock_release(lock) != POLYLOCK_CONNECTION) {
            code = 3;
        } else if (polylock_client_close(client) != POLYLOCK_CONNECTION) {
            code = 4;
        }
        polylock_lock_free(lock);
        polylock_client_free(client);
        /* The verdict goes through the pipe, and the child ends by SIGKILL: under valgrind an
         * exit would report as lost what only the parent's threads (absent here) point to. */
        if (write(report[1], &code, 1) != 1) _exit(5);
        raise(SIGKILL);
    }
    close(report[1]);
    char code = 99;
    ssize_t got = read(report[0], &code, 1);
    close(report[0]);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    if (got != 1 || code != 0) {
        fprintf(stderr, "the forked child reported %d (%s)\n", got == 1 ? code : -1,
                WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
    }
    CHECK(got == 1 && code == 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* The child's free gave nothing back: the parent still holds, and goes on. */
    CHECK(polylock_lock_is_held(lock));
    CHECK_OK(polylock_lock_release(lock));
    CHECK_OK(polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, &token));
    CHECK_OK(polylock_lock_release(lock));
    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* Threads calling the client, also outside a wait on its runtime (making a lock, reading
 * its metrics, leasing a Snowflake id), while the main thread frees it: each call either
 * works on the client it started with or, once the client is freed, is refused with
 * INVALID_ARGUMENT; nothing reads freed memory (run under valgrind in CI). */
enum { FREE_RACE_THREADS = 4 };
static atomic_int free_race_refused;

static void *free_race_caller(void *arg) {
    polylock_client *client = arg;
    for (int round = 0; round < 100000; round++) {
        polylock_lock *lock = NULL;
        polylock_status status = polylock_client_lock_kind(client, "free-race", "reentrant", &lock);
        if (status == POLYLOCK_OK) {
            polylock_lock_free(lock);
        }
        polylock_bytes metrics = {0};
        polylock_status read = polylock_client_metrics_json(client, &metrics);
        if (read == POLYLOCK_OK) {
            polylock_bytes_free(&metrics);
        }
        if (round % 16 == 0) {
            polylock_leased_snowflake *generator = NULL;
            if (polylock_snowflake_lease(client, -1, &generator) == POLYLOCK_OK) {
                polylock_leased_snowflake_free(generator);
            }
        }
        if (status == POLYLOCK_INVALID_ARGUMENT && read == POLYLOCK_INVALID_ARGUMENT) {
            atomic_fetch_add(&free_race_refused, 1);
            return NULL;
        }
        CHECK(status == POLYLOCK_OK || status == POLYLOCK_INVALID_ARGUMENT || status == POLYLOCK_CONNECTION);
    }
    return NULL;
}

static void test_free_race(void) {
    for (int attempt = 0; attempt < 3; attempt++) {
        polylock_client *client = connect_to(url);
        pthread_t threads[FREE_RACE_THREADS];
        for (int i = 0; i < FREE_RACE_THREADS; i++) {
            CHECK(pthread_create(&threads[i], NULL, free_race_caller, client) == 0);
        }
        sleep_ms(30);
        polylock_client_free(client);
        /* Freed twice: ignored. */
        polylock_client_free(client);
        for (int i = 0; i < FREE_RACE_THREADS; i++) {
            CHECK(pthread_join(threads[i], NULL) == 0);
        }
    }
    CHECK(atomic_load(&free_race_refused) == 3 * FREE_RACE_THREADS);
}

/* ---- store-wide: polylock_lock_is_locked, and the operator's status, list, force-unlock ---- */

/* The JSON text of a polylock_bytes, NUL-terminated (the caller frees it). */
static char *json_text(polylock_bytes *bytes) {
    char *text = strndup((const char *)bytes->data, bytes->len);
    CHECK(text != NULL);
    polylock_bytes_free(bytes);
    return text;
}

static size_t occurrences(const char *text, const char *what) {
    size_t found = 0;
    for (const char *at = strstr(text, what); at; at = strstr(at + 1, what)) found++;
    return found;
}

static void test_admin(void) {
    polylock_client *holder = connect_to(url);
    polylock_client *operator = connect_to(url);
    unique_name("admin");
    char a[256], b[256], expect[600];
    snprintf(a, sizeof a, "%s:a", name);
    snprintf(b, sizeof b, "%s:b", name);
    polylock_lock *held_a = NULL, *held_b = NULL, *seen = NULL;
    CHECK_OK(polylock_client_lock(holder, a, &held_a));
    CHECK_OK(polylock_client_lock(holder, b, &held_b));
    CHECK_OK(polylock_client_lock(operator, a, &seen));

    /* is_locked: anyone in the store, unlike is_held (this thread's own hold). */
    bool locked = true;
    CHECK_OK(polylock_lock_is_locked(seen, &locked));
    CHECK(!locked);
    CHECK_STATUS(polylock_lock_is_locked(seen, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_lock_is_locked(NULL, &locked), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_lock_acquire(held_a, 0, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK_OK(polylock_lock_acquire(held_b, 0, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK_OK(polylock_lock_is_locked(seen, &locked));
    CHECK(locked && !polylock_lock_is_held(seen));
    CHECK_OK(polylock_lock_is_locked(held_a, &locked));
    CHECK(locked && polylock_lock_is_held(held_a));

    /* status: the kit's JSON object, read by another client. */
    polylock_bytes json = {NULL, 0};
    CHECK_OK(polylock_client_status_json(operator, a, NULL, &json));
    char *text = json_text(&json);
    snprintf(expect, sizeof expect, "{\"name\":\"%s\",\"kind\":\"reentrant\",\"backend\":", a);
    CHECK(strncmp(text, expect, strlen(expect)) == 0);
    CHECK(strstr(text, "\"held\":true,") != NULL);
    CHECK(strstr(text, "\"details\":{") != NULL);
    /* SQL session locks (advisory locks, GET_LOCK) have no names the server can enumerate:
     * list reads the lease table only, so these reentrant locks are not listed there. */
    const bool session_locks =
        strstr(text, "\"backend\":\"postgres\"") != NULL || strstr(text, "\"backend\":\"mysql\"") != NULL;
    free(text);
    CHECK_OK(polylock_client_status_json(operator, a, "reentrant", &json));
    text = json_text(&json);
    CHECK(strstr(text, "\"held\":true,") != NULL);
    free(text);

    /* list: both names under the prefix, by name, and nothing else. A Redis Cluster's keys are
     * spread over masters one script cannot scan: refused there. */
    const bool cluster = strncmp(url, "redis+cluster:", 14) == 0 || strncmp(url, "rediss+cluster:", 15) == 0;
    if (cluster) {
        CHECK_STATUS(polylock_client_list_json(operator, name, &json), POLYLOCK_UNSUPPORTED);
    } else {
        CHECK_OK(polylock_client_list_json(operator, name, &json));
        text = json_text(&json);
        if (session_locks) {
            CHECK(strcmp(text, "[]") == 0);
        } else {
            snprintf(expect, sizeof expect, "[{\"name\":\"%s\",", a);
            CHECK(strncmp(text, expect, strlen(expect)) == 0);
            snprintf(expect, sizeof expect, "{\"name\":\"%s\",", b);
            CHECK(strstr(text, expect) != NULL);
            CHECK(occurrences(text, "\"name\":") == 2 && occurrences(text, "\"held\":true") == 2);
        }
        free(text);
    }

    /* force-unlock: the hold is gone for everyone; a second one finds nothing. A SQL session
     * lock can be released by its session only: refused (ending another client's session
     * would abort all its work). */
    bool removed = false;
    if (session_locks) {
        CHECK_STATUS(polylock_client_force_unlock(operator, a, NULL, &removed), POLYLOCK_UNSUPPORTED);
        CHECK(strstr(polylock_last_error(), "force_unlock is not offered") != NULL && !removed);
        CHECK_OK(polylock_lock_release(held_a));
    } else {
        CHECK_OK(polylock_client_force_unlock(operator, a, NULL, &removed));
        CHECK(removed);
        CHECK_OK(polylock_lock_is_locked(seen, &locked));
        CHECK(!locked);
        CHECK_OK(polylock_client_status_json(operator, a, NULL, &json));
        text = json_text(&json);
        CHECK(strstr(text, "\"held\":false,") != NULL);
        free(text);
        CHECK_OK(polylock_client_force_unlock(operator, a, NULL, &removed));
        CHECK(!removed);
        CHECK_OK(polylock_client_force_unlock(operator, a, NULL, NULL));
        (void)polylock_lock_release(held_a); /* broken by the operator: its owner learns it late */
    }
    CHECK_OK(polylock_lock_acquire(seen, 5000, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK_OK(polylock_lock_release(seen));

    /* Bad input is refused naming the argument; nothing is written to `out`. */
    json.data = NULL;
    CHECK_STATUS(polylock_client_status_json(operator, NULL, NULL, &json), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_status_json(operator, a, "nosuch", &json), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_status_json(operator, "", NULL, &json), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_status_json(operator, a, NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_status_json(NULL, a, NULL, &json), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_list_json(operator, NULL, &json), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "prefix") != NULL);
    CHECK_STATUS(polylock_client_list_json(operator, name, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_force_unlock(operator, NULL, NULL, &removed), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_force_unlock(operator, a, "nosuch", &removed), POLYLOCK_INVALID_ARGUMENT);
    CHECK(json.data == NULL);

    CHECK_OK(polylock_lock_release(held_b));
    CHECK_OK(polylock_client_close(operator));
    CHECK_STATUS(polylock_client_list_json(operator, name, &json), POLYLOCK_CONNECTION);
    CHECK_STATUS(polylock_lock_is_locked(seen, &locked), POLYLOCK_CONNECTION);
    polylock_lock_free(seen);
    polylock_lock_free(held_a);
    polylock_lock_free(held_b);
    polylock_client_free(operator);
    polylock_client_free(holder);
}

int main(int argc, char **argv) {
    static const named_test tests[] = {
        {"bad_input", test_bad_input},   {"contract", test_contract},     {"other_thread", test_other_thread},
        {"reentrant", test_reentrant},   {"lease_lost", test_lease_lost}, {"snowflake", test_snowflake},
        {"rwlock", test_rwlock},         {"semaphore", test_semaphore},   {"uuid7_ulid", test_uuid7_ulid},
        {"hold", test_hold},             {"fork", test_fork},             {"free_race", test_free_race},
        {"admin", test_admin},
    };
    return run_named_test(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
