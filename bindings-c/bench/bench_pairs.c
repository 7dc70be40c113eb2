/*
 * C side of the binding's benchmark: lock+unlock pairs per second through libpolylock.
 *
 *   bench_pairs URL THREADS SECONDS LEASE_MS
 *
 * THREADS pthreads share one client; thread i loops acquire(wait forever, LEASE_MS) +
 * release on its own name "bench:c:<pid>:<i>" until a common deadline (after a short
 * warm-up). LEASE_MS 0 means the watchdog. Prints one line:
 *   pairs_per_sec=<float> pairs=<n> threads=<t>
 * bench/rust_pairs.rs runs the same workload on the core crate; bench.sh prints both.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "polylock.h"

#define WARMUP_SECONDS 0.3

static polylock_client *client;
static int64_t lease_ms;
static double seconds;
static atomic_int failed;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct worker {
    pthread_t thread;
    int index;
    pthread_barrier_t *start;
    uint64_t pairs;
    double started, finished;
};

static int pair(polylock_lock *lock) {
    polylock_status status = polylock_lock_acquire(lock, POLYLOCK_WAIT_FOREVER, lease_ms, NULL);
    if (status == POLYLOCK_OK) status = polylock_lock_release(lock);
    if (status != POLYLOCK_OK) {
        fprintf(stderr, "bench_pairs: %s: %s\n", polylock_status_name(status), polylock_last_error());
        atomic_store(&failed, 1);
        return 0;
    }
    return 1;
}

static void *run(void *arg) {
    struct worker *w = arg;
    char name[64];
    snprintf(name, sizeof name, "bench:c:%ld:%d", (long)getpid(), w->index);
    polylock_lock *lock = NULL;
    if (polylock_client_lock(client, name, &lock) != POLYLOCK_OK) {
        fprintf(stderr, "bench_pairs: lock: %s\n", polylock_last_error());
        atomic_store(&failed, 1);
    }
    pthread_barrier_wait(w->start);
    double warm_until = now() + WARMUP_SECONDS;
    while (lock && !atomic_load(&failed) && now() < warm_until) pair(lock);
    pthread_barrier_wait(w->start);
    w->started = now();
    double deadline = w->started + seconds;
    while (lock && !atomic_load(&failed) && now() < deadline) {
        if (pair(lock)) w->pairs++;
    }
    w->finished = now();
    polylock_lock_free(lock);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s URL THREADS SECONDS LEASE_MS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[2]);
    seconds = atof(argv[3]);
    lease_ms = strtoll(argv[4], NULL, 10);
    if (lease_ms == 0) lease_ms = POLYLOCK_LEASE_WATCHDOG; /* the command line's 0 */
    if (threads < 1 || threads > 256 || seconds <= 0 || (lease_ms < 0 && lease_ms != POLYLOCK_LEASE_WATCHDOG)) {
        fprintf(stderr, "bench_pairs: bad THREADS, SECONDS or LEASE_MS\n");
        return 2;
    }
    if (polylock_connect(argv[1], &client) != POLYLOCK_OK) {
        fprintf(stderr, "bench_pairs: connect: %s\n", polylock_last_error());
        return 1;
    }
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    struct worker *workers = calloc((size_t)threads, sizeof *workers);
    if (!workers) return 1;
    for (int i = 0; i < threads; i++) {
        workers[i].index = i;
        workers[i].start = &start;
        pthread_create(&workers[i].thread, NULL, run, &workers[i]);
    }
    uint64_t pairs = 0;
    double first = 0, last = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(workers[i].thread, NULL);
        pairs += workers[i].pairs;
        if (i == 0 || workers[i].started < first) first = workers[i].started;
        if (i == 0 || workers[i].finished > last) last = workers[i].finished;
    }
    pthread_barrier_destroy(&start);
    free(workers);
    polylock_client_free(client);
    if (atomic_load(&failed)) return 1;
    /* All pairs over the group's wall time, as the core's bench counts groups. */
    printf("pairs_per_sec=%.1f pairs=%" PRIu64 " threads=%d\n", (double)pairs / (last - first), pairs, threads);
    return 0;
}
