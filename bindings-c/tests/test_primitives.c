/*
 * The C tests of the primitives beyond locks: segment IDs, Snowflake on a leased worker id,
 * versioned values with fenced writes and watches, idempotency keys and runs, multi-locks, and RedLock through
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

/* ---- a value's watch: another client's changes, a bounded wait, cancel, close ---- */

struct watch_waiter {
    polylock_watch *watch;
    polylock_cancel *cancel;
    polylock_status status;
    polylock_watch_step step;
};

static void *wait_for_change(void *arg) {
    struct watch_waiter *waiter = arg;
    waiter->status = polylock_watch_changed(waiter->watch, POLYLOCK_WAIT_FOREVER, waiter->cancel, &waiter->step);
    return NULL;
}

/* The next step is a change to `text` (at a version above `after`); returns its version. */
static uint64_t expect_change(polylock_watch *watch, const char *text, uint64_t after) {
    polylock_watch_step step;
    CHECK_OK(polylock_watch_changed(watch, 10000, NULL, &step));
    CHECK(step.outcome == POLYLOCK_WATCH_CHANGED && step.state.found);
    CHECK(bytes_are(&step.state.value, text) && step.state.version > after);
    uint64_t version = step.state.version;
    polylock_bytes_free(&step.state.value);
    return version;
}

