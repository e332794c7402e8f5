/* bench/network: the d5 side of d5-bench-network: building and saving the
 * models, loading and compiling a file, the seeded input, memory figures. */
#define _POSIX_C_SOURCE 200809L
#include "bench_network.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void bench_fill_input(float *data, int64_t n, uint32_t seed)
{
    /* xorshift32 (Marsaglia 2003), as in ort_bench.js: the top 24 bits give
     * k / 2^23 - 1, exact in float32. */
    uint32_t x = seed ? seed : 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = (float)((double)(x >> 8) / 16777216.0 * 2 - 1);
    }
}

void bench_fill_ids(int64_t *data, int64_t n, uint32_t seed, int64_t vocab)
{
    uint32_t x = seed ? seed : 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = (int64_t)(x >> 8) % vocab;
    }
}

d5_status bench_save_model(const char *name, const char *path)
{
    d5_model_params p = d5_model_default_params();
    p.seed = BENCH_SEED;
    d5_network *net = NULL;
    d5_status s = d5_model_build(name, &p, &net);
    if (s == D5_OK) s = d5_onnx_save(net, path);
    d5_network_free(net);
    return s;
}

/* The descriptor of the first graph input, which must be float32 (int64 for
 * token ids). */
static d5_status input_desc(const d5_network *net, const char *path, int64_t ids,
                            d5_tensor_desc *out)
{
    if (d5_network_input_count(net) < 1)
        return d5_error(D5_ERR_INVALID, "%s: the model has no graph input", path);
    const char *name = d5_network_input_name(net, 0);
    int32_t v;
    d5_value_info info;
    d5_status s = d5_network_find_value(net, name, &v);
    if (s != D5_OK) return s;
    d5_network_value_at(net, v, &info);
    if (!info.known || info.desc.dtype != (ids > 0 ? D5_I64 : D5_F32) || info.desc.ndim < 1)
        return d5_error(D5_ERR_SHAPE, "%s: input '%s' is not a%s tensor of known shape", path, name,
                        ids > 0 ? "n int64" : " float32");
    *out = info.desc;
    return D5_OK;
}

d5_status net_side_open(const char *path, int64_t batch, d5_optimize_level level, int64_t ids,
                        net_side *out)
{
    memset(out, 0, sizeof *out);
    d5_tensor_desc desc;
    d5_executor_options eo = d5_executor_default_options();
    d5_status s = d5_onnx_load(path, &out->net);
    if (s == D5_OK) s = d5_network_set_batch(out->net, batch, 0);
    if (s == D5_OK) s = input_desc(out->net, path, ids, &desc);
    if (s == D5_OK) s = d5_network_optimize(out->net, level, NULL);
    if (s == D5_OK) s = d5_executor_create(out->net, &eo, &out->ex);
    if (s == D5_OK) s = d5_tensor_alloc(&desc, &out->input);
    if (s == D5_OK) {
        if (ids > 0)
            bench_fill_ids(out->input.data, d5_tensor_desc_numel(&desc), BENCH_SEED, ids);
        else
            bench_fill_input(out->input.data, d5_tensor_desc_numel(&desc), BENCH_SEED);
        s = d5_executor_feed(out->ex, d5_network_input_name(out->net, 0), &out->input);
    }
    if (s != D5_OK) {
        net_side_close(out);
        return s;
    }
    /* The dimensions after the batch, for ort_bench.js's --shape. */
    size_t len = 0;
    for (int32_t d = 1; d < desc.ndim && len < sizeof out->shape; d++)
        len += (size_t)snprintf(out->shape + len, sizeof out->shape - len, "%s%lld",
                                d > 1 ? "x" : "", (long long)desc.shape[d]);
    return D5_OK;
}

void net_side_close(net_side *s)
{
    d5_tensor_free(&s->input);
    d5_executor_free(s->ex);
    d5_network_free(s->net);
    s->ex = NULL;
    s->net = NULL;
}

d5_status bench_path(char *buf, size_t size, const char *dir, const char *file)
{
    int n = snprintf(buf, size, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= size)
        return d5_error(D5_ERR_INVALID, "the path %s/%s is longer than %zu bytes", dir, file,
                        size - 1);
    return D5_OK;
}

void bench_ci_str(const d5_stats *s, char *buf, size_t size)
{
    char m[32], lo[32], hi[32];
    d5_format_duration(s->median, m, sizeof m);
    d5_format_duration(s->ci_low, lo, sizeof lo);
    d5_format_duration(s->ci_high, hi, sizeof hi);
    if (snprintf(buf, size, "%s [%s, %s]", m, lo, hi) < 0) buf[0] = '\0';
}

double bench_rss_now(void)
{
    /* /proc/self/statm: size resident shared ..., in pages. */
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (!f) return 0;
    int got = fscanf(f, "%ld %ld", &size, &resident);
    fclose(f);
    return got == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) : 0;
}

double bench_rss_peak(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0;
}

void bench_print_load(const char *when)
{
    double l1 = 0, l5 = 0, l15 = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    int got = f ? fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) : 0;
    if (f) fclose(f);
    if (got == 3)
        printf("# load average at %s: %.2f, %.2f, %.2f (1, 5, 15 min); %ld CPUs online\n", when, l1,
               l5, l15, sysconf(_SC_NPROCESSORS_ONLN));
}
