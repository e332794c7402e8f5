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

/* A communicator on `backend` with d5_comm_params.timeout_s = timeout_s (0:
 * none) and the other parameters at their defaults; NULL (and a failed check)
 * when it cannot be created. Free with d5_comm_free (collective). */
d5_comm *mpi_check_open(const char *backend, double timeout_s);
/* The program's first communicator (the default backend, timeout_s as in
 * mpi_check_open), its rank in mpi_check_rank; NULL, with the reason on
 * stderr under the program's name, when it cannot be created. */
d5_comm *mpi_check_world(const char *program, double timeout_s);

/* Element i of rank r's allreduce input: a small integer, so that the sum
 * over the ranks is exact in float32. */
double mpi_check_pattern(size_t i, int r);
/* Fills buf (n elements of t: D5_F32 or D5_F64) with rank `rank`'s pattern. */
void mpi_check_fill(void *buf, size_t n, d5_dtype t, int rank);
/* How many of the n elements of buf differ from the sum of the patterns of
 * ranks 0 .. size - 1. */
size_t mpi_check_wrong(const void *buf, size_t n, d5_dtype t, int size);

/* Sums the counts of every rank over `c`, prints the line on rank 0 and
 * returns the exit status. */
int mpi_check_finish(d5_comm *c, const char *program);

#endif
