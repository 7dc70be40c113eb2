/*
 * The C tests of leader elections and countdown latches. Usage: test_coordination <test>
 * <url>; each test is its own ctest entry, run against every backend CMake was told about
 * (RedLock's refusal of both is checked in test_primitives' redlock test).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

static polylock_leadership *campaign(polylock_election *election, const char *value, int64_t timeout_ms) {
    polylock_leadership *leadership = NULL;
    CHECK_OK(polylock_election_campaign(election, (const uint8_t *)value, strlen(value), timeout_ms, NULL,
                                        &leadership));
    CHECK(leadership != NULL);
    return leadership;
}

/* The next change an observer reports that satisfies `found`/`value` (NULL value: nobody
 * leads), skipping intermediate states (say, nobody between two leaders). */
static uint64_t observe_until(polylock_observer *observer, const char *value) {
    for (int i = 0; i < 20; i++) {
        polylock_leader seen;
        CHECK_OK(polylock_observer_next(observer, 30000, NULL, &seen));
        bool match = value ? seen.found && bytes_are(&seen.value, value) : !seen.found;
        uint64_t term = seen.term;
        polylock_bytes_free(&seen.value);
        if (match) return term;
    }
    fprintf(stderr, "the observer never reported the leader %s\n", value ? value : "(nobody)");
    exit(1);
}

/* ---- election: bad input, the leader's view, proclaim, resign hand-over, leftovers ---- */

struct waiting_candidate {
    polylock_election *election;
    polylock_leadership *won;
    polylock_status status;
};

static void *campaign_in_thread(void *arg) {
    struct waiting_candidate *candidate = arg;
    candidate->status =
        polylock_election_campaign(candidate->election, (const uint8_t *)"b", 1, POLYLOCK_WAIT_FOREVER, NULL, &candidate->won);
    return NULL;
}

