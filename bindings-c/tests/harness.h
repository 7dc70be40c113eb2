/* A tiny test harness: CHECK aborts the test with the file, line and polylock's message. */
#ifndef POLYLOCK_TEST_HARNESS_H
#define POLYLOCK_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polylock.h"

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            const char *why_ = polylock_last_error();                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__,        \
                    __LINE__, #cond, why_ ? why_ : "none");                               \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* Expect a status; print both names when it differs. */
#define CHECK_STATUS(call, expected)                                                      \
    do {                                                                                  \
        polylock_status got_ = (call);                                                    \
        if (got_ != (expected)) {                                                         \
            const char *why_ = polylock_last_error();                                     \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: %s)\n",       \
                    __FILE__, __LINE__, #call, polylock_status_name(got_),                \
                    polylock_status_name(expected), why_ ? why_ : "none");                \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, POLYLOCK_OK)

#endif
