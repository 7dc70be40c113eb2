/*
 * The C tests of the Idempotency-Key HTTP middleware's rules (issue 38): options, keys,
 * fingerprints, the stored form of a response and the refusals (test `rules`, no backend),
 * and one middleware's flow over the idempotency primitive as a C server would write it
 * (test `flow`, per backend): store, replay, 422, 409, a 5xx abandoned.
 * Usage: test_http_idempotency <test> <url>.
 */
#define _POSIX_C_SOURCE 200809L

#include "helpers.h"

/* The value of header `wanted` in a response (NULL: none); a name may repeat, the first wins. */
static const char *header_of(const polylock_http_response *response, const char *wanted) {
    for (size_t i = 0; i < response->headers_count; i++) {
        if (strcmp(response->headers[i].name, wanted) == 0) return response->headers[i].value;
    }
    return NULL;
}

static bool body_contains(const polylock_http_response *response, const char *text) {
    size_t len = strlen(text);
    for (size_t i = 0; i + len <= response->body.len; i++) {
        if (memcmp(response->body.data + i, text, len) == 0) return true;
    }
    return false;
}

static void test_rules(void) {
    /* Options: defaults, custom ones, and every bad one refused with the option's name. */
    polylock_http_options *options = NULL;
    CHECK_OK(polylock_http_options_new(NULL, NULL, NULL, 0, &options));
    CHECK(strcmp(polylock_http_options_header(options), "Idempotency-Key") == 0);
    CHECK(polylock_http_options_lifetime_ms(options) == 24ull * 3600 * 1000);
    CHECK(polylock_http_options_applies_to(options, "POST") && polylock_http_options_applies_to(options, "patch"));
    CHECK(!polylock_http_options_applies_to(options, "GET") && !polylock_http_options_applies_to(options, NULL));
    polylock_http_options_free(options);
    const char *methods[] = {"put", "DELETE"};
    int64_t minute = 60000;
    CHECK_OK(polylock_http_options_new("X-Request-Key", &minute, methods, 2, &options));
    CHECK(strcmp(polylock_http_options_header(options), "X-Request-Key") == 0);
    CHECK(polylock_http_options_lifetime_ms(options) == 60000);
    CHECK(polylock_http_options_applies_to(options, "PUT") && polylock_http_options_applies_to(options, "delete"));
    CHECK(!polylock_http_options_applies_to(options, "POST"));
    polylock_http_options_free(options);
    polylock_http_options_free(NULL);
    CHECK(polylock_http_options_header(NULL) == NULL && polylock_http_options_lifetime_ms(NULL) == 0);

    polylock_http_options *untouched = NULL;
    int64_t zero = 0, negative = -5;
    const char *bad_methods[] = {"GE T"};
    CHECK_STATUS(polylock_http_options_new("Bad Header", NULL, NULL, 0, &untouched), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "'header'") != NULL);
    CHECK_STATUS(polylock_http_options_new(NULL, &zero, NULL, 0, &untouched), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "'lifetime'") != NULL);
    CHECK_STATUS(polylock_http_options_new(NULL, &negative, NULL, 0, &untouched), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_http_options_new(NULL, NULL, methods, 0, &untouched), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "'methods'") != NULL);
    CHECK_STATUS(polylock_http_options_new(NULL, NULL, bad_methods, 1, &untouched), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_http_options_new(NULL, NULL, NULL, 1, &untouched), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_http_options_new(NULL, NULL, NULL, 0, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(untouched == NULL);

    /* Keys: trimmed, unquoted; what is no key says why. */
    polylock_bytes key = {NULL, 0}, problem = {NULL, 0};
    const char *quoted = "  \"8e03978e-40d5\" ";
    CHECK_OK(polylock_http_key_of((const uint8_t *)quoted, strlen(quoted), &key));
    CHECK(bytes_are(&key, "8e03978e-40d5"));
    CHECK_OK(polylock_http_key_problem(key.data, key.len, &problem));
    CHECK(problem.data == NULL && problem.len == 0);
    polylock_bytes_free(&key);
    CHECK_OK(polylock_http_key_problem((const uint8_t *)"has space", 9, &problem));
    CHECK(problem.len > 0);
    polylock_bytes_free(&problem);
    CHECK_OK(polylock_http_key_problem(NULL, 0, &problem));
    CHECK(bytes_are(&problem, "the idempotency key is empty"));
    polylock_bytes_free(&problem);
    const uint8_t not_utf8[] = {'k', 0xff};
    CHECK_OK(polylock_http_key_problem(not_utf8, 2, &problem));
    CHECK(problem.len > 0);
    polylock_bytes_free(&problem);
    CHECK_STATUS(polylock_http_key_of(NULL, 3, &key), POLYLOCK_INVALID_ARGUMENT);

    /* Fingerprints: method case ignored; path, query and body each count. */
    polylock_bytes a = {NULL, 0}, b = {NULL, 0};
    CHECK_OK(polylock_http_fingerprint("post", "/orders?x=1", (const uint8_t *)"{}", 2, &a));
    CHECK_OK(polylock_http_fingerprint("POST", "/orders?x=1", (const uint8_t *)"{}", 2, &b));
    CHECK(a.len == 7 + 32 && memcmp(a.data, "sha256:", 7) == 0);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    polylock_bytes_free(&b);
    CHECK_OK(polylock_http_fingerprint("POST", "/orders", (const uint8_t *)"{}", 2, &b));
    CHECK(memcmp(a.data, b.data, a.len) != 0);
    polylock_bytes_free(&b);
    CHECK_OK(polylock_http_fingerprint("POST", "/orders?x=1", NULL, 0, &b));
    CHECK(memcmp(a.data, b.data, a.len) != 0);
    polylock_bytes_free(&a);
    polylock_bytes_free(&b);
    CHECK_STATUS(polylock_http_fingerprint(NULL, "/", NULL, 0, &a), POLYLOCK_INVALID_ARGUMENT);

    CHECK(polylock_http_stores(201) && polylock_http_stores(422) && !polylock_http_stores(500));
    CHECK(!polylock_http_stores(599));
    CHECK(strcmp(polylock_http_replayed_header(), "Idempotent-Replayed") == 0);

    /* A response stored without per-connection headers and read back. */
    polylock_http_header headers[] = {
        {"Content-Type", "application/json"},
        {"Content-Length", "11"},
        {"Set-Cookie", "a=1"},
        {"set-cookie", "b=2"},
        {"Transfer-Encoding", "chunked"},
    };
    polylock_bytes stored = {NULL, 0};
    CHECK_OK(polylock_http_encode_response(201, headers, 5, (const uint8_t *)"{\"id\": 42}\n", 11, &stored));
    CHECK(stored.len > 0 && stored.data[0] == 'j');
    polylock_http_response response;
    CHECK_OK(polylock_http_decode_response(stored.data, stored.len, &response));
    CHECK(response.status == 201 && response.headers_count == 3);
    CHECK(strcmp(response.headers[0].name, "content-type") == 0);
    CHECK(strcmp(response.headers[1].value, "a=1") == 0 && strcmp(response.headers[2].value, "b=2") == 0);
    CHECK(bytes_are(&response.body, "{\"id\": 42}\n"));
    polylock_http_response_free(&response);
    CHECK(response.headers == NULL && response.headers_count == 0 && response.body.data == NULL);
    polylock_http_response_free(&response); /* twice is harmless */
    polylock_http_response_free(NULL);
    polylock_bytes_free(&stored);
    /* No headers and no body. */
    CHECK_OK(polylock_http_encode_response(204, NULL, 0, NULL, 0, &stored));
    CHECK_OK(polylock_http_decode_response(stored.data, stored.len, &response));
    CHECK(response.status == 204 && response.headers == NULL && response.body.len == 0);
    polylock_http_response_free(&response);
    polylock_bytes_free(&stored);
    CHECK_STATUS(polylock_http_encode_response(99, NULL, 0, NULL, 0, &stored), POLYLOCK_INVALID_ARGUMENT);
    polylock_http_header null_value[] = {{"x-a", NULL}};
    CHECK_STATUS(polylock_http_encode_response(200, null_value, 1, NULL, 0, &stored), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_http_encode_response(200, NULL, 1, NULL, 0, &stored), POLYLOCK_INVALID_ARGUMENT);
    CHECK(stored.data == NULL);
    /* What a run helper stored is no HTTP response. */
    CHECK_STATUS(polylock_http_decode_response((const uint8_t *)"bpaid", 5, &response), POLYLOCK_INVALID_ARGUMENT);

    /* Refusals: problem documents; 409 carries Retry-After in whole seconds, at least 1. */
    CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_IN_PROGRESS, (const uint8_t *)"k1", 2, 1500,
                                            &response));
    CHECK(response.status == 409);
    CHECK(strcmp(header_of(&response, "content-type"), "application/problem+json") == 0);
    CHECK(strcmp(header_of(&response, "retry-after"), "2") == 0);
    polylock_http_response_free(&response);
    CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_IN_PROGRESS, (const uint8_t *)"k1", 2, 0, &response));
    CHECK(strcmp(header_of(&response, "retry-after"), "1") == 0);
    polylock_http_response_free(&response);
    CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_MISMATCH, (const uint8_t *)"k1", 2, 0, &response));
    CHECK(response.status == 422 && header_of(&response, "retry-after") == NULL && body_contains(&response, "k1"));
    polylock_http_response_free(&response);
    CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_BAD_KEY, (const uint8_t *)"a b", 3, 0, &response));
    CHECK(response.status == 400 && body_contains(&response, "\"status\":400"));
    polylock_http_response_free(&response);
    CHECK_STATUS(polylock_http_refusal_response(7, NULL, 0, 0, &response), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_MISMATCH, NULL, 0, 0, NULL),
                 POLYLOCK_INVALID_ARGUMENT);
}

