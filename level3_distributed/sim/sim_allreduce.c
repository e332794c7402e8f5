/* d5-sim-allreduce: d5's allreduce (the communicator's real code: ring,
 * recursive doubling, or the MPI library's) on hosts that SimGrid's SMPI
 * simulates. Built with smpicc against SMPI's MPI (level3_distributed/
 * CMakeLists.txt) and started by smpirun on a platform file:
 *
 *   smpirun -np 64 -platform fat_tree.xml -hostfile hosts.txt \
 *       d5-sim-allreduce --comm ring -b 1K -e 64M
 *
 * Rank 0 prints, for each size, the simulated time of one allreduce (the
 * median of --reps timed calls after one untimed call, on SMPI's clock) and
 * the algorithm and bus bandwidths as `d5 allreduce` prints them. Buffers
 * are SMPI's shared allocations (every rank's folded onto one block), so
 * that a thousand simulated ranks fit in one machine's memory: the sums are
 * not meaningful, the times are. The arithmetic of the reductions runs for
 * real and SMPI adds its measured time to the simulated clock, unless
 * --reduce-s-per-byte gives a model of a sum's time (with
 * --reduce-alpha-s), which then replaces it: run smpirun with
 * --cfg=smpi/simulate-computation:no to count that model alone. */
#include "d5/distributed.h"

#include <errno.h>
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model of a sum's time (comm.c, built with D5_SIM). */
extern double d5__sim_reduce_alpha_s, d5__sim_reduce_s_per_byte;

static int parse_size(const char *text, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text) return 0;
    unsigned long long unit = 1;
    if (*end == 'K')
        unit = 1ull << 10, end++;
    else if (*end == 'M')
        unit = 1ull << 20, end++;
    else if (*end == 'G')
        unit = 1ull << 30, end++;
    if (*end || v > (1ull << 40) / unit) return 0;
    *out = (size_t)(v * unit);
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(void)
{
    fprintf(stderr, "usage: smpirun ... d5-sim-allreduce [--comm ring|recdbl|mpi] [-b SIZE] "
                    "[-e SIZE] [-f F] [--reps N] [--reduce-s-per-byte X [--reduce-alpha-s A]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *backend = "ring";
    size_t lo = 1024, hi = 64u << 20, factor = 2;
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        if (strcmp(a, "--comm") == 0)
            backend = v;
        else if (strcmp(a, "-b") == 0 || strcmp(a, "--min-bytes") == 0) {
            if (!parse_size(v, &lo)) return usage();
        } else if (strcmp(a, "-e") == 0 || strcmp(a, "--max-bytes") == 0) {
            if (!parse_size(v, &hi)) return usage();
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "--factor") == 0) {
            if (!parse_size(v, &factor) || factor < 2) return usage();
        } else if (strcmp(a, "--reduce-s-per-byte") == 0) {
            d5__sim_reduce_s_per_byte = atof(v);
            if (!(d5__sim_reduce_s_per_byte > 0)) return usage();
        } else if (strcmp(a, "--reduce-alpha-s") == 0) {
            d5__sim_reduce_alpha_s = atof(v);
            if (!(d5__sim_reduce_alpha_s >= 0)) return usage();
        } else if (strcmp(a, "--reps") == 0) {
            reps = atoi(v);
            if (reps < 1 || reps > 1000) return usage();
        } else {
            return usage();
        }
        i++;
    }
    if (lo < sizeof(float) || hi < lo) return usage();
    d5_comm_params p = d5_comm_default_params();
    p.backend = backend;
    p.thread_level = D5_COMM_THREAD_SINGLE;
    d5_comm *c = NULL;
    d5_status s = d5_comm_create(&p, &c);
    if (s != D5_OK) {
        fprintf(stderr, "d5-sim-allreduce: %s\n", d5_last_error());
        return 1;
    }
    int rank = d5_comm_rank(c), size = d5_comm_size(c);
    float *buf = SMPI_SHARED_MALLOC(hi);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!buf || !t) s = d5_error(D5_ERR_NOMEM, "out of memory for %zu bytes", hi);
    if (rank == 0 && s == D5_OK) {
        printf("# d5-sim-allreduce: %d simulated ranks, backend %s, float32, %d timed calls a "
               "size (median), SimGrid SMPI's clock\n",
               size, backend, reps);
        if (d5__sim_reduce_s_per_byte > 0)
            printf("# a sum costs %.3f us + %.5f ns/B (the model given), not its arithmetic\n",
                   d5__sim_reduce_alpha_s * 1e6, d5__sim_reduce_s_per_byte * 1e9);
        printf("# %12s %14s %12s %12s\n", "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    }
    for (size_t bytes = lo; s == D5_OK && bytes <= hi; bytes *= factor) {
        size_t n = bytes / sizeof(float);
        s = d5_comm_allreduce(c, buf, n, D5_F32, "warm-up");
        for (int r = 0; s == D5_OK && r < reps; r++) {
            double t0 = MPI_Wtime();
            s = d5_comm_allreduce(c, buf, n, D5_F32, "allreduce");
            t[r] = MPI_Wtime() - t0;
        }
        if (s != D5_OK || rank != 0) continue;
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        double m = t[reps / 2], alg = (double)(n * sizeof(float)) / m;
        printf("  %12zu %14.3f %12.3f %12.3f\n", n * sizeof(float), m * 1e6, alg * 1e-9,
               alg * 2.0 * (size - 1) / size * 1e-9);
        fflush(stdout);
        if (factor > 1 && bytes > hi / factor) break;
    }
    if (s != D5_OK) fprintf(stderr, "d5-sim-allreduce: rank %d: %s\n", rank, d5_last_error());
    SMPI_SHARED_FREE(buf);
    free(t);
    d5_comm_free(c);
    return s == D5_OK ? 0 : 1;
}
