/*
 * The C tests of logs and metrics (issue 23). Usage: test_observe <test> <url>:
 *   logs      a callback gets records with the lock name at the level set, nothing when off,
 *             a bad level name is INVALID_ARGUMENT, no password of any URL in any record;
 *   metrics   the client's and the process's counts move with acquire/release, Prometheus
 *             text, counting switched off and on;
 *   env_stderr / env_bad   POLYLOCK_LOG at the first client: records on stderr; a bad name
 *             fails the connect (each a process of its own, since the first client decides).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "helpers.h"

/* ---- a callback that keeps every record (a test may block briefly; a program must not) ---- */

enum { MAX_RECORDS = 4096, RECORD_TEXT = 1024 };

static pthread_mutex_t records_mu = PTHREAD_MUTEX_INITIALIZER;
static char records[MAX_RECORDS][RECORD_TEXT];
static polylock_log_level record_levels[MAX_RECORDS];
static int records_kept;
static const char *callback_tag = "tag";

static void keep_record(void *user_data, const polylock_log_record *record) {
    /* user_data comes back untouched; the strings are valid during the call only. */
    if (user_data != &callback_tag) abort();
    if (record->level == POLYLOCK_LOG_OFF || !record->target || !record->message || !record->line) abort();
    pthread_mutex_lock(&records_mu);
    if (records_kept < MAX_RECORDS) {
        snprintf(records[records_kept], RECORD_TEXT, "%s | %s", record->line, record->json);
        record_levels[records_kept] = record->level;
        records_kept++;
    }
    pthread_mutex_unlock(&records_mu);
}

static void forget_records(void) {
    pthread_mutex_lock(&records_mu);
    records_kept = 0;
    pthread_mutex_unlock(&records_mu);
}

/* How many records contain `text` (and are at most as verbose as `level`, if not OFF). */
static int records_with(const char *text, polylock_log_level most_verbose) {
    int found = 0;
    pthread_mutex_lock(&records_mu);
    for (int i = 0; i < records_kept; i++) {
        if (strstr(records[i], text) && (most_verbose == POLYLOCK_LOG_OFF || record_levels[i] <= most_verbose)) {
            found++;
        }
    }
    pthread_mutex_unlock(&records_mu);
    return found;
}

static int records_total(void) {
    pthread_mutex_lock(&records_mu);
    int n = records_kept;
    pthread_mutex_unlock(&records_mu);
    return n;
}

static void acquire_and_release(polylock_lock *lock) {
    uint64_t token = 0;
    CHECK_OK(polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, &token));
    CHECK_OK(polylock_lock_release(lock));
}

/* The password in `of` (between the user info's ':' and its last '@'), or "" if none. */
static void password_of(const char *of, char *out, size_t size) {
    out[0] = '\0';
    const char *start = strstr(of, "://");
    if (!start) return;
    start += 3;
    const char *at = strrchr(start, '@'); /* the user info runs to the last '@' */
    if (!at) return;
    const char *colon = memchr(start, ':', (size_t)(at - start));
    if (colon && at - colon > 1) snprintf(out, size, "%.*s", (int)(at - colon - 1), colon + 1);
}