static void test_value_watch(void) {
    polylock_client *client = connect_to(url), *writer_client = connect_to(url);
    unique_name("value-watch");
    polylock_value *value = NULL, *writer = NULL;
    CHECK_OK(polylock_client_value(client, name, &value));
    CHECK_OK(polylock_client_value(writer_client, name, &writer));

    /* Bad arguments name themselves and leave the out-parameters alone. */
    polylock_watch *watch = NULL;
    CHECK_STATUS(polylock_value_watch(NULL, &watch), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "value is NULL") != NULL);
    CHECK_STATUS(polylock_value_watch(value, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(watch == NULL);
    CHECK_OK(polylock_value_watch(value, &watch));
    polylock_watch_step step;
    polylock_versioned now;
    CHECK_STATUS(polylock_watch_changed(NULL, 0, NULL, &step), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_watch_changed(watch, 0, NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_watch_changed(watch, -2, NULL, &step), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "wait_ms") != NULL);
    CHECK_STATUS(polylock_watch_current(NULL, &now), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_watch_current(watch, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_watch_close(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(!polylock_watch_is_closed(NULL));

    /* Nothing there yet; a bounded wait with no change says so, and loses nothing. */
    CHECK_OK(polylock_watch_current(watch, &now));
    CHECK(!now.found && now.value.data == NULL);
    CHECK_OK(polylock_watch_changed(watch, 100, NULL, &step));
    CHECK(step.outcome == POLYLOCK_WATCH_NO_CHANGE && !step.state.found);
    CHECK_OK(polylock_watch_changed(watch, 0, NULL, &step));
    CHECK(step.outcome == POLYLOCK_WATCH_NO_CHANGE);

    /* Another client's writes: each is seen, and current() follows. */
    uint64_t v1 = 0, v2 = 0;
    CHECK_OK(polylock_value_create(writer, (const uint8_t *)"x", 1, &v1));
    CHECK(expect_change(watch, "x", 0) == v1);
    CHECK_OK(polylock_watch_current(watch, &now));
    CHECK(now.found && now.version == v1 && bytes_are(&now.value, "x"));
    polylock_bytes_free(&now.value);
    /* A change made while nobody waited is the next wait's answer. */
    CHECK_OK(polylock_value_compare_and_set(writer, v1, (const uint8_t *)"yy", 2, &v2));
    sleep_ms(50);
    CHECK(expect_change(watch, "yy", v1) == v2);

    /* A delete is a change with no value. */
    CHECK_OK(polylock_value_delete(writer, v2));
    CHECK_OK(polylock_watch_changed(watch, 10000, NULL, &step));
    CHECK(step.outcome == POLYLOCK_WATCH_DELETED && !step.state.found && step.state.value.data == NULL);
    CHECK_OK(polylock_watch_current(watch, &now));
    CHECK(!now.found);

    /* A cancel ends one wait; the watch stays usable and still sees the next change. */
    struct watch_waiter waiter = {watch, NULL, POLYLOCK_INTERNAL, {0}};
    CHECK_OK(polylock_cancel_new(&waiter.cancel));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, wait_for_change, &waiter) == 0);
    sleep_ms(150);
    CHECK_OK(polylock_cancel_fire(waiter.cancel));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(waiter.status == POLYLOCK_CANCELLED);
    polylock_cancel_free(waiter.cancel);
    CHECK(!polylock_watch_is_closed(watch));
    CHECK_OK(polylock_value_create(writer, (const uint8_t *)"z", 1, NULL));
    expect_change(watch, "z", v2);

    /* A close from another thread ends a wait without limit, and every later one. */
    waiter = (struct watch_waiter){watch, NULL, POLYLOCK_INTERNAL, {0}};
    CHECK(pthread_create(&thread, NULL, wait_for_change, &waiter) == 0);
    sleep_ms(150);
    CHECK_OK(polylock_watch_close(watch));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_OK(waiter.status);
    CHECK(waiter.step.outcome == POLYLOCK_WATCH_CLOSED && !waiter.step.state.found);
    CHECK(polylock_watch_is_closed(watch));
    CHECK_OK(polylock_watch_changed(watch, POLYLOCK_WAIT_FOREVER, NULL, &step));
    CHECK(step.outcome == POLYLOCK_WATCH_CLOSED);
    CHECK_OK(polylock_watch_close(watch));
    /* current() keeps the last state seen. */
    CHECK_OK(polylock_watch_current(watch, &now));
    CHECK(now.found && bytes_are(&now.value, "z"));
    polylock_bytes_free(&now.value);
    polylock_watch_free(watch);
    polylock_watch_free(NULL);

    /* A watch freed open lets go of everything (LeakSanitizer and valgrind check). */
    CHECK_OK(polylock_value_watch(value, &watch));
    CHECK_OK(polylock_watch_current(watch, &now));
    CHECK(now.found && bytes_are(&now.value, "z"));
    polylock_bytes_free(&now.value);
    polylock_watch_free(watch);
    /* A watch that outlives its client: its calls fail with CONNECTION, its free is safe. */
    CHECK_OK(polylock_value_watch(writer, &watch));
    polylock_client_free(writer_client);
    CHECK_STATUS(polylock_watch_changed(watch, 0, NULL, &step), POLYLOCK_CONNECTION);
    polylock_watch_free(watch);
    polylock_value_free(writer);
    polylock_value_free(value);
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

/* ---- idempotency run: the core's loop with a C callback as the work ---- */

struct work {
    int calls;
    const char *response; /* NULL: set none */
    int32_t returns;
    polylock_value *write_to; /* non-NULL: the work writes this value first (polylock from inside) */
};

static int32_t do_work(void *user_data, polylock_work_response *response) {
    struct work *work = user_data;
    work->calls++;
    if (work->write_to != NULL) {
        polylock_status written = polylock_value_create(work->write_to, (const uint8_t *)"side effect", 11, NULL);
        if (written != POLYLOCK_OK) return written;
    }
    if (work->response != NULL) {
        polylock_status set = polylock_work_response_set(response, (const uint8_t *)work->response, strlen(work->response));
        if (set != POLYLOCK_OK) return set;
    }
    return work->returns;
}

struct completer {
    polylock_ticket *ticket;
    polylock_status status;
};

static void *complete_later(void *arg) {
    struct completer *completer = arg;
    sleep_ms(300);
    polylock_bytes stored = {NULL, 0};
    completer->status = polylock_idempotency_encode_response((const uint8_t *)"{\"paid\":true}", 13, true, &stored);
    if (completer->status == POLYLOCK_OK) {
        completer->status = polylock_ticket_complete(completer->ticket, stored.data, stored.len);
    }
    polylock_bytes_free(&stored);
    return NULL;
}

static void test_idempotency_run(void) {
    polylock_client *client = connect_to(url);
    unique_name("idem-run");
    polylock_idempotency *keys = NULL;
    CHECK_OK(polylock_client_idempotency(client, name, 0, 0, &keys));
    const uint8_t *fp = (const uint8_t *)"amount=10";
    polylock_bytes out = {NULL, 0};

    /* Bad arguments: nothing is called, nothing is written. */
    struct work work = {0, "first", POLYLOCK_OK, NULL};
    CHECK_STATUS(polylock_idempotency_run(NULL, "k", fp, 9, 0, do_work, &work, &out), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_idempotency_run(keys, NULL, fp, 9, 0, do_work, &work, &out), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_idempotency_run(keys, "", fp, 9, 0, do_work, &work, &out), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_idempotency_run(keys, "k", NULL, 9, 0, do_work, &work, &out), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_idempotency_run(keys, "k", fp, 9, 0, NULL, &work, &out), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "work is NULL") != NULL);
    CHECK_STATUS(polylock_idempotency_run(keys, "k", fp, 9, 0, do_work, &work, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_idempotency_run(keys, "k", fp, 9, -2, do_work, &work, &out), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_work_response_set(NULL, fp, 9), POLYLOCK_INVALID_ARGUMENT);
    CHECK(work.calls == 0 && out.data == NULL);

    /* The first run works; later ones replay its response without working. */
    CHECK_OK(polylock_idempotency_run(keys, "k", fp, 9, POLYLOCK_WAIT_FOREVER, do_work, &work, &out));
    CHECK(work.calls == 1 && bytes_are(&out, "first"));
    polylock_bytes_free(&out);
    struct work second = {0, "second", POLYLOCK_OK, NULL};
    CHECK_OK(polylock_idempotency_run(keys, "k", fp, 9, 0, do_work, &second, &out));
    CHECK(second.calls == 0 && bytes_are(&out, "first"));
    polylock_bytes_free(&out);
    /* The step-by-step begin reads the same record: the stored (tagged) form. */
    polylock_begin began;
    CHECK_OK(polylock_idempotency_begin(keys, "k", fp, 9, &began));
    CHECK(began.outcome == POLYLOCK_BEGIN_REPLAY);
    bool is_json = true;
    CHECK_OK(polylock_idempotency_decode_response(began.response.data, began.response.len, &is_json, &out));
    CHECK(!is_json && bytes_are(&out, "first"));
    polylock_bytes_free(&out);
    polylock_bytes_free(&began.response);
    /* The key with another payload. */
    CHECK_STATUS(polylock_idempotency_run(keys, "k", (const uint8_t *)"amount=11", 9, 0, do_work, &second, &out),
                 POLYLOCK_MISMATCH);
    CHECK(second.calls == 0 && out.data == NULL);

    /* A failing work: its status comes back, the key is abandoned, and a retry works. */
    struct work failing = {0, "half done", POLYLOCK_CONFLICT, NULL};
    CHECK_STATUS(polylock_idempotency_run(keys, "f", fp, 9, 0, do_work, &failing, &out), POLYLOCK_CONFLICT);
    CHECK(failing.calls == 1 && out.data == NULL);
    CHECK(strstr(polylock_last_error(), "CONFLICT") != NULL && strstr(polylock_last_error(), "abandoned") != NULL);
    struct work odd = {0, NULL, 4242, NULL};
    CHECK_STATUS(polylock_idempotency_run(keys, "f", fp, 9, 0, do_work, &odd, &out), POLYLOCK_BACKEND);
    CHECK(odd.calls == 1 && strstr(polylock_last_error(), "4242") != NULL);
    /* No response set: an empty one is stored and replayed. */
    struct work quiet = {0, NULL, POLYLOCK_OK, NULL};
    CHECK_OK(polylock_idempotency_run(keys, "f", fp, 9, 0, do_work, &quiet, &out));
    CHECK(quiet.calls == 1 && out.data == NULL && out.len == 0);
    CHECK_OK(polylock_idempotency_run(keys, "f", fp, 9, 0, do_work, &work, &out));
    CHECK(work.calls == 1 && out.len == 0);

    /* The work may call polylock on this thread (a nested call on the same client). */
    char side_name[200];
    snprintf(side_name, sizeof side_name, "%s-side", name);
    polylock_value *side = NULL;
    CHECK_OK(polylock_client_value(client, side_name, &side));
    struct work writing = {0, "written", POLYLOCK_OK, side};
    CHECK_OK(polylock_idempotency_run(keys, "w", fp, 9, 0, do_work, &writing, &out));
    CHECK(writing.calls == 1 && bytes_are(&out, "written"));
    polylock_bytes_free(&out);
    polylock_versioned found;
    CHECK_OK(polylock_value_get(side, &found));
    CHECK(found.found && bytes_are(&found.value, "side effect"));
    polylock_bytes_free(&found.value);
    polylock_value_free(side);

    /* An attempt under way: refused at once without a wait (IN_PROGRESS, with a retry-after),
     * waited for with one, and its response (stored as JSON by another language) replayed. */
    CHECK_OK(polylock_idempotency_begin(keys, "p", fp, 9, &began));
    CHECK(began.outcome == POLYLOCK_BEGIN_ACQUIRED);
    CHECK_STATUS(polylock_idempotency_run(keys, "p", fp, 9, 0, do_work, &second, &out), POLYLOCK_IN_PROGRESS);
    polylock_error_details details;
    CHECK_OK(polylock_last_error_details(&details));
    CHECK(details.kind == POLYLOCK_DETAILS_RETRY_AFTER && details.retry_after_ms > 0);
    struct completer completer = {began.ticket, POLYLOCK_INTERNAL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, complete_later, &completer) == 0);
    CHECK_OK(polylock_idempotency_run(keys, "p", fp, 9, 20000, do_work, &second, &out));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_OK(completer.status);
    CHECK(second.calls == 0 && bytes_are(&out, "{\"paid\":true}"));
    polylock_bytes_free(&out);
    polylock_ticket_free(began.ticket);

    polylock_idempotency_free(keys);
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
        {"value_watch", test_value_watch}, {"idempotency_run", test_idempotency_run},
    };
    return run_named_test(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