/* One request through a middleware written in C: what a server does with the rules and
 * the primitive. Returns the response to send (owned by the caller). */
typedef struct {
    polylock_idempotency *keys;
    const polylock_http_options *options;
} middleware;

static polylock_http_response handle(const middleware *m, const char *method, const char *path,
                                     const char *key_header, const char *body, uint16_t status_to_answer,
                                     bool *ran) {
    *ran = false;
    polylock_http_response out = {0, NULL, 0, {NULL, 0}};
    CHECK(polylock_http_options_applies_to(m->options, method) && key_header != NULL);
    polylock_bytes key = {NULL, 0}, problem = {NULL, 0}, fingerprint = {NULL, 0};
    CHECK_OK(polylock_http_key_of((const uint8_t *)key_header, strlen(key_header), &key));
    CHECK_OK(polylock_http_key_problem(key.data, key.len, &problem));
    if (problem.len > 0) {
        CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_BAD_KEY, key.data, key.len, 0, &out));
        polylock_bytes_free(&problem);
        polylock_bytes_free(&key);
        return out;
    }
    char key_text[256];
    CHECK(key.len < sizeof key_text);
    memcpy(key_text, key.data, key.len);
    key_text[key.len] = '\0';
    CHECK_OK(polylock_http_fingerprint(method, path, (const uint8_t *)body, strlen(body), &fingerprint));
    polylock_begin began;
    CHECK_OK(polylock_idempotency_begin(m->keys, key_text, fingerprint.data, fingerprint.len, &began));
    polylock_bytes_free(&fingerprint);
    switch (began.outcome) {
    case POLYLOCK_BEGIN_REPLAY:
        CHECK_OK(polylock_http_decode_response(began.response.data, began.response.len, &out));
        polylock_bytes_free(&began.response);
        break;
    case POLYLOCK_BEGIN_IN_PROGRESS:
        CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_IN_PROGRESS, key.data, key.len,
                                                began.retry_after_ms, &out));
        break;
    case POLYLOCK_BEGIN_MISMATCH:
        CHECK_OK(polylock_http_refusal_response(POLYLOCK_HTTP_REFUSAL_MISMATCH, key.data, key.len, 0, &out));
        break;
    case POLYLOCK_BEGIN_ACQUIRED: {
        *ran = true;
        char answer[300];
        snprintf(answer, sizeof answer, "{\"ran\":\"%s\"}", key_text);
        polylock_http_header headers[] = {{"Content-Type", "application/json"}, {"Date", "Mon, 01 Jan 2026"}};
        polylock_bytes stored = {NULL, 0};
        if (status_to_answer == 0) {
            /* The handler "crashed": freed unfinished, the attempt stays in progress. */
            polylock_ticket_free(began.ticket);
            break;
        }
        if (polylock_http_stores(status_to_answer)) {
            CHECK_OK(polylock_http_encode_response(status_to_answer, headers, 2, (const uint8_t *)answer,
                                                   strlen(answer), &stored));
            CHECK_OK(polylock_ticket_complete(began.ticket, stored.data, stored.len));
            polylock_bytes_free(&stored);
        } else {
            CHECK_OK(polylock_ticket_abandon(began.ticket));
        }
        polylock_ticket_free(began.ticket);
        out.status = status_to_answer;
        break;
    }
    }
    polylock_bytes_free(&key);
    return out;
}

