/*
 * The C tests of the primitives beyond locks: segment IDs, Snowflake on a leased worker id,
 * versioned values with fenced writes, idempotency keys, multi-locks, and RedLock through
 * its URL. Usage: test_primitives <test> <url>; each test is its own ctest entry, run
 * against every backend CMake was told about (redlock starts its own three servers).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

static int compare_ids(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- segment IDs: never 0, never repeated across two generators of one tag ---- */

enum { SEGMENT_BATCH = 1500 };

static void test_segment(void) {
    polylock_client *client = connect_to(url);
    unique_name("segment");
    polylock_segment *first = NULL, *second = NULL;
    CHECK_STATUS(polylock_segment_open(client, NULL, 0, &first), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_segment_open(client, "", 0, &first), POLYLOCK_INVALID_ARGUMENT);
    CHECK(first == NULL);
    CHECK_OK(polylock_segment_open(client, name, 100, &first));
    CHECK_OK(polylock_segment_open(client, name, 0, &second));
    CHECK_STATUS(polylock_segment_next_ids(first, 3, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_segment_next_id(first, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_segment_next_ids(first, 0, NULL));

    static uint64_t ids[2 * SEGMENT_BATCH + 2];
    size_t n = 0;
    CHECK_OK(polylock_segment_next_id(first, &ids[n++]));
    CHECK_OK(polylock_segment_next_id(second, &ids[n++]));
    CHECK_OK(polylock_segment_next_ids(first, SEGMENT_BATCH, &ids[n]));
    for (size_t i = n + 1; i < n + SEGMENT_BATCH; i++) CHECK(ids[i] > ids[i - 1] || ids[i] != ids[i - 1]);
    n += SEGMENT_BATCH;
    CHECK_OK(polylock_segment_next_ids(second, SEGMENT_BATCH, &ids[n]));
    n += SEGMENT_BATCH;
    qsort(ids, n, sizeof ids[0], compare_ids);
    CHECK(ids[0] > 0);
    for (size_t i = 1; i < n; i++) {
        if (ids[i] == ids[i - 1]) {
            fprintf(stderr, "segment ID %llu handed out twice\n", (unsigned long long)ids[i]);
            exit(1);
        }
    }
    polylock_segment_free(first);
    polylock_segment_free(second);
    polylock_segment_free(NULL);
    polylock_client_free(client);
}

/* ---- Snowflake on a leased worker id ---- */

static void test_snowflake_lease(void) {
    polylock_client *client = connect_to(url);
    polylock_leased_snowflake *any = NULL, *same = NULL, *again = NULL;
    CHECK_STATUS(polylock_snowflake_lease(client, 1024, &any), POLYLOCK_INVALID_ARGUMENT);
    CHECK(any == NULL);
    CHECK_OK(polylock_snowflake_lease(client, -1, &any));
    uint64_t worker = 0, epoch = 0;
    CHECK_OK(polylock_leased_snowflake_worker(any, &worker, &epoch));
    CHECK(worker <= 1023);
    CHECK(epoch > 0);
    /* The same id is not leased twice while held. */
    CHECK_STATUS(polylock_snowflake_lease(client, (int64_t)worker, &same), POLYLOCK_TIMEOUT);
    CHECK(same == NULL);

    uint64_t ids[600];
    CHECK_OK(polylock_leased_snowflake_next(any, &ids[0]));
    CHECK_OK(polylock_leased_snowflake_next_ids(any, 599, &ids[1]));
    for (size_t i = 1; i < 600; i++) CHECK(ids[i] > ids[i - 1]);
    CHECK(((ids[0] >> 12) & 1023) == worker);

    /* Closed, the id is free again, and its new holder issues IDs above every earlier one. */
    CHECK_OK(polylock_leased_snowflake_close(any));
    CHECK_OK(polylock_leased_snowflake_close(any));
    CHECK_STATUS(polylock_leased_snowflake_worker(any, NULL, NULL), POLYLOCK_LOST);
    CHECK_OK(polylock_snowflake_lease(client, (int64_t)worker, &again));
    uint64_t next_epoch = 0, later = 0;
    CHECK_OK(polylock_leased_snowflake_worker(again, NULL, &next_epoch));
    CHECK(next_epoch > epoch);
    CHECK_OK(polylock_leased_snowflake_next(again, &later));
    CHECK(later > ids[599]);
    polylock_leased_snowflake_free(any);
    polylock_leased_snowflake_free(again);
    polylock_leased_snowflake_free(NULL);
    polylock_client_free(client);
}

/* ---- versioned values: create, compare-and-set, delete, fenced writes, details ---- */

static void expect_conflict(polylock_status status, bool has_current, const char *current, uint64_t version) {
    CHECK_STATUS(status, POLYLOCK_CONFLICT);
    polylock_error_details details;
    CHECK_OK(polylock_last_error_details(&details));
    CHECK(details.kind == POLYLOCK_DETAILS_CONFLICT);
    CHECK(details.has_current == has_current);
    if (has_current) {
        CHECK(details.current_version == version);
        CHECK(details.current_value.len == strlen(current));
        /* memcmp on a NULL pointer is undefined even for 0 bytes (UBSan says so), and an empty
         * value comes back as NULL data: compare only when there are bytes to compare. */
        CHECK(strlen(current) == 0 || memcmp(details.current_value.data, current, strlen(current)) == 0);
    } else {
        CHECK(details.current_value.data == NULL);
    }
    polylock_bytes_free(&details.current_value);
    polylock_bytes_free(&details.current_value); /* twice is harmless */
}

static void test_value(void) {
    polylock_client *client = connect_to(url);
    unique_name("value");
    polylock_value *value = NULL;
    CHECK_STATUS(polylock_client_value(client, "", &value), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_client_value(client, name, &value));

    polylock_versioned found;
    CHECK_OK(polylock_value_get(value, &found));
    CHECK(!found.found);
    CHECK_STATUS(polylock_value_create(value, NULL, 4, NULL), POLYLOCK_INVALID_ARGUMENT);

    uint64_t v1 = 0, v2 = 0, v3 = 0;
    CHECK_OK(polylock_value_create(value, (const uint8_t *)"one", 3, &v1));
    expect_conflict(polylock_value_create(value, (const uint8_t *)"uno", 3, NULL), true, "one", v1);
    CHECK_OK(polylock_value_compare_and_set(value, v1, (const uint8_t *)"two", 3, &v2));
    CHECK(v2 > v1);
    /* A stale version: the conflict carries what is there now. */
    expect_conflict(polylock_value_compare_and_set(value, v1, (const uint8_t *)"dos", 3, NULL), true, "two", v2);
    CHECK_OK(polylock_value_get(value, &found));
    CHECK(found.found && found.version == v2 && !found.fenced);
    CHECK(found.value.len == 3 && memcmp(found.value.data, "two", 3) == 0);
    polylock_bytes_free(&found.value);

    /* Fenced writes: a lower token than one accepted is refused, naming the winner. */
    CHECK_OK(polylock_value_write_fenced(value, 10, (const uint8_t *)"ten", 3, &v3));
    CHECK(v3 > v2);
    CHECK_OK(polylock_value_write_fenced(value, 10, (const uint8_t *)"ten again", 9, &v3));
    CHECK_STATUS(polylock_value_write_fenced(value, 9, (const uint8_t *)"nine", 4, NULL), POLYLOCK_FENCED);
    polylock_error_details details;
    CHECK_OK(polylock_last_error_details(&details));
    CHECK(details.kind == POLYLOCK_DETAILS_FENCED && details.winning_token == 10);
    CHECK_OK(polylock_value_get(value, &found));
    CHECK(found.fenced && found.fencing_token == 10 && found.version == v3);
    CHECK(found.value.len == 9 && memcmp(found.value.data, "ten again", 9) == 0);
    polylock_bytes_free(&found.value);

    /* An empty value is a value. */
    uint64_t v4 = 0;
    CHECK_OK(polylock_value_compare_and_set(value, v3, NULL, 0, &v4));
    CHECK_OK(polylock_value_get(value, &found));
    CHECK(found.found && found.value.len == 0 && found.value.data == NULL);

    expect_conflict(polylock_value_delete(value, v3), true, "", v4);
    CHECK_OK(polylock_value_delete(value, v4));
    expect_conflict(polylock_value_delete(value, v4), false, NULL, 0);
    CHECK_OK(polylock_value_get(value, &found));
    CHECK(!found.found);
    /* A failure without details replaces the last ones. */
    CHECK_STATUS(polylock_value_get(value, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_last_error_details(&details));
    CHECK(details.kind == POLYLOCK_DETAILS_NONE);
    polylock_value_free(value);
    polylock_value_free(NULL);
    polylock_client_free(client);
}

/* ---- idempotency keys, step by step, and the codec a run helper uses ---- */

static void test_idempotency(void) {
    polylock_client *client = connect_to(url);
    unique_name("idem");
    polylock_idempotency *keys = NULL;
    CHECK_STATUS(polylock_client_idempotency(client, "", 0, 0, &keys), POLYLOCK_INVALID_ARGUMENT);
    /* A short in-progress TTL, so a crashed attempt is taken over within the test; 1.5 s,
     * not 0.3: under valgrind the second begin came after 300 ms and took the key over. */
    CHECK_OK(polylock_client_idempotency(client, name, 0, 1500, &keys));
    const uint8_t *fp = (const uint8_t *)"amount=10";
    polylock_begin first, other;
    CHECK_STATUS(polylock_idempotency_begin(keys, "", fp, 9, &first), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_idempotency_begin(keys, "order-1", fp, 9, &first));
    CHECK(first.outcome == POLYLOCK_BEGIN_ACQUIRED && first.ticket != NULL);
    uint64_t token = 0;
    CHECK_OK(polylock_ticket_token(first.ticket, &token));
    CHECK(token == 1);

    CHECK_OK(polylock_idempotency_begin(keys, "order-1", fp, 9, &other));
    CHECK(other.outcome == POLYLOCK_BEGIN_IN_PROGRESS && other.ticket == NULL);
    CHECK(other.retry_after_ms > 0 && other.retry_after_ms <= 1500);
    CHECK_OK(polylock_ticket_extend(first.ticket));
    CHECK_OK(polylock_idempotency_begin(keys, "order-1", (const uint8_t *)"amount=11", 9, &other));
    CHECK(other.outcome == POLYLOCK_BEGIN_MISMATCH);

    CHECK_OK(polylock_ticket_complete(first.ticket, (const uint8_t *)"paid", 4));
    CHECK_STATUS(polylock_ticket_complete(first.ticket, (const uint8_t *)"again", 5), POLYLOCK_INVALID_ARGUMENT);
    polylock_ticket_free(first.ticket);
    CHECK_OK(polylock_idempotency_begin(keys, "order-1", fp, 9, &other));
    CHECK(other.outcome == POLYLOCK_BEGIN_REPLAY);
    CHECK(other.response.len == 4 && memcmp(other.response.data, "paid", 4) == 0);
    polylock_bytes_free(&other.response);

    /* Abandoned: the next attempt runs, with a greater token. */
    CHECK_OK(polylock_idempotency_begin(keys, "order-2", fp, 9, &first));
    CHECK(first.outcome == POLYLOCK_BEGIN_ACQUIRED);
    CHECK_OK(polylock_ticket_abandon(first.ticket));
    polylock_ticket_free(first.ticket);
    CHECK_OK(polylock_idempotency_begin(keys, "order-2", fp, 9, &first));
    CHECK(first.outcome == POLYLOCK_BEGIN_ACQUIRED);
    CHECK_OK(polylock_ticket_token(first.ticket, &token));
    CHECK(token == 2);

    /* Crashed (not extended past its TTL): taken over; the old ticket can no longer finish. */
    sleep_ms(1650);
    CHECK_OK(polylock_idempotency_begin(keys, "order-2", fp, 9, &other));
    CHECK(other.outcome == POLYLOCK_BEGIN_ACQUIRED);
    uint64_t newer = 0;
    CHECK_OK(polylock_ticket_token(other.ticket, &newer));
    CHECK(newer == 3);
    CHECK_STATUS(polylock_ticket_complete(first.ticket, (const uint8_t *)"late", 4), POLYLOCK_LOST);
    CHECK_STATUS(polylock_ticket_extend(first.ticket), POLYLOCK_LOST);
    CHECK_OK(polylock_ticket_complete(other.ticket, (const uint8_t *)"fresh", 5));
    polylock_ticket_free(first.ticket);
    polylock_ticket_free(other.ticket);
    polylock_ticket_free(NULL);

    /* The codec: JSON fingerprints ignore key order and spacing; responses round-trip. */
    polylock_bytes a = {NULL, 0}, b = {NULL, 0};
    const char *j1 = "{\"amount\": 10, \"card\": {\"b\": [1, 2]}}", *j2 = "{\"card\":{\"b\":[1,2]},\"amount\":10}";
    CHECK_OK(polylock_idempotency_fingerprint((const uint8_t *)j1, strlen(j1), true, &a));
    CHECK_OK(polylock_idempotency_fingerprint((const uint8_t *)j2, strlen(j2), true, &b));
    CHECK(a.len == b.len && a.len == 7 + 32 && memcmp(a.data, b.data, a.len) == 0);
    CHECK(memcmp(a.data, "sha256:", 7) == 0);
    polylock_bytes_free(&a);
    polylock_bytes_free(&b);
    CHECK_STATUS(polylock_idempotency_fingerprint((const uint8_t *)"{no", 3, true, &a), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_idempotency_fingerprint(fp, 9, false, &a));
    CHECK(a.len == 9 && memcmp(a.data, fp, 9) == 0);
    polylock_bytes_free(&a);
    bool is_json = false;
    CHECK_OK(polylock_idempotency_encode_response((const uint8_t *)"[1]", 3, true, &a));
    CHECK_OK(polylock_idempotency_decode_response(a.data, a.len, &is_json, &b));
    CHECK(is_json && b.len == 3 && memcmp(b.data, "[1]", 3) == 0);
    polylock_bytes_free(&a);
    polylock_bytes_free(&b);
    /* A response completed step by step with raw bytes was not stored by a run helper. */
    CHECK_STATUS(polylock_idempotency_decode_response((const uint8_t *)"paid", 4, &is_json, &b),
                 POLYLOCK_INVALID_ARGUMENT);
    polylock_idempotency_free(keys);
    polylock_idempotency_free(NULL);
    polylock_client_free(client);
}

/* ---- multi-locks: opposite orders under contention, one deadline, nothing left held ---- */

enum { MULTI_THREADS = 4, MULTI_ROUNDS = 15 };

struct multi_ledger {
    polylock_multi_lock *forward, *backward;
    atomic_int inside;
    atomic_int failures;
};

static void *contend_multi(void *arg) {
    struct multi_ledger *ledger = arg;
    /* Threads alternate between the two orders of the same names. */
    static atomic_int next_thread;
    int me = atomic_fetch_add(&next_thread, 1);
    polylock_multi_lock *locks = me % 2 ? ledger->backward : ledger->forward;
    for (int round = 0; round < MULTI_ROUNDS; round++) {
        polylock_multi_hold *hold = NULL;
        /* A generous deadline: a deadlock would end in TIMEOUT, a failure here. */
        if (polylock_multi_lock_acquire(locks, 60000, POLYLOCK_LEASE_WATCHDOG, NULL, &hold) != POLYLOCK_OK) {
            fprintf(stderr, "multi acquire failed: %s\n", polylock_last_error());
            atomic_fetch_add(&ledger->failures, 1);
            return NULL;
        }
        if (atomic_fetch_add(&ledger->inside, 1) != 0) {
            fprintf(stderr, "two multi-lock holders at once\n");
            atomic_fetch_add(&ledger->failures, 1);
        }
        atomic_fetch_sub(&ledger->inside, 1);
        if (polylock_multi_hold_release(hold) != POLYLOCK_OK) {
            fprintf(stderr, "multi release failed: %s\n", polylock_last_error());
            atomic_fetch_add(&ledger->failures, 1);
        }
        polylock_multi_hold_free(hold);
    }
    return NULL;
}

static void test_multi_lock(void) {
    polylock_client *client = connect_to(url);
    unique_name("multi");
    char a[200], b[200], c[200];
    snprintf(a, sizeof a, "%s:a", name);
    snprintf(b, sizeof b, "%s:b", name);
    snprintf(c, sizeof c, "%s:c", name);
    const char *forward[] = {a, b, c}, *backward[] = {c, b, a}, *twice[] = {a, a}, *with_null[] = {a, NULL};
    struct multi_ledger ledger;
    atomic_init(&ledger.inside, 0);
    atomic_init(&ledger.failures, 0);
    polylock_multi_lock *bad = NULL;
    CHECK_STATUS(polylock_client_multi_lock(client, forward, 0, &bad), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_multi_lock(client, twice, 2, &bad), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_multi_lock(client, with_null, 2, &bad), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_multi_lock(client, NULL, 2, &bad), POLYLOCK_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    CHECK_OK(polylock_client_multi_lock(client, forward, 3, &ledger.forward));
    CHECK_OK(polylock_client_multi_lock(client, backward, 3, &ledger.backward));

    pthread_t threads[MULTI_THREADS];
    for (int i = 0; i < MULTI_THREADS; i++) CHECK(pthread_create(&threads[i], NULL, contend_multi, &ledger) == 0);
    for (int i = 0; i < MULTI_THREADS; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(atomic_load(&ledger.failures) == 0);

    /* Parts in canonical order, each with a token of its own name. */
    polylock_multi_hold *hold = NULL;
    CHECK_OK(polylock_multi_lock_acquire(ledger.backward, 5000, POLYLOCK_LEASE_WATCHDOG, NULL, &hold));
    CHECK(polylock_multi_hold_count(hold) == 3);
    for (size_t i = 0; i < 3; i++) {
        const char *part = NULL;
        uint64_t token = 0;
        bool has_token = false;
        CHECK_OK(polylock_multi_hold_part(hold, i, &part, &token, &has_token));
        CHECK(strcmp(part, forward[i]) == 0);
        CHECK(has_token && token > 0);
    }
    CHECK_STATUS(polylock_multi_hold_part(hold, 3, NULL, NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(!polylock_multi_hold_is_lost(hold));

    /* Held elsewhere: one short deadline for the whole multi-lock, and the free part is
       left free (a plain lock on it is granted at once). */
    const char *overlap[] = {a, c};
    polylock_multi_lock *other = NULL;
    polylock_multi_hold *blocked = NULL;
    CHECK_OK(polylock_client_multi_lock(client, overlap, 2, &other));
    CHECK_STATUS(polylock_multi_lock_acquire(other, 200, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked), POLYLOCK_TIMEOUT);
    CHECK(blocked == NULL);
    CHECK_OK(polylock_multi_hold_release(hold));
    CHECK_STATUS(polylock_multi_hold_release(hold), POLYLOCK_NOT_OWNER);
    polylock_multi_hold_free(hold);

    char d[200];
    snprintf(d, sizeof d, "%s:d", name);
    const char *partial[] = {d, b};
    polylock_multi_lock *half = NULL;
    polylock_lock *b_lock = NULL, *d_lock = NULL;
    polylock_hold *b_hold = NULL, *d_hold = NULL;
    CHECK_OK(polylock_client_multi_lock(client, partial, 2, &half));
    CHECK_OK(polylock_client_lock(client, b, &b_lock));
    CHECK_OK(polylock_client_lock(client, d, &d_lock));
    CHECK_OK(polylock_lock_acquire_hold(b_lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &b_hold));
    CHECK_STATUS(polylock_multi_lock_acquire(half, 200, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_lock_acquire_hold(d_lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &d_hold)); /* d was given back */
    CHECK_OK(polylock_hold_release(d_hold));
    polylock_hold_free(d_hold);

    /* A wait with no limit, cancelled: status CANCELLED, and d is left free again. */
    polylock_cancel *cancel = NULL;
    CHECK_OK(polylock_cancel_new(&cancel));
    CHECK_OK(polylock_cancel_fire(cancel));
    CHECK_STATUS(polylock_multi_lock_acquire(half, POLYLOCK_WAIT_FOREVER, POLYLOCK_LEASE_WATCHDOG, cancel, &blocked), POLYLOCK_CANCELLED);
    polylock_cancel_free(cancel);
    CHECK_OK(polylock_lock_acquire_hold(d_lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &d_hold));
    CHECK_OK(polylock_hold_release(d_hold));
    polylock_hold_free(d_hold);
    CHECK_OK(polylock_hold_release(b_hold));
    polylock_hold_free(b_hold);
    polylock_lock_free(b_lock);
    polylock_lock_free(d_lock);

    /* An unreleased hold, freed, is released in the background. */
    CHECK_OK(polylock_multi_lock_acquire(other, 5000, POLYLOCK_LEASE_WATCHDOG, NULL, &hold));
    polylock_multi_hold_free(hold);
    CHECK_OK(polylock_multi_lock_acquire(other, 10000, POLYLOCK_LEASE_WATCHDOG, NULL, &hold));
    CHECK_OK(polylock_multi_hold_release(hold));
    polylock_multi_hold_free(hold);
    polylock_multi_hold_free(NULL);

    polylock_multi_lock_free(half);
    polylock_multi_lock_free(other);
    polylock_multi_lock_free(ledger.forward);
    polylock_multi_lock_free(ledger.backward);
    polylock_multi_lock_free(NULL);
    polylock_client_free(client);
}

/* ---- RedLock through its URL and through polylock_redlock(), over three private redis-servers ---- */

enum { REDLOCK_NODES = 3 };

static void test_redlock(void) {
    /* Ports above 30000, apart per process so parallel runs do not meet. */
    int base = 31000 + (int)(getpid() % 3000) * 3;
    for (int i = 0; i < REDLOCK_NODES; i++) start_redis(base + i);
    char redlock_url[160];
    snprintf(redlock_url, sizeof redlock_url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", base, base + 1,
             base + 2);
    /* Wait for the servers to listen: a connect checks every node. */
    polylock_client *client = NULL;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (polylock_connect(redlock_url, &client) == POLYLOCK_OK) break;
        sleep_ms(50);
    }
    CHECK(client != NULL);
    polylock_client *other_client = connect_to(redlock_url);
    unique_name("redlock");

    /* The lock kind RedLock has: a hold excludes another client's, and frees it on release. */
    polylock_lock *lock = NULL, *other = NULL;
    polylock_hold *hold = NULL, *blocked = NULL;
    /* Token locks only (redsync's and node-redlock's layout): the reentrant kind is refused. */
    CHECK_STATUS(polylock_client_lock(client, name, &lock), POLYLOCK_UNSUPPORTED);
    CHECK_OK(polylock_client_lock_kind(client, name, "token", &lock));
    CHECK_OK(polylock_client_lock_kind(other_client, name, "token", &other));
    CHECK_OK(polylock_lock_acquire_hold(lock, 2000, POLYLOCK_LEASE_WATCHDOG, NULL, &hold));
    CHECK_STATUS(polylock_lock_acquire_hold(other, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked), POLYLOCK_TIMEOUT);
    CHECK_STATUS(polylock_lock_acquire_hold(other, 150, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked), POLYLOCK_TIMEOUT);
    CHECK(!polylock_hold_is_lost(hold));
    CHECK_OK(polylock_hold_release(hold));
    polylock_hold_free(hold);
    CHECK_OK(polylock_lock_acquire_hold(other, 2000, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked));
    CHECK_OK(polylock_hold_release(blocked));
    polylock_hold_free(blocked);

    /* No fencing tokens on RedLock: a multi-lock's parts say so. */
    char a[200], b[200];
    snprintf(a, sizeof a, "%s:a", name);
    snprintf(b, sizeof b, "%s:b", name);
    const char *names[] = {b, a};
    polylock_multi_lock *multi = NULL;
    polylock_multi_hold *parts = NULL;
    CHECK_OK(polylock_client_multi_lock(client, names, 2, &multi));
    CHECK_OK(polylock_multi_lock_acquire(multi, 2000, POLYLOCK_LEASE_WATCHDOG, NULL, &parts));
    for (size_t i = 0; i < 2; i++) {
        bool has_token = true;
        CHECK_OK(polylock_multi_hold_part(parts, i, NULL, NULL, &has_token));
        CHECK(!has_token);
    }
    CHECK_OK(polylock_multi_hold_release(parts));
    polylock_multi_hold_free(parts);
    polylock_multi_lock_free(multi);

    /* Read-write locks are no RedLock kind: refused when the handle is made. */
    polylock_rwlock *rw = NULL;
    CHECK_STATUS(polylock_client_rwlock(client, name, &rw), POLYLOCK_UNSUPPORTED);
    /* Nor are elections and latches (a majority of independent servers keeps no record). */
    polylock_election *election = NULL;
    polylock_latch *latch = NULL;
    CHECK_STATUS(polylock_client_election(client, name, &election), POLYLOCK_UNSUPPORTED);
    CHECK_STATUS(polylock_client_latch(client, name, &latch), POLYLOCK_UNSUPPORTED);
    CHECK(election == NULL && latch == NULL);

    /* polylock_redlock(servers, name): the same lock from a list of servers, on a client of
     * its own, excluding the URL client's hold; its entries are the core's rule. */
    char entries[REDLOCK_NODES][64];
    const char *list[REDLOCK_NODES];
    for (int i = 0; i < REDLOCK_NODES; i++) {
        snprintf(entries[i], sizeof entries[i], i == 0 ? "redis://127.0.0.1:%d" : "127.0.0.1:%d", base + i);
        list[i] = entries[i];
    }
    polylock_lock *listed = NULL;
    CHECK_STATUS(polylock_redlock(NULL, 3, name, &listed), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_redlock(list, 0, name, &listed), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "at least one") != NULL);
    CHECK_STATUS(polylock_redlock(list, REDLOCK_NODES, NULL, &listed), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_redlock(list, REDLOCK_NODES, name, NULL), POLYLOCK_INVALID_ARGUMENT);
    const char *bad[] = {entries[1], "rediss://127.0.0.1:1"};
    CHECK_STATUS(polylock_redlock(bad, 2, name, &listed), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "TLS") != NULL);
    const char *secret[] = {"redis://u:Sekr3t-9@127.0.0.1:1", "redis://u:0ther-9@127.0.0.1:2"};
    CHECK_STATUS(polylock_redlock(secret, 2, name, &listed), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "credentials") && !strstr(polylock_last_error(), "Sekr3t") &&
          !strstr(polylock_last_error(), "0ther"));
    CHECK(listed == NULL);
    CHECK_OK(polylock_redlock(list, REDLOCK_NODES, name, &listed));
    CHECK_OK(polylock_lock_acquire(listed, 2000, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK(polylock_lock_is_held(listed));
    CHECK_STATUS(polylock_lock_acquire_hold(other, 100, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_lock_release(listed));
    CHECK_OK(polylock_lock_acquire_hold(other, 2000, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked));
    CHECK_STATUS(polylock_lock_acquire(listed, 100, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_hold_release(blocked));
    polylock_hold_free(blocked);
    /* Freeing the lock closes its client, which gives back what the lock still holds. */
    CHECK_OK(polylock_lock_acquire(listed, 2000, POLYLOCK_LEASE_WATCHDOG, NULL));
    polylock_lock_free(listed);
    CHECK_OK(polylock_lock_acquire_hold(other, 5000, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked));
    CHECK_OK(polylock_hold_release(blocked));
    polylock_hold_free(blocked);
    /* polylock_redlock_connect: a client of the list, for any RedLock use. */
    polylock_client *listed_client = NULL;
    CHECK_STATUS(polylock_redlock_connect(list, REDLOCK_NODES, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_OK(polylock_redlock_connect(list, REDLOCK_NODES, &listed_client));
    polylock_lock *via_client = NULL;
    CHECK_STATUS(polylock_client_lock(listed_client, name, &via_client), POLYLOCK_UNSUPPORTED);
    CHECK_OK(polylock_client_lock_kind(listed_client, name, "token", &via_client));
    CHECK_OK(polylock_lock_acquire(via_client, 2000, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK_STATUS(polylock_lock_acquire_hold(other, 0, POLYLOCK_LEASE_WATCHDOG, NULL, &blocked), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_lock_release(via_client));
    polylock_lock_free(via_client);
    polylock_client_free(listed_client);

    polylock_lock_free(lock);
    polylock_lock_free(other);
    polylock_client_free(client);
    polylock_client_free(other_client);
    stop_private_servers();
}

int main(int argc, char **argv) {
    static const named_test tests[] = {
        {"segment", test_segment},         {"snowflake_lease", test_snowflake_lease},
        {"value", test_value},             {"idempotency", test_idempotency},
        {"multi_lock", test_multi_lock},   {"redlock", test_redlock},
    };
    return run_named_test(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
