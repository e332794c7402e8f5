/* bench/network: declarations shared by the parts of d5-bench-network. */
#ifndef D5_BENCH_NETWORK_H
#define D5_BENCH_NETWORK_H

#include "cli.h"
#include "ort_side.h"

/* Seed of the model weights and of the input values, on both sides. */
#define BENCH_SEED 1

/* One compiled model on the d5 side, its input fed with the seeded values. */
typedef struct net_side {
    d5_network *net;
    d5_executor *ex;
    d5_tensor input;
    char shape[64]; /* input dimensions after the batch: "3x32x32" */
} net_side;

/* Loads `path` with d5_onnx_load, sets the batch, runs the graph
 * optimisation passes of `level`, compiles it with the executor's default
 * backends and feeds the seeded input: float32 values, or with ids > 0 an
 * int64 input of token ids in [0, ids) (bench_fill_ids). */
d5_status net_side_open(const char *path, int64_t batch, d5_optimize_level level, int64_t ids,
                        net_side *out);
void net_side_close(net_side *s);

/* Fills n floats with the xorshift32 sequence of ort_bench.js (uniform in
 * [-1, 1), 24-bit mantissas), so that both sides see identical inputs. */
void bench_fill_input(float *data, int64_t n, uint32_t seed);
/* The same sequence as token ids: (x >> 8) % vocab, as ort_bench.js --ids. */
void bench_fill_ids(int64_t *data, int64_t n, uint32_t seed, int64_t vocab);

/* Builds the model `name` (symbolic batch, seed BENCH_SEED) and saves it as
 * ONNX at `path`. */
d5_status bench_save_model(const char *name, const char *path);

/* Joins dir and file into buf; D5_ERR_INVALID when it does not fit. */
d5_status bench_path(char *buf, size_t size, const char *dir, const char *file);

/* "1.23 ms [1.22 ms, 1.25 ms]": a median and its 95% confidence interval. */
#define BENCH_CI_STR 128
void bench_ci_str(const d5_stats *s, char *buf, size_t size);

/* Resident set size now and the process's peak (getrusage), in bytes. */
double bench_rss_now(void);
double bench_rss_peak(void);
/* Prints "# load average at WHEN: 1 min, 5 min, 15 min; N CPUs online" from
 * /proc/loadavg, so that a reader sees whether other work shared the machine. */
void bench_print_load(const char *when);

/* The load-time and memory comparison on the largest built-in model (in
 * load_memory.c). Runs first, in a process that has not run anything large,
 * so that peak RSS is the load's own. `ort` is NULL when ONNX Runtime is
 * unavailable. Adds "load/..." entries to r. */
d5_status bench_load_memory(const char *dir, const ort_side *ort, double seconds,
                            d5_optimize_level level, d5_results *r);

/* The cost of one call through ONNX Runtime's Node.js binding (in
 * binding_cost.c): ort_bench.js runs an Identity of one float, saved as
 * BENCH_IDENTITY_FILE in dir, for `seconds`; prints its median with the 95%
 * confidence interval and adds "ort/binding/identity" to r. A failed ORT run
 * is printed and is not an error. */
#define BENCH_IDENTITY_FILE    "identity.onnx"
#define BENCH_BINDING_MAX_REPS 100000
d5_status bench_binding_cost(const char *dir, const ort_side *ort, double seconds, d5_results *r);

#endif
