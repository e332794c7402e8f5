/* Sums a gradient over every rank of an MPI job with d5's ring allreduce and
 * prints what each rank sent, counted by the communicator.
 *
 *     mpirun -n 4 ./allreduce_example [COUNT]      (alone: a job of one rank)
 */
#include <d5/d5.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    float *grad = calloc(n ? n : 1, sizeof *grad);
    if (!grad) return 1;

    d5_comm *c = NULL;
    d5_comm_params p = d5_comm_default_params(); /* backend "mpi" */
    p.backend = "ring";
    d5_status s = d5_comm_create(&p, &c); /* collective: every rank calls it */
    int32_t rank = d5_comm_rank(c), size = d5_comm_size(c);
    for (size_t i = 0; i < n; i++) grad[i] = (float)rank;
    if (s == D5_OK) s = d5_comm_allreduce(c, grad, n, D5_F32, "fc1.weight");

    d5_comm_counter k;
    if (s == D5_OK) s = d5_comm_counters(c, D5_COMM_OP_ALLREDUCE, "fc1.weight", &k);
    if (s == D5_OK)
        printf("rank %d of %d: sum %g (expected %g), sent %llu bytes in %llu messages\n", (int)rank,
               (int)size, n ? grad[0] : 0.0, size * (size - 1) / 2.0,
               (unsigned long long)k.bytes_sent, (unsigned long long)k.msgs_sent);
    else
        fprintf(stderr, "%s: %s\n", d5_status_name(s), d5_last_error());
    d5_comm_free(c); /* the last communicator finalises MPI */
    free(grad);
    return s == D5_OK ? 0 : 1;
}
