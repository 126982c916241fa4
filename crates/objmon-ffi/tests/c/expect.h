/* The C tests' one assertion: EXPECT(cond) reports a failed condition with the protocol under
 * test and counts it, so that a test program checks every protocol before it exits non-zero.
 * Each test program includes it once (the counters are the program's own). */
#ifndef OBJMON_TEST_EXPECT_H
#define OBJMON_TEST_EXPECT_H

#include <stdio.h>

static int failures;
static const char *protocol;

#define EXPECT(cond)                                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s: %s:%d: expected %s\n", protocol, __FILE__, __LINE__, #cond); \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                             \
        }                                                                                   \
    } while (0)

#endif
