/*
 * What the C test programs share beyond the CHECK harness: the URL under test, a unique
 * name per test, connecting, sleeping, comparing bytes, and private redis-servers for the
 * RedLock tests. Each test program is one translation unit, so these are static; `inline`
 * keeps the compiler quiet about the ones a program does not use.
 */
#ifndef POLYLOCK_TEST_HELPERS_H
#define POLYLOCK_TEST_HELPERS_H

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

extern char **environ;

/* The backend under test (argv[2]) and the current test's name. */
static const char *url;
static char name[160];

/* A name unique per run, so that tests on a shared server never see each other's. */
static inline void unique_name(const char *test) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(name, sizeof name, "c-test:%s:%ld:%ld", test, (long)getpid(), (long)now.tv_nsec);
}

static inline polylock_client *connect_to(const char *where) {
    polylock_client *client = NULL;
    CHECK_OK(polylock_connect(where, &client));
    CHECK(client != NULL);
    return client;
}

static inline void sleep_ms(long ms) {
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

static inline bool bytes_are(const polylock_bytes *bytes, const char *text) {
    size_t len = strlen(text);
    return bytes->len == len && (len == 0 || memcmp(bytes->data, text, len) == 0);
}

/* ---- private redis-servers (RedLock), stopped on every way out ---- */

enum { MAX_PRIVATE_SERVERS = 8 };

static pid_t private_servers[MAX_PRIVATE_SERVERS];
static int private_servers_started;
static bool private_servers_stop_at_exit;

/* Stop the private servers; registered with atexit, so failed CHECKs (exit) stop them too. */
static inline void stop_private_servers(void) {
    for (int i = 0; i < private_servers_started; i++) {
        kill(private_servers[i], SIGTERM);
        waitpid(private_servers[i], NULL, 0);
    }
    private_servers_started = 0;
}

static inline void start_redis(int port) {
    CHECK(private_servers_started < MAX_PRIVATE_SERVERS);
    if (!private_servers_stop_at_exit) private_servers_stop_at_exit = atexit(stop_private_servers) == 0;
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    char *argv[] = {"redis-server", "--port", port_text, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--loglevel", "warning", NULL};
    posix_spawn_file_actions_t quiet;
    CHECK(posix_spawn_file_actions_init(&quiet) == 0);
    CHECK(posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0) == 0);
    pid_t pid = 0;
    CHECK(posix_spawnp(&pid, "redis-server", &quiet, NULL, argv, environ) == 0);
    posix_spawn_file_actions_destroy(&quiet);
    private_servers[private_servers_started++] = pid;
}

/* One test of a program: its name on the command line and its function. */
typedef struct {
    const char *name;
    void (*run)(void);
} named_test;

/* `main` of every test program: `<program> <test> <url>` runs the named test against url,
 * printing "<test> on <url>: ok"; a wrong invocation lists the tests and exits 2. */
static inline int run_named_test(int argc, char **argv, const named_test *tests, size_t count) {
    const named_test *chosen = NULL;
    for (size_t i = 0; argc == 3 && i < count; i++) {
        if (strcmp(tests[i].name, argv[1]) == 0) {
            chosen = &tests[i];
        }
    }
    if (chosen == NULL) {
        fprintf(stderr, "usage: %s TEST URL, TEST one of:", argv[0]);
        for (size_t i = 0; i < count; i++) {
            fprintf(stderr, " %s", tests[i].name);
        }
        fprintf(stderr, "\n");
        return 2;
    }
    url = argv[2];
    /* Under valgrind (run-tests.sh sets POLYLOCK_TEST_SLOW_TIMEOUT, e.g. "30s") a TLS
     * handshake runs 20 to 50 times slower: give the backends that read `timeout` (Redis,
     * etcd) that long to answer, as a user would on a slow link. The printed URL stays the
     * one given. */
    static char slow_url[4096];
    const char *slow = getenv("POLYLOCK_TEST_SLOW_TIMEOUT");
    if (slow != NULL && *slow != '\0' && (strncmp(url, "redis", 5) == 0 || strncmp(url, "etcd", 4) == 0) &&
        strstr(url, "timeout=") == NULL) {
        int n = snprintf(slow_url, sizeof slow_url, "%s%ctimeout=%s", url, strchr(url, '?') ? '&' : '?', slow);
        CHECK(n > 0 && (size_t)n < sizeof slow_url);
    }
    const char *given = url;
    if (slow_url[0] != '\0') {
        url = slow_url;
    }
    chosen->run();
    url = given;
    printf("%s on %s: ok\n", argv[1], url);
    return 0;
}

#endif