static void test_logs(void) {
    /* No callback, no environment: nothing is routed. */
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_OFF);
    /* Bad names: INVALID_ARGUMENT with the names listed, and nothing changes. */
    CHECK_STATUS(polylock_set_log_callback(keep_record, &callback_tag, "loud"), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "loud") && strstr(polylock_last_error(), "trace"));
    CHECK_STATUS(polylock_set_log_level("verbose"), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "debug") != NULL);
    CHECK_STATUS(polylock_set_log_level(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_OFF);

    /* A callback at "off": an operation emits nothing. */
    CHECK_OK(polylock_set_log_callback(keep_record, &callback_tag, "off"));
    polylock_client *client = connect_to(url);
    unique_name("logs");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));
    acquire_and_release(lock);
    CHECK(records_total() == 0);

    /* Debug: the acquisition and the release are records naming the lock, fields as JSON. */
    CHECK_OK(polylock_set_log_level("DEBUG"));
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_DEBUG);
    acquire_and_release(lock);
    char quoted[200];
    snprintf(quoted, sizeof quoted, "\"name\":\"%s\"", name);
    CHECK(records_with(quoted, POLYLOCK_LOG_DEBUG) >= 2);
    CHECK(records_with("op=acquire", POLYLOCK_LOG_DEBUG) >= 1);
    CHECK(records_with("op=release", POLYLOCK_LOG_DEBUG) >= 1);
    CHECK(records_with("\"target\":\"polylock::", POLYLOCK_LOG_OFF) >= 1);

    /* Warning level (NULL level means warn): a plain acquisition logs nothing at warn. */
    CHECK_OK(polylock_set_log_callback(keep_record, &callback_tag, NULL));
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_WARN);
    forget_records();
    acquire_and_release(lock);
    CHECK(records_with(name, POLYLOCK_LOG_OFF) == 0);

    /* No password reaches a record: the URL under test's own, and failed connects with one. */
    CHECK_OK(polylock_set_log_level("trace"));
    char secret[256];
    password_of(url, secret, sizeof secret);
    const char *wrong[] = {
        "redis://polyuser:Sekr3t-Pw-9481@127.0.0.1:1/",
        "postgres://polyuser:Sekr3t-Pw-9481@127.0.0.1:1/db",
        "redis://:Sekr3t-Pw-9481@127.0.0.1:1",
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        polylock_client *none = NULL;
        CHECK(polylock_connect(wrong[i], &none) != POLYLOCK_OK);
        CHECK(strstr(polylock_last_error(), "Sekr3t") == NULL);
    }
    polylock_client *again = connect_to(url);
    polylock_lock *again_lock = NULL;
    CHECK_OK(polylock_client_lock(again, name, &again_lock));
    acquire_and_release(again_lock);
    CHECK(records_with(name, POLYLOCK_LOG_OFF) >= 1);
    CHECK(records_total() > 0);
    CHECK(records_with("Sekr3t", POLYLOCK_LOG_OFF) == 0);
    if (secret[0]) {
        /* As a URL would carry it (the test servers' password is "polylock", in every target). */
        char in_url[300];
        snprintf(in_url, sizeof in_url, ":%s@", secret);
        CHECK(records_with(in_url, POLYLOCK_LOG_OFF) == 0);
    }
    polylock_lock_free(again_lock);
    polylock_client_free(again);

    /* NULL stops the routing: nothing more arrives. */
    CHECK_OK(polylock_set_log_callback(NULL, NULL, NULL));
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_OFF);
    forget_records();
    CHECK_STATUS(polylock_set_log_level("debug"), POLYLOCK_OK); /* a level, but no callback */
    acquire_and_release(lock);
    CHECK(records_total() == 0);
    CHECK_OK(polylock_set_log_level("off"));

    polylock_lock_free(lock);
    polylock_client_free(client);
}

/* ---- metrics ---- */

static void take_text(polylock_status status, polylock_bytes *bytes, char *out, size_t size) {
    CHECK_OK(status);
    CHECK(bytes->data != NULL && bytes->len > 0 && bytes->len < size);
    memcpy(out, bytes->data, bytes->len);
    out[bytes->len] = '\0';
    polylock_bytes_free(bytes);
    CHECK(bytes->data == NULL && bytes->len == 0);
}

static char json[1 << 16];

static bool client_json_has(polylock_client *client, const char *text) {
    polylock_bytes bytes;
    take_text(polylock_client_metrics_json(client, &bytes), &bytes, json, sizeof json);
    return strstr(json, text) != NULL;
}

