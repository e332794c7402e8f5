/* Measured machine peaks: FP32 FMA throughput (one core, all cores), the
 * low-precision kernels of peak_lowp.c and peak_amx.c, and the memory
 * bandwidth of a STREAM-triad-like kernel. */
#define _GNU_SOURCE
#include "d5/machine.h"
#include "d5/threads.h"
#include "internal.h"
#include "peak_kernels.h"

#include <pthread.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ---- FMA kernels: independent accumulator chains, enough of them to cover
 * the FMA latency on every FMA port. Each returns a value so that the work
 * cannot be optimised away. ---- */

#define FMA_ITERS 200000u

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float fma_avx512(uint32_t iters, float seed)
{
    const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a[16];
    for (int k = 0; k < 16; k++) a[k] = _mm512_set1_ps(seed + (float)k);
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < 16; k++) a[k] = _mm512_fmadd_ps(a[k], m, c);
    __m512 s = a[0];
    for (int k = 1; k < 16; k++) s = _mm512_add_ps(s, a[k]);
    return _mm512_reduce_add_ps(s);
}
#define FMA512_FLOPS (16.0 * 16 * 2)

__attribute__((target("avx2,fma"))) static float fma_avx2(uint32_t iters, float seed)
{
    const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a[12];
    for (int k = 0; k < 12; k++) a[k] = _mm256_set1_ps(seed + (float)k);
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < 12; k++) a[k] = _mm256_fmadd_ps(a[k], m, c);
    __m256 s = a[0];
    for (int k = 1; k < 12; k++) s = _mm256_add_ps(s, a[k]);
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}
#define FMA256_FLOPS (12.0 * 8 * 2)
#endif

static float fma_scalar(uint32_t iters, float seed)
{
    float a[8];
    for (int k = 0; k < 8; k++) a[k] = seed + (float)k;
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < 8; k++) a[k] = a[k] * 0.9999999f + 1e-7f;
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}
#define FMA_SCALAR_FLOPS (8.0 * 2)

typedef d5__peak_fn fma_fn;

static fma_fn pick_fma(const char **name, double *flops_per_iter)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *name = "avx512f";
        *flops_per_iter = FMA512_FLOPS;
        return fma_avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        *name = "avx2+fma";
        *flops_per_iter = FMA256_FLOPS;
        return fma_avx2;
    }
#endif
    *name = "scalar";
    *flops_per_iter = FMA_SCALAR_FLOPS;
    return fma_scalar;
}

/* ---- A pool of threads that run one kernel between two barriers. Workers
 * wait at a gate until every thread has started, so that a failed
 * pthread_create never leaves a barrier short of threads. ---- */

enum { JOB_FMA, JOB_INIT, JOB_TRIAD, JOB_QUIT };

typedef struct pool pool;

typedef struct worker {
    pool *p;
    int index;
} worker;

struct pool {
    int threads;
    int job;
    fma_fn fma;
    uint32_t iters; /* of fma per round */
    double *a, *b, *c;
    size_t n;
    pthread_barrier_t start, end;
    pthread_mutex_t gate_lock;
    pthread_cond_t gate;
    int gate_open; /* 1: go, -1: quit */
    pthread_t *tid;
    worker *workers;
    int started;
    volatile float sink;
};