static void test_election(void) {
    polylock_client *first = connect_to(url);
    polylock_client *second = connect_to(url);
    unique_name("election");
    polylock_election *a = NULL, *b = NULL;
    polylock_leadership *none = NULL;
    CHECK_STATUS(polylock_client_election(first, NULL, &a), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_election(first, "", &a), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_election(first, name, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(a == NULL);
    CHECK_OK(polylock_client_election(first, name, &a));
    CHECK_OK(polylock_client_election(second, name, &b));
    CHECK_STATUS(polylock_election_campaign(a, NULL, 3, 0, NULL, &none), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_election_campaign(a, (const uint8_t *)"a", 1, 0, NULL, NULL), POLYLOCK_INVALID_ARGUMENT);
    /* POLYLOCK_WAIT_FOREVER is the one negative timeout. */
    CHECK_STATUS(polylock_election_campaign(a, (const uint8_t *)"a", 1, -5, NULL, &none), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "timeout_ms") != NULL);
    CHECK_STATUS(polylock_election_leader(a, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(polylock_leadership_term(NULL) == 0);
    CHECK(!polylock_leadership_is_leader(NULL));
    CHECK(!polylock_leadership_is_lost(NULL));

    /* Nobody leads yet. */
    polylock_leader leader;
    CHECK_OK(polylock_election_leader(b, &leader));
    CHECK(!leader.found);
    CHECK(leader.value.data == NULL && leader.term == 0);
    polylock_observer *observer = NULL;
    CHECK_OK(polylock_election_observe(b, &observer));
    observe_until(observer, NULL);

    polylock_leadership *lead_a = campaign(a, "a", 10000);
    uint64_t term_a = polylock_leadership_term(lead_a);
    CHECK(term_a > 0);
    CHECK(polylock_leadership_is_leader(lead_a));
    CHECK(!polylock_leadership_is_lost(lead_a));
    CHECK(!polylock_leadership_is_suspended(lead_a));
    polylock_bytes own;
    CHECK_OK(polylock_leadership_value(lead_a, &own));
    CHECK(bytes_are(&own, "a"));
    polylock_bytes_free(&own);
    CHECK(observe_until(observer, "a") == term_a);
    CHECK_OK(polylock_election_leader(b, &leader));
    CHECK(leader.found && bytes_are(&leader.value, "a") && leader.term == term_a);
    polylock_bytes_free(&leader.value);

    /* Others do not lead while a does: a try, a timeout, a cancel; none stays a candidate. */
    CHECK_STATUS(polylock_election_campaign(b, (const uint8_t *)"late", 4, 0, NULL, &none), POLYLOCK_TIMEOUT);
    CHECK_STATUS(polylock_election_campaign(b, (const uint8_t *)"late", 4, 200, NULL, &none), POLYLOCK_TIMEOUT);
    polylock_cancel *cancel = NULL;
    CHECK_OK(polylock_cancel_new(&cancel));
    CHECK_OK(polylock_cancel_fire(cancel));
    CHECK_STATUS(polylock_election_campaign(b, (const uint8_t *)"late", 4, POLYLOCK_WAIT_FOREVER, cancel, &none), POLYLOCK_CANCELLED);
    CHECK(none == NULL);
    /* The leader's own waits: not lost within 50 ms, and a fired cancel ends the wait. */
    bool lost = true;
    CHECK_STATUS(polylock_leadership_wait_lost(lead_a, 50, NULL, &lost), POLYLOCK_TIMEOUT);
    CHECK_STATUS(polylock_leadership_wait_lost(lead_a, POLYLOCK_WAIT_FOREVER, cancel, &lost), POLYLOCK_CANCELLED);
    polylock_cancel_free(cancel);

    /* proclaim: a new value, the same term, seen by leader() and the observer. */
    CHECK_OK(polylock_leadership_proclaim(lead_a, (const uint8_t *)"a2", 2));
    CHECK(observe_until(observer, "a2") == term_a);
    CHECK_OK(polylock_election_leader(b, &leader));
    CHECK(leader.found && bytes_are(&leader.value, "a2") && leader.term == term_a);
    polylock_bytes_free(&leader.value);

    /* A waiting candidate leads once a resigns, with a greater term; a's wait says not lost. */
    struct waiting_candidate candidate = {b, NULL, POLYLOCK_INTERNAL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, campaign_in_thread, &candidate) == 0);
    sleep_ms(200);
    CHECK_OK(polylock_leadership_resign(lead_a));
    CHECK_OK(polylock_leadership_resign(lead_a)); /* twice is harmless */
    CHECK(!polylock_leadership_is_leader(lead_a));
    CHECK_OK(polylock_leadership_wait_lost(lead_a, POLYLOCK_WAIT_FOREVER, NULL, &lost));
    CHECK(!lost);
    CHECK_STATUS(polylock_leadership_proclaim(lead_a, (const uint8_t *)"x", 1), POLYLOCK_NOT_OWNER);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_STATUS(candidate.status, POLYLOCK_OK);
    uint64_t term_b = polylock_leadership_term(candidate.won);
    CHECK(term_b > term_a);
    CHECK(polylock_leadership_term(lead_a) == term_a); /* readable after the resign */
    CHECK(observe_until(observer, "b") == term_b);

    /* b resigns: the candidates that timed out or were cancelled left nothing behind, so
     * nobody leads, and a new campaign wins at once with a greater term. */
    CHECK_OK(polylock_leadership_resign(candidate.won));
    sleep_ms(300);
    CHECK_OK(polylock_election_leader(a, &leader));
    CHECK(!leader.found);
    polylock_leadership *lead_c = campaign(a, "c", 10000);
    CHECK(polylock_leadership_term(lead_c) > term_b);
    CHECK(observe_until(observer, "c") == polylock_leadership_term(lead_c));

    /* An observer's wait with nothing new (c leads on) times out, and a fired cancel ends it. */
    polylock_leader seen;
    CHECK_STATUS(polylock_observer_next(observer, 0, NULL, &seen), POLYLOCK_TIMEOUT);
    CHECK_OK(polylock_cancel_new(&cancel));
    CHECK_OK(polylock_cancel_fire(cancel));
    CHECK_STATUS(polylock_observer_next(observer, POLYLOCK_WAIT_FOREVER, cancel, &seen), POLYLOCK_CANCELLED);
    polylock_cancel_free(cancel);

    /* A leader whose client closes has lost: wait_lost says so, is_leader is false. */
    CHECK_OK(polylock_client_close(first));
    CHECK_OK(polylock_leadership_wait_lost(lead_c, 30000, NULL, &lost));
    CHECK(lost);
    CHECK(polylock_leadership_is_lost(lead_c));
    CHECK(!polylock_leadership_is_leader(lead_c));
    CHECK_STATUS(polylock_leadership_proclaim(lead_c, (const uint8_t *)"y", 1), POLYLOCK_LOST);
    /* And the other client's observer sees that nobody leads, soon: on ZooKeeper too, whose
     * closed session takes its leader node with it at once (not at the session timeout). */
    observe_until(observer, NULL);

    polylock_leadership_free(lead_a);
    polylock_leadership_free(candidate.won);
    polylock_leadership_free(lead_c);
    polylock_leadership_free(NULL);
    polylock_observer_free(observer);
    polylock_observer_free(NULL);
    polylock_election_free(a);
    polylock_election_free(b);
    polylock_election_free(NULL);
    polylock_client_free(first);
    polylock_client_free(second);
}

/* ---- election: one leader of several, terms growing from leader to leader ---- */

enum { CANDIDATES = 4, TERMS_EACH = 2 };

struct ledger {
    polylock_election *elections[2];
    atomic_int inside;
    atomic_int failures;
    atomic_int next;
    pthread_mutex_t mu;
    uint64_t last_term;
};

static void *contend(void *arg) {
    struct ledger *ledger = arg;
    int me = atomic_fetch_add(&ledger->next, 1);
    char value[16];
    snprintf(value, sizeof value, "n%d", me);
    for (int round = 0; round < TERMS_EACH; round++) {
        polylock_leadership *leadership = NULL;
        /* A generous limit: any failure to lead here is a failure of the test. */
        if (polylock_election_campaign(ledger->elections[me % 2], (const uint8_t *)value, strlen(value), 60000,
                                       NULL, &leadership) != POLYLOCK_OK) {
            fprintf(stderr, "campaign failed: %s\n", polylock_last_error());
            atomic_fetch_add(&ledger->failures, 1);
            return NULL;
        }
        if (atomic_fetch_add(&ledger->inside, 1) != 0) {
            fprintf(stderr, "two leaders at once\n");
            atomic_fetch_add(&ledger->failures, 1);
        }
        pthread_mutex_lock(&ledger->mu);
        uint64_t term = polylock_leadership_term(leadership);
        if (term <= ledger->last_term) {
            fprintf(stderr, "term %llu after term %llu\n", (unsigned long long)term,
                    (unsigned long long)ledger->last_term);
            atomic_fetch_add(&ledger->failures, 1);
        }
        ledger->last_term = term;
        pthread_mutex_unlock(&ledger->mu);
        sleep_ms(20);
        atomic_fetch_sub(&ledger->inside, 1);
        if (polylock_leadership_resign(leadership) != POLYLOCK_OK) {
            fprintf(stderr, "resign failed: %s\n", polylock_last_error());
            atomic_fetch_add(&ledger->failures, 1);
        }
        polylock_leadership_free(leadership);
    }
    return NULL;
}

static void test_election_contention(void) {
    polylock_client *clients[2] = {connect_to(url), connect_to(url)};
    unique_name("contention");
    struct ledger ledger;
    memset(&ledger, 0, sizeof ledger);
    atomic_init(&ledger.inside, 0);
    atomic_init(&ledger.failures, 0);
    atomic_init(&ledger.next, 0);
    pthread_mutex_init(&ledger.mu, NULL);
    for (int i = 0; i < 2; i++) CHECK_OK(polylock_client_election(clients[i], name, &ledger.elections[i]));
    pthread_t threads[CANDIDATES];
    for (int i = 0; i < CANDIDATES; i++) CHECK(pthread_create(&threads[i], NULL, contend, &ledger) == 0);
    for (int i = 0; i < CANDIDATES; i++) CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(atomic_load(&ledger.failures) == 0);
    CHECK(ledger.last_term > 0);
    pthread_mutex_destroy(&ledger.mu);
    for (int i = 0; i < 2; i++) {
        polylock_election_free(ledger.elections[i]);
        polylock_client_free(clients[i]);
    }
}

/* ---- countdown latch ---- */

struct latch_waiter {
    polylock_latch *latch;
    bool reached;
    polylock_status status;
};

static void *await_in_thread(void *arg) {
    struct latch_waiter *waiter = arg;
    waiter->status = polylock_latch_await(waiter->latch, 60000, NULL, &waiter->reached);
    return NULL;
}

static void test_latch(void) {
    polylock_client *first = connect_to(url);
    polylock_client *second = connect_to(url);
    unique_name("latch");
    polylock_latch *latch = NULL, *other = NULL;
    CHECK_STATUS(polylock_client_latch(first, NULL, &latch), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_client_latch(first, name, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(latch == NULL);
    CHECK_OK(polylock_client_latch(first, name, &latch));
    CHECK_OK(polylock_client_latch(second, name, &other));
    CHECK_STATUS(polylock_latch_count(latch, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_latch_try_set_count(latch, 0, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK_STATUS(polylock_latch_try_set_count(NULL, 1, NULL), POLYLOCK_INVALID_ARGUMENT);

    /* Never set: open. */
    uint64_t count = 99;
    bool reached = false, set = false;
    CHECK_OK(polylock_latch_count(other, &count));
    CHECK(count == 0);
    CHECK_OK(polylock_latch_await(other, 0, NULL, &reached));
    CHECK(reached);
    CHECK_STATUS(polylock_latch_await(other, -2, NULL, &reached), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "timeout_ms") != NULL);

    CHECK_OK(polylock_latch_try_set_count(latch, 2, &set));
    CHECK(set);
    CHECK_OK(polylock_latch_try_set_count(other, 5, &set));
    CHECK(!set); /* closed already: the count stays */
    CHECK_OK(polylock_latch_count(other, &count));
    CHECK(count == 2);

    /* A wait that runs out is no error: reached is false. A fired cancel ends a wait. */
    CHECK_OK(polylock_latch_await(other, 150, NULL, &reached));
    CHECK(!reached);
    polylock_cancel *cancel = NULL;
    CHECK_OK(polylock_cancel_new(&cancel));
    CHECK_OK(polylock_cancel_fire(cancel));
    CHECK_STATUS(polylock_latch_await(other, POLYLOCK_WAIT_FOREVER, cancel, &reached), POLYLOCK_CANCELLED);
    /* The waiting form ends with POLYLOCK_TIMEOUT instead, after the whole wait. */
    CHECK_STATUS(polylock_latch_await_zero(other, POLYLOCK_WAIT_FOREVER, cancel), POLYLOCK_CANCELLED);
    polylock_cancel_free(cancel);
    struct timespec before, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    CHECK_STATUS(polylock_latch_await_zero(other, 150, NULL), POLYLOCK_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &after);
    CHECK((after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000 >= 140);
    CHECK(strstr(polylock_last_error(), name) != NULL);
    CHECK_STATUS(polylock_latch_await_zero(other, 0, NULL), POLYLOCK_TIMEOUT);
    CHECK_STATUS(polylock_latch_await_zero(other, -3, NULL), POLYLOCK_INVALID_ARGUMENT);
    CHECK(strstr(polylock_last_error(), "wait_ms") != NULL);
    CHECK_STATUS(polylock_latch_await_zero(NULL, 0, NULL), POLYLOCK_INVALID_ARGUMENT);

    /* A waiter on the other client is released by the second count-down, not the first. */
    struct latch_waiter waiter = {other, false, POLYLOCK_INTERNAL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, await_in_thread, &waiter) == 0);
    sleep_ms(100);
    CHECK_OK(polylock_latch_count_down(latch));
    CHECK_OK(polylock_latch_count(latch, &count));
    CHECK(count == 1);
    CHECK_OK(polylock_latch_await(latch, 100, NULL, &reached));
    CHECK(!reached);
    CHECK_OK(polylock_latch_count_down(latch));
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_STATUS(waiter.status, POLYLOCK_OK);
    CHECK(waiter.reached);
    CHECK_OK(polylock_latch_await_zero(other, 0, NULL)); /* at zero: OK at once */
    CHECK_OK(polylock_latch_await_zero(latch, POLYLOCK_WAIT_FOREVER, NULL));
    /* Never below zero; open again, so it can be set again. */
    CHECK_OK(polylock_latch_count_down(other));
    CHECK_OK(polylock_latch_count(other, &count));
    CHECK(count == 0);
    CHECK_OK(polylock_latch_try_set_count(other, 1, &set));
    CHECK(set);

    /* Closing the client ends its waits with CONNECTION; later calls fail the same way. */
    CHECK_OK(polylock_client_close(first));
    CHECK_STATUS(polylock_latch_count(latch, &count), POLYLOCK_CONNECTION);
    CHECK_OK(polylock_latch_count_down(other));

    polylock_latch_free(latch);
    polylock_latch_free(other);
    polylock_latch_free(NULL);
    polylock_client_free(first);
    polylock_client_free(second);
}

int main(int argc, char **argv) {
    static const named_test tests[] = {
        {"election", test_election},
        {"election_contention", test_election_contention},
        {"latch", test_latch},
    };
    return run_named_test(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