static void test_metrics(void) {
    CHECK_STATUS(polylock_metrics_json(NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_prometheus_text(NULL), POLYLOCK_INVALID_ARGUMENT);
    polylock_bytes bytes;
    CHECK_STATUS(polylock_client_metrics_json(NULL, &bytes), POLYLOCK_INVALID_ARGUMENT);

    polylock_client *client = connect_to(url);
    CHECK_STATUS(polylock_client_metrics_json(client, NULL), POLYLOCK_INVALID_ARGUMENT);
    unique_name("metrics");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));
    CHECK(client_json_has(client, "\"connects\":1"));
    CHECK(client_json_has(client, "\"acquired\":0"));
    for (int i = 0; i < 3; i++) acquire_and_release(lock);
    CHECK(client_json_has(client, "\"acquired\":3"));
    CHECK(client_json_has(client, "\"releases\":3"));
    CHECK(client_json_has(client, "\"kind\":\"reentrant\""));
    CHECK(client_json_has(client, "\"buckets_le_seconds\":["));

    /* A try that finds the lock taken counts as a timeout. */
    polylock_client *other = connect_to(url);
    polylock_lock *other_lock = NULL;
    CHECK_OK(polylock_client_lock(other, name, &other_lock));
    CHECK_OK(polylock_lock_acquire(lock, 10000, POLYLOCK_LEASE_WATCHDOG, NULL));
    CHECK_STATUS(polylock_lock_acquire(other_lock, 0, POLYLOCK_LEASE_WATCHDOG, NULL), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_lock_release(lock));
    CHECK(client_json_has(other, "\"timeout\":1"));
    CHECK(client_json_has(client, "\"acquired\":4"));

    /* The process's counts sum every client: at least these five acquisitions. */
    take_text(polylock_metrics_json(&bytes), &bytes, json, sizeof json);
    CHECK(strstr(json, "\"series\":[") && strstr(json, "\"backends\":["));
    char prometheus[1 << 16];
    take_text(polylock_prometheus_text(&bytes), &bytes, prometheus, sizeof prometheus);
    CHECK(strstr(prometheus, "# TYPE polylock_acquires_total counter") != NULL);
    CHECK(strstr(prometheus, "outcome=\"acquired\"") != NULL);

    /* Counting off: the counts stay as they were; on again: they move again. */
    polylock_set_metrics_enabled(false);
    acquire_and_release(lock);
    CHECK(client_json_has(client, "\"acquired\":4"));
    polylock_set_metrics_enabled(true);
    acquire_and_release(lock);
    CHECK(client_json_has(client, "\"acquired\":5"));
    CHECK(client_json_has(client, "\"releases\":5"));

    polylock_lock_free(lock);
    polylock_lock_free(other_lock);
    polylock_client_free(client);
    polylock_client_free(other);
}

/* ---- the environment at the first client ---- */

/* stderr goes to a fresh file from start_capture() to end_capture(), which returns what
 * was written there (NUL-terminated, in a static buffer). */
static int capture_fd = -1, saved_stderr = -1;

static void start_capture(void) {
    char path[] = "/tmp/polylock-c-stderr-XXXXXX";
    capture_fd = mkstemp(path);
    CHECK(capture_fd >= 0);
    unlink(path);
    fflush(stderr);
    saved_stderr = dup(2);
    CHECK(saved_stderr >= 0 && dup2(capture_fd, 2) == 2);
}

static const char *end_capture(void) {
    static char seen[1 << 16];
    fflush(stderr);
    CHECK(dup2(saved_stderr, 2) == 2);
    close(saved_stderr);
    ssize_t n = pread(capture_fd, seen, sizeof seen - 1, 0);
    close(capture_fd);
    CHECK(n >= 0);
    seen[n] = '\0';
    return seen;
}

static void test_env_stderr(void) {
    start_capture();
    CHECK(setenv("POLYLOCK_LOG", "debug", 1) == 0);
    polylock_client *client = connect_to(url);
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_DEBUG);
    unique_name("env");
    polylock_lock *lock = NULL;
    CHECK_OK(polylock_client_lock(client, name, &lock));
    acquire_and_release(lock);
    polylock_lock_free(lock);
    polylock_client_free(client);
    CHECK_OK(polylock_set_log_level("off"));
    const char *seen = end_capture();
    char expected[220];
    snprintf(expected, sizeof expected, "name=%s", name);
    CHECK(strstr(seen, "polylock DEBUG") != NULL);
    CHECK(strstr(seen, expected) != NULL);
}

static void test_env_bad(void) {
    /* A misspelt POLYLOCK_LOG is reported once on stderr and leaves logging off; the
     * library works as without it. */
    start_capture();
    CHECK(setenv("POLYLOCK_LOG", "loud", 1) == 0);
    polylock_client *client = connect_to(url);
    polylock_client *second = connect_to(url);
    CHECK(polylock_get_log_level() == POLYLOCK_LOG_OFF);
    polylock_client_free(second);
    polylock_client_free(client);
    const char *seen = end_capture();
    const char *first = strstr(seen, "POLYLOCK_LOG");
    CHECK(first != NULL && strstr(seen, "trace") != NULL);
    CHECK(strstr(first + 1, "POLYLOCK_LOG") == NULL); /* once, not per connect */
}

int main(int argc, char **argv) {
    static const named_test tests[] = {
        {"logs", test_logs},
        {"metrics", test_metrics},
        {"env_stderr", test_env_stderr},
        {"env_bad", test_env_bad},
    };
    return run_named_test(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