static void run_job(pool *p, int index)
{
    if (p->job == JOB_FMA) {
        float v = p->fma(p->iters, (float)index);
        if (v == 12345.0f) p->sink = v;
    } else {
        /* Each thread owns one slice of the arrays, and touches it first so
         * that its pages sit near that thread. */
        size_t lo = p->n * (size_t)index / (size_t)p->threads;
        size_t hi = p->n * (size_t)(index + 1) / (size_t)p->threads;
        double *restrict a = p->a, *restrict b = p->b, *restrict c = p->c;
        if (p->job == JOB_INIT) {
            for (size_t i = lo; i < hi; i++) {
                a[i] = 0.0;
                b[i] = 1.0;
                c[i] = 2.0;
            }
        } else {
            for (size_t i = lo; i < hi; i++) a[i] = b[i] + 3.0 * c[i];
        }
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pool *p = w->p;
    pthread_mutex_lock(&p->gate_lock);
    while (p->gate_open == 0) pthread_cond_wait(&p->gate, &p->gate_lock);
    int go = p->gate_open > 0;
    pthread_mutex_unlock(&p->gate_lock);
    while (go) {
        pthread_barrier_wait(&p->start);
        if (p->job == JOB_QUIT) break;
        run_job(p, w->index);
        pthread_barrier_wait(&p->end);
    }
    return NULL;
}

static void open_gate(pool *p, int value)
{
    pthread_mutex_lock(&p->gate_lock);
    p->gate_open = value;
    pthread_cond_broadcast(&p->gate);
    pthread_mutex_unlock(&p->gate_lock);
}

/* Starts threads - 1 workers; the caller is thread 0. */
static d5_status pool_start(pool *p, int threads)
{
    p->threads = threads;
    p->tid = d5_calloc((size_t)threads, sizeof *p->tid, "measurement threads");
    p->workers = d5_calloc((size_t)threads, sizeof *p->workers, "measurement threads");
    if (!p->tid || !p->workers) return D5_ERR_NOMEM;
    pthread_mutex_init(&p->gate_lock, NULL);
    pthread_cond_init(&p->gate, NULL);
    pthread_barrier_init(&p->start, NULL, (unsigned)threads);
    pthread_barrier_init(&p->end, NULL, (unsigned)threads);
    p->started = 1;
    for (int i = 1; i < threads; i++) {
        p->workers[i] = (worker){p, i};
        if (pthread_create(&p->tid[i], NULL, worker_main, &p->workers[i]) != 0) {
            open_gate(p, -1);
            return d5_error(D5_ERR_BACKEND, "cannot start measurement thread %d of %d", i, threads);
        }
        p->started++;
    }
    open_gate(p, 1);
    return D5_OK;
}

static void pool_stop(pool *p)
{
    if (p->started > 0) {
        if (p->gate_open > 0) {
            p->job = JOB_QUIT;
            pthread_barrier_wait(&p->start);
        }
        for (int i = 1; i < p->started; i++) pthread_join(p->tid[i], NULL);
        pthread_barrier_destroy(&p->start);
        pthread_barrier_destroy(&p->end);
        pthread_cond_destroy(&p->gate);
        pthread_mutex_destroy(&p->gate_lock);
    }
    d5_free(p->tid);
    d5_free(p->workers);
    d5_free(p->a);
    d5_free(p->b);
    d5_free(p->c);
}

/* One timed round of the current job on every thread of the pool. */
static double pool_round_ns(pool *p)
{
    uint64_t t0 = d5__mono_ns();
    pthread_barrier_wait(&p->start);
    run_job(p, 0);
    pthread_barrier_wait(&p->end);
    return (double)(d5__mono_ns() - t0);
}

typedef struct sample_ctx {
    pool *p;
    double work; /* flops or bytes per round */
} sample_ctx;

static d5_status rate_sample(void *ctx, double *sample)
{
    sample_ctx *s = ctx;
    *sample = s->work / pool_round_ns(s->p); /* per ns = giga per s */
    return D5_OK;
}

d5_machine_measure_params d5_machine_measure_default_params(void)
{
    return (d5_machine_measure_params){
        .threads = 0, .max_time_s = 1.0, .triad_bytes = 0, .lowp = D5_PEAK_ALL};
}

static d5_status measure_rate(pool *p, double work, double max_time_s, d5_stats *out)
{
    sample_ctx ctx = {p, work};
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = 2;
    mp.min_reps = 10;
    mp.max_time_s = max_time_s;
    mp.rel_ci = 0.01;
    d5_measurement m;
    d5_status s = d5_measure_samples(rate_sample, &ctx, &mp, &m);
    if (s != D5_OK) return s;
    *out = m.stats;
    d5_measurement_free(&m);
    return D5_OK;
}

static const struct {
    const char *name, *unit;
    d5_dtype dtype;
} lowp_kinds[D5_PEAK_KINDS] = {
    [D5_PEAK_BF16_DOT] = {"bf16 dot", "GFLOP/s", D5_BF16},
    [D5_PEAK_F16_FMA] = {"f16 fma", "GFLOP/s", D5_F16},
    [D5_PEAK_INT8_DOT] = {"int8 dot", "GOP/s", D5_I8},
    [D5_PEAK_AMX_BF16] = {"amx bf16", "GFLOP/s", D5_BF16},
    [D5_PEAK_AMX_INT8] = {"amx int8", "GOP/s", D5_I8},
};

/* The kernels of the low-precision peaks that were asked for and run here;
 * the others get their reason. */
static void lowp_prepare(uint32_t wanted, d5_machine_peaks *r, d5__peak_kernel *k)
{
    for (int i = 0; i < D5_PEAK_KINDS; i++) {
        d5_peak_lowp *l = &r->lowp[i];
        l->name = lowp_kinds[i].name;
        l->unit = lowp_kinds[i].unit;
        l->dtype = lowp_kinds[i].dtype;
        if (!(wanted & (1u << i))) {
            memset(&k[i], 0, sizeof k[i]);
            l->isa = l->instruction = "";
            snprintf(l->reason, sizeof l->reason, "not measured");
            continue;
        }
        d5__peak_kernel_get((d5_peak_kind)i, &k[i]);
        l->isa = k[i].isa;
        l->instruction = k[i].instruction;
        snprintf(l->reason, sizeof l->reason, "%s", k[i].fn ? "" : k[i].reason);
    }
}

/* The low-precision kernels on a pool: `all` 0 for one core, 1 for all threads. */
static d5_status lowp_measure(pool *p, int all, const d5__peak_kernel *k, double max_time_s,
                              double tsc_ghz, d5_machine_peaks *r)
{
    d5_status s = D5_OK;
    for (int i = 0; s == D5_OK && i < D5_PEAK_KINDS; i++) {
        if (!k[i].fn) continue;
        p->fma = k[i].fn;
        p->iters = k[i].iters;
        double work = k[i].ops_per_iter * k[i].iters * (all ? p->threads : 1);
        d5_peak_lowp *l = &r->lowp[i];
        s = measure_rate(p, work, max_time_s, all ? &l->all : &l->core);
        if (s == D5_OK && !all) l->ops_per_tick = tsc_ghz > 0 ? l->core.max / tsc_ghz : 0;
        if (s == D5_OK && all) l->measured = 1;
    }
    return s;
}

double d5_machine_peak_of(const d5_machine_peaks *p, d5_dtype dtype, const char **kernel)
{
    const char *name = "";
    double best = 0;
    if (p && dtype == D5_F32 && p->fp32_all.n > 0) {
        best = p->fp32_all.median;
        name = "fp32 fma";
    }
    d5_dtype want = dtype == D5_U8 ? D5_I8 : dtype;
    for (int i = 0; p && dtype != D5_F32 && i < D5_PEAK_KINDS; i++)
        if (p->lowp[i].measured && p->lowp[i].dtype == want && p->lowp[i].all.median > best) {
            best = p->lowp[i].all.median;
            name = p->lowp[i].name;
        }
    if (kernel) *kernel = name;
    return best;
}

d5_status d5_machine_measure(const d5_machine_measure_params *params, d5_machine_peaks *out)
{
    d5_machine_measure_params mp = params ? *params : d5_machine_measure_default_params();
    if (!out) return d5_error(D5_ERR_INVALID, "d5_machine_measure: NULL output");
    if (mp.threads < 0 || mp.threads > 4096)
        return d5_error(D5_ERR_INVALID, "thread count %d is outside 0..4096", mp.threads);
    if (!(mp.max_time_s > 0))
        return d5_error(D5_ERR_INVALID, "measurement time %g s must be positive", mp.max_time_s);
    if (mp.lowp & ~D5_PEAK_ALL)
        return d5_error(D5_ERR_INVALID, "low-precision peak mask 0x%x has bits beyond 0x%x",
                        (unsigned)mp.lowp, (unsigned)D5_PEAK_ALL);
    d5_machine_info info;
    d5_status s = d5_machine_query(&info);
    if (s != D5_OK) return s;
    d5_cores cores;
    if ((s = d5_cores_query(&cores)) != D5_OK) return s;
    int threads = mp.threads ? mp.threads : cores.usable;
    /* The triad's size is checked before anything is measured. */
    size_t llc = 0;
    for (int i = 0; i < info.ncaches; i++)
        if (info.caches[i].size_bytes > llc) llc = info.caches[i].size_bytes;
    size_t total = mp.triad_bytes ? mp.triad_bytes : 8 * llc;
    if (!mp.triad_bytes && total < ((size_t)256 << 20)) total = (size_t)256 << 20;
    size_t triad_n = total / 3 / sizeof(double);
    if (triad_n < (size_t)threads * 64)
        return d5_error(D5_ERR_INVALID, "triad size of %zu bytes is too small for %d threads",
                        total, threads);
    d5_load_sample load0;
    d5_load_sample_take(&load0);

    d5_machine_peaks r;
    memset(&r, 0, sizeof r);
    double flops_per_iter;
    fma_fn fma = pick_fma(&r.fma_isa, &flops_per_iter);
    r.threads = threads;
    /* Before any thread starts: AMX asks Linux for the tile state here. */
    d5__peak_kernel kern[D5_PEAK_KINDS];
    lowp_prepare(mp.lowp, &r, kern);

    /* One core, then all threads, then the triad on all threads; the FP32
     * kernel first, then the low-precision ones. */
    pool one, all;
    memset(&one, 0, sizeof one);
    memset(&all, 0, sizeof all);
    one.fma = all.fma = fma;
    one.iters = all.iters = FMA_ITERS;
    one.job = all.job = JOB_FMA;
    s = pool_start(&one, 1);
    if (s == D5_OK) s = measure_rate(&one, flops_per_iter * FMA_ITERS, mp.max_time_s, &r.fp32_core);
    if (s == D5_OK) s = lowp_measure(&one, 0, kern, mp.max_time_s, info.tsc_ghz, &r);
    pool_stop(&one);
    r.flop_per_cycle_core = info.tsc_ghz > 0 ? r.fp32_core.max / info.tsc_ghz : 0;

    if (s == D5_OK) s = pool_start(&all, threads);
    if (s == D5_OK)
        s = measure_rate(&all, flops_per_iter * FMA_ITERS * threads, mp.max_time_s, &r.fp32_all);
    if (s == D5_OK) s = lowp_measure(&all, 1, kern, mp.max_time_s, info.tsc_ghz, &r);
    all.n = triad_n;

    if (s == D5_OK) {
        all.a = d5_alloc(all.n * sizeof(double), "triad array a");
        all.b = all.a ? d5_alloc(all.n * sizeof(double), "triad array b") : NULL;
        all.c = all.b ? d5_alloc(all.n * sizeof(double), "triad array c") : NULL;
        if (!all.c) s = D5_ERR_NOMEM;
    }
    if (s == D5_OK) {
        all.job = JOB_INIT;
        pool_round_ns(&all);
        all.job = JOB_TRIAD;
        r.triad_bytes = 3 * all.n * sizeof(double);
        s = measure_rate(&all, (double)r.triad_bytes, mp.max_time_s, &r.triad);
    }
    pool_stop(&all);
    if (s != D5_OK) return s;
    d5_load_sample load1;
    d5_load_sample_take(&load1);
    d5_contention_between(&load0, &load1, threads, &r.contention);
    *out = r;
    return D5_OK;
}
