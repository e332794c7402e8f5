/* Checks for the programs that run under mpirun. Criterion forks a process
 * per test, and MPI does not survive a fork, so these are plain programs: each
 * rank counts its checks, names the failures on standard error, and the
 * program ends with "N passed, N failed" (over every rank) and exit status 1
 * when any failed. A failed check never skips a collective call, so that one
 * rank's failure cannot leave the others waiting. */
#ifndef D5_TESTS_MPI_CHECK_H
#define D5_TESTS_MPI_CHECK_H

#include "d5/distributed.h"

#include <stdio.h>

extern int mpi_check_rank, mpi_check_passed, mpi_check_failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            mpi_check_passed++;                                                                    \
        } else {                                                                                   \
            mpi_check_failed++;                                                                    \
            fprintf(stderr, "rank %d: FAIL %s:%d: ", mpi_check_rank, __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        d5_status s_ = (expr);                                                                     \
        CHECK(s_ == D5_OK, "%s: %s: %s", #expr, d5_status_name(s_), d5_last_error());              \
    } while (0)

#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        d5_status s_ = (expr);                                                                     \
        CHECK(s_ == (want), "%s: %s (expected %s): %s", #expr, d5_status_name(s_),                 \
              d5_status_name(want), d5_last_error());                                              \
    } while (0)

/* Sums the counts of every rank over `c`, prints the line on rank 0 and
 * returns the exit status. */
int mpi_check_finish(d5_comm *c, const char *program);

#endif
