/* The tally of the MPI test programs (mpi_check.h). */
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
