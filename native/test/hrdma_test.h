/* A tiny TAP-like harness for the C tests. */
#ifndef HRDMA_TEST_H
#define HRDMA_TEST_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond); \
            exit(1); \
        } \
    } while (0)

#define CHECK_EQ(a, b) \
    do { \
        long long _a = (long long)(a), _b = (long long)(b); \
        if (_a != _b) { \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", \
                    __FILE__, __LINE__, #a, #b, _a, _b); \
            exit(1); \
        } \
    } while (0)

static int hrdma_test_n;

#define OK(name) printf("ok %d - %s\n", ++hrdma_test_n, (name)), fflush(stdout)

#endif
