/* The tally of the MPI test programs and the helpers they share (mpi_check.h). */
#include "mpi_check.h"

int mpi_check_rank, mpi_check_passed, mpi_check_failed;

int mpi_check_finish(d5_comm *c, const char *program)
{
    double counts[2] = {mpi_check_passed, mpi_check_failed};
    d5_status s = d5_comm_agree(c, counts, 2, D5_COMM_SUM);
    if (s != D5_OK) {
        fprintf(stderr, "rank %d: %s: tally: %s\n", mpi_check_rank, program, d5_last_error());
        return 1;
    }
    if (d5_comm_rank(c) == 0)
        printf("%s on %d ranks: %.0f passed, %.0f failed\n", program, (int)d5_comm_size(c),
               counts[0], counts[1]);
    return counts[1] > 0 ? 1 : 0;
}

d5_comm *mpi_check_open(const char *backend, double timeout_s)
{
    d5_comm_params p = d5_comm_default_params();
    p.backend = backend;
    p.timeout_s = timeout_s;
    d5_comm *c = NULL;
    CHECK_OK(d5_comm_create(&p, &c));
    return c;
}

d5_comm *mpi_check_world(const char *program, double timeout_s)
{
    d5_comm_params p = d5_comm_default_params();
    p.timeout_s = timeout_s;
    d5_comm *c = NULL;
    d5_status s = d5_comm_create(&p, &c);
    if (s != D5_OK) {
        fprintf(stderr, "%s: %s: %s\n", program, d5_status_name(s), d5_last_error());
        return NULL;
    }
    mpi_check_rank = d5_comm_rank(c);
    return c;
}

double mpi_check_pattern(size_t i, int r)
{
    return (double)(((i * 7) + (size_t)r * 13) % 61) - 30;
}

void mpi_check_fill(void *buf, size_t n, d5_dtype t, int rank)
{
    for (size_t i = 0; i < n; i++) {
        if (t == D5_F32)
            ((float *)buf)[i] = (float)mpi_check_pattern(i, rank);
        else
            ((double *)buf)[i] = mpi_check_pattern(i, rank);
    }
}

size_t mpi_check_wrong(const void *buf, size_t n, d5_dtype t, int size)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double want = 0, got = t == D5_F32 ? ((const float *)buf)[i] : ((const double *)buf)[i];
        for (int r = 0; r < size; r++) want += mpi_check_pattern(i, r);
        bad += got != want;
    }
    return bad;
}