static void test_flow(void) {
    polylock_client *client = connect_to(url);
    unique_name("http");
    polylock_http_options *options = NULL;
    CHECK_OK(polylock_http_options_new(NULL, NULL, NULL, 0, &options));
    polylock_idempotency *keys = NULL;
    /* The namespace is the test's name; the retention is the options' lifetime. */
    CHECK_OK(polylock_client_idempotency(client, name, polylock_http_options_lifetime_ms(options), 0, &keys));
    middleware m = {keys, options};
    bool ran = false;

    polylock_http_response first = handle(&m, "POST", "/orders", "\"key-1\"", "{\"n\":1}", 201, &ran);
    CHECK(ran && first.status == 201);
    polylock_http_response_free(&first);
    /* The repeat replays the stored response, without the Date the first one carried. */
    polylock_http_response again = handle(&m, "post", "/orders", "key-1", "{\"n\":1}", 201, &ran);
    CHECK(!ran && again.status == 201);
    CHECK(strcmp(header_of(&again, "content-type"), "application/json") == 0 && header_of(&again, "date") == NULL);
    CHECK(bytes_are(&again.body, "{\"ran\":\"key-1\"}"));
    polylock_http_response_free(&again);
    /* Another body under the same key: 422. */
    polylock_http_response other = handle(&m, "POST", "/orders", "key-1", "{\"n\":2}", 201, &ran);
    CHECK(!ran && other.status == 422);
    polylock_http_response_free(&other);
    /* A malformed key: 400, nothing run. */
    polylock_http_response bad = handle(&m, "POST", "/orders", "two words", "{}", 201, &ran);
    CHECK(!ran && bad.status == 400);
    polylock_http_response_free(&bad);
    /* A 5xx is not stored: the retry runs again. */
    polylock_http_response failed = handle(&m, "POST", "/orders", "key-2", "{}", 503, &ran);
    CHECK(ran && failed.status == 503);
    polylock_http_response retried = handle(&m, "POST", "/orders", "key-2", "{}", 200, &ran);
    CHECK(ran && retried.status == 200);
    polylock_http_response_free(&failed);
    polylock_http_response_free(&retried);
    /* An attempt under way (its handler never finished): 409 with Retry-After. */
    polylock_http_response crashed = handle(&m, "POST", "/orders", "key-3", "{}", 0, &ran);
    CHECK(ran);
    polylock_http_response busy = handle(&m, "POST", "/orders", "key-3", "{}", 200, &ran);
    CHECK(!ran && busy.status == 409 && header_of(&busy, "retry-after") != NULL);
    polylock_http_response_free(&busy);
    polylock_http_response_free(&crashed);

    polylock_idempotency_free(keys);
    polylock_http_options_free(options);
    polylock_client_free(client);
}

int main(int argc, char **argv) {
    static const named_test tests[] = {{"rules", test_rules}, {"flow", test_flow}};
    return run_named_test(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
