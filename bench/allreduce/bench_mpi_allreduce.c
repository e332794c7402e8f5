/* The baseline of bench_allreduce.sh: MPI_Allreduce (in place, float32, sum)
 * timed in a plain loop, nothing of d5 in between.
 *
 *   mpirun -n 2 d5-bench-mpi-allreduce [MIN_BYTES [MAX_BYTES]]
 *
 * For each size from MIN_BYTES (default 1024) to MAX_BYTES (default 64 MiB),
 * doubling, on a 64-byte aligned buffer of zeros: 5 warm-up calls, a loop length that lasts at
 * least 20 ms, then 10 loops, each started by a barrier and timed on every rank; a loop's time is
 * the slowest rank's. Rank 0 prints the median over the loops per call, and
 * busbw = size / time * 2 (P - 1) / P as nccl-tests defines it. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds per call of `iters` calls, the slowest rank's. */
static double loop(float *buf, int count, long iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (long i = 0; i < iters; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (now() - t0) / (double)iters;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

static int parse(const char *s, unsigned long long *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || v < 4 || v > (1ull << 31)) return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned long long lo = 1024, hi = 64ull << 20;
    if ((argc > 1 && !parse(argv[1], &lo)) || (argc > 2 && !parse(argv[2], &hi)) || lo > hi) {
        if (rank == 0) fprintf(stderr, "usage: %s [MIN_BYTES [MAX_BYTES]] (4 .. 2^31)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    /* 64-byte aligned and written once, as d5_comm_mem_alloc's buffers are:
     * the reduction's vector loads are then aligned alike on both sides. */
    float *buf = aligned_alloc(64, (hi + 63) / 64 * 64);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 0, hi);
    if (rank == 0) {
        printf(
            "# bare MPI_Allreduce (in place, float, sum) on %d ranks: median of 10 timed loops\n",
            size);
        printf("# %12s %12s %14s %12s\n", "size(B)", "count", "time(us)", "busbw(GB/s)");
    }
    for (unsigned long long bytes = lo; bytes <= hi; bytes *= 2) {
        int count = (int)(bytes / 4);
        for (int i = 0; i < 5; i++)
            MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        long iters = 1;
        while (loop(buf, count, iters) * (double)iters < 0.02) iters *= 2;
        double t[10];
        for (int k = 0; k < 10; k++) t[k] = loop(buf, count, iters);
        qsort(t, 10, sizeof t[0], cmp);
        double med = (t[4] + t[5]) / 2, busbw = (double)bytes / med * 2 * (size - 1) / size;
        if (rank == 0) {
            printf("  %12llu %12d %14.2f %12.3f\n", bytes, count, med * 1e6, busbw / 1e9);
            fflush(stdout);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
