#define _GNU_SOURCE
#include "peak_kernels.h" /* core's kernels, compiled into this test */
#include "support.h"

#include <cblas.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) && defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

Test(machine, query_describes_this_machine)
{
    d5_machine_info m;
    cr_assert_eq(d5_machine_query(&m), D5_OK);
    cr_assert_geq(m.logical_cpus, 1);
    cr_assert_geq(m.physical_cores, 1);
    cr_assert_leq(m.physical_cores, m.logical_cpus);
    cr_assert(strlen(m.cpu_model) > 0);
    cr_assert_gt(m.memory_bytes, 0);
    /* The OpenBLAS loaded in the process (the test links it), as core finds it. */
    cr_assert_str_eq(m.openblas_config, openblas_get_config());
    cr_assert(strstr(m.openblas_config, "OpenBLAS"));
    cr_assert(strlen(m.cuda_status) > 0, "a reason must be given when there are no devices");
    if (m.cuda_device_count == 0)
        cr_assert(strstr(m.cuda_status, "CUDA") || strstr(m.cuda_status, "cuda"));
    for (int i = 0; i < m.ncaches; i++) {
        cr_assert(m.caches[i].level >= 1 && m.caches[i].level <= 4);
        cr_assert_gt(m.caches[i].size_bytes, 0);
    }
    if (m.invariant_tsc) cr_assert(m.tsc_ghz > 0.1 && m.tsc_ghz < 10);
}

Test(machine, measure_gives_positive_rates)
{
    d5_machine_measure_params p = d5_machine_measure_default_params();
    p.max_time_s = 0.05;
    p.threads = 2;
    p.triad_bytes = 24u << 20;
    d5_machine_peaks r;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_OK);
    cr_assert_gt(r.fp32_core.median, 0);
    cr_assert_gt(r.fp32_all.median, 0);
    cr_assert_gt(r.triad.median, 0);
    cr_assert_eq(r.threads, 2);
    cr_assert_eq(r.triad_bytes, (size_t)(24u << 20) / 24 * 24);
    cr_assert_not_null(r.fma_isa);
    cr_assert_geq(r.fp32_core.n, 10);
}

/* ---- The FP32 peak against a plain loop and against the CPU's flags ----
 *
 * A peak is the most FP32 work a core can do per second, so any loop of known
 * FLOP count is a lower bound on it. The test has its own loop: twelve
 * independent chains of fused multiply-adds on the widest vectors that
 * /proc/cpuinfo's flags allow (AVX-512, AVX2 with FMA, else plain C), enough
 * chains to keep two FMA ports busy, timed with clock_gettime. A correct peak
 * is at least about the loop's rate; the check asks for 60% of it, so it
 * fails on a FLOP count, a timer or a kernel choice off by a factor of two or
 * more (a vector's lanes, an FMA counted as one FLOP), not on load: each side
 * keeps its best repetition on one thread (the loop: of 60, timed before and
 * after the measurement; the peak: fp32_core.max and, with threads = 1,
 * fp32_all.max), over up to five rounds, and a busy machine only slows some
 * repetitions down. The upper side needs no margin for load (load only lowers a
 * rate): per TSC tick a core does at most two FMAs of the kernel's width,
 * with twice that for turbo clocks above the TSC's. Under valgrind the rates
 * are those of its translation and its CPUID is not the host's: skipped.
 * Under AddressSanitizer both loops keep their chains in instrumented memory
 * (0.5x to 2x of each other, at a fiftieth of the peak): their rates tell how
 * each was instrumented, so only the kernel choice and the upper bound are
 * checked there; so too in an unoptimised build (the debug preset), where
 * both spill their chains to the stack. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define LOOPS_INSTRUMENTED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOPS_INSTRUMENTED 1
#endif
#endif
#ifndef LOOPS_INSTRUMENTED
#define LOOPS_INSTRUMENTED 0
#endif
#define LOOP_ITERS  50000u
#define LOOP_CHAINS 12

static float loop_scalar(uint32_t iters, float seed)
{
    float a[LOOP_CHAINS];
    for (int k = 0; k < LOOP_CHAINS; k++) a[k] = seed + (float)k;
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < LOOP_CHAINS; k++) a[k] = a[k] * 0.9999999f + 1e-7f;
    float s = 0;
    for (int k = 0; k < LOOP_CHAINS; k++) s += a[k];
    return s;
}

#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static float loop_avx512(uint32_t iters, float seed)
{
    const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a[LOOP_CHAINS];
    for (int k = 0; k < LOOP_CHAINS; k++) a[k] = _mm512_set1_ps(seed + (float)k);
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < LOOP_CHAINS; k++) a[k] = _mm512_fmadd_ps(a[k], m, c);
    for (int k = 1; k < LOOP_CHAINS; k++) a[0] = _mm512_add_ps(a[0], a[k]);
    return _mm512_reduce_add_ps(a[0]);
}

__attribute__((target("avx2,fma"))) static float loop_avx2(uint32_t iters, float seed)
{
    const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a[LOOP_CHAINS];
    for (int k = 0; k < LOOP_CHAINS; k++) a[k] = _mm256_set1_ps(seed + (float)k);
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < LOOP_CHAINS; k++) a[k] = _mm256_fmadd_ps(a[k], m, c);
    for (int k = 1; k < LOOP_CHAINS; k++) a[0] = _mm256_add_ps(a[0], a[k]);
    float v[8];
    _mm256_storeu_ps(v, a[0]);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}
#endif

/* GFLOP/s of the best of `reps` timed runs of a loop of `lanes` lanes. */
static double loop_gflops(float (*loop)(uint32_t, float), int lanes, int reps)
{
    volatile float seed = 1.0f, sink = 0;
    double best_ns = 0;
    for (int r = 0; r < reps; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        sink += loop(LOOP_ITERS, seed);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        if (ns > 0 && (best_ns == 0 || ns < best_ns)) best_ns = ns;
    }
    (void)sink;
    return 2.0 * lanes * LOOP_CHAINS * LOOP_ITERS / best_ns;
}

static int cpuinfo_has(const char *flag);
static int under_valgrind(void);

Test(machine, fp32_peak_bounded_by_a_plain_loop_and_the_cpu)
{
    if (under_valgrind()) cr_skip_test("under valgrind: its CPUID and its own speed");
    const char *want = "scalar";
    float (*loop)(uint32_t, float) = loop_scalar;
    int lanes = 1;
#if defined(__x86_64__)
    if (cpuinfo_has("avx512f")) {
        want = "avx512f";
        loop = loop_avx512;
        lanes = 16;
    } else if (cpuinfo_has("avx2") && cpuinfo_has("fma")) {
        want = "avx2+fma";
        loop = loop_avx2;
        lanes = 8;
    }
#endif
    d5_machine_measure_params p = d5_machine_measure_default_params();
    p.max_time_s = 0.05;
    p.threads = 1;
    p.triad_bytes = 24u << 20;
    p.lowp = 0;
    d5_machine_info m;
    cr_assert_eq(d5_machine_query(&m), D5_OK);
    /* Two FMAs of `lanes` lanes (4 for plain C, which SSE may vectorise), 2
     * FLOP each, per tick, doubled for turbo. */
    const double most = 2.0 * 2 * (lanes > 4 ? lanes : 4) * 2 * m.tsc_ghz;
    /* Up to five rounds, each side keeping its best: other work that holds
     * the cores through one 50 ms measurement (another test of the suite
     * measuring its peaks beside this one) slows one side only; it does not
     * last through five. A FLOP count off by two fails every round. */
    double loop_best = 0, core_best = 0, all_best = 0;
    for (int round = 0; round < 5; round++) {
        double x = loop_gflops(loop, lanes, 30);
        if (x > loop_best) loop_best = x;
        d5_machine_peaks r;
        cr_assert_eq(d5_machine_measure(&p, &r), D5_OK, "%s", d5_last_error());
        x = loop_gflops(loop, lanes, 30);
        if (x > loop_best) loop_best = x;
        cr_assert_str_eq(r.fma_isa, want, "the FP32 kernel is %s, /proc/cpuinfo allows %s",
                         r.fma_isa, want);
        if (m.tsc_ghz > 0)
            cr_assert_leq(r.fp32_core.max, most,
                          "fp32 peak of one core %.1f GFLOP/s is more than %s can do at %.2f GHz "
                          "(%.1f)",
                          r.fp32_core.max, r.fma_isa, m.tsc_ghz, most);
        if (r.fp32_core.max > core_best) core_best = r.fp32_core.max;
        if (r.fp32_all.max > all_best) all_best = r.fp32_all.max;
        cr_log_info("round %d: fp32 peak, one thread: best %.1f GFLOP/s (%s), all (1) threads "
                    "%.1f; the test's loop: best %.1f",
                    round, r.fp32_core.max, r.fma_isa, r.fp32_all.max, loop_best);
        if (LOOPS_INSTRUMENTED || (core_best >= 0.6 * loop_best && all_best >= 0.6 * loop_best))
            break;
    }
    if (!LOOPS_INSTRUMENTED) {
        cr_assert_geq(core_best, 0.6 * loop_best,
                      "fp32 peak of one core %.2f GFLOP/s (%s) is below 60%% of the %.2f GFLOP/s "
                      "of a plain loop",
                      core_best, want, loop_best);
        cr_assert_geq(all_best, 0.6 * loop_best,
                      "fp32 peak of all (1) threads %.2f GFLOP/s is below 60%% of the %.2f GFLOP/s "
                      "of a plain loop",
                      all_best, loop_best);
    }
}

Test(machine, bad_parameters)
{
    d5_machine_measure_params p = d5_machine_measure_default_params();
    d5_machine_peaks r;
    p.threads = -1;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    p = d5_machine_measure_default_params();
    p.max_time_s = 0;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    p = d5_machine_measure_default_params();
    p.triad_bytes = 100;
    p.max_time_s = 0.01;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "too small"));
}

/* ---- Low-precision peaks ---- */

/* Whether /proc/cpuinfo's flags list `flag` (the kernel's own reading of
 * CPUID): the independent witness of what the kernels may use. */
static int cpuinfo_has(const char *flag)
{
    char *text = slurp("/proc/cpuinfo", NULL);
    if (!text) return 0;
    const char *line = strstr(text, "\nflags");
    int found = 0;
    if (line) {
        const char *end = strchr(line + 1, '\n');
        size_t n = strlen(flag);
        for (const char *p = strstr(line, flag); p && (!end || p < end); p = strstr(p + 1, flag))
            if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n')) found = 1;
    }
    free(text);
    return found;
}

/* Under valgrind, CPUID is valgrind's (no AVX-512, no AMX), /proc/cpuinfo the host's. */
static int under_valgrind(void)
{
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload");
}

static const struct {
    d5_peak_kind kind;
    const char *flag, *alt_flag;
    double max_ops_per_tick; /* 4x the instruction's rate per cycle on two ports (one AMX unit) */
} lowp_expect[] = {
    {D5_PEAK_BF16_DOT, "avx512_bf16", NULL, 4 * 2 * 64},
    {D5_PEAK_F16_FMA, "avx512_fp16", NULL, 4 * 2 * 64},
    {D5_PEAK_INT8_DOT, "avx512_vnni", "avx_vnni", 4 * 2 * 128},
    {D5_PEAK_AMX_BF16, "amx_bf16", NULL, 4 * 1024},
    {D5_PEAK_AMX_INT8, "amx_int8", NULL, 4 * 2048},
};

Test(machine, lowp_kernels_count_their_multiply_adds)
{
    for (size_t i = 0; i < sizeof lowp_expect / sizeof lowp_expect[0]; i++) {
        d5__peak_kernel k;
        d5__peak_kernel_get(lowp_expect[i].kind, &k);
        int flag = cpuinfo_has(lowp_expect[i].flag) ||
                   (lowp_expect[i].alt_flag && cpuinfo_has(lowp_expect[i].alt_flag));
        if (k.fn) {
            cr_assert(flag, "kernel %d runs, but /proc/cpuinfo has no %s", (int)i,
                      lowp_expect[i].flag);
            /* Ones times ones: the checksum is the number of multiply-adds. */
            for (uint32_t iters = 1; iters <= 100; iters *= 10)
                cr_assert_float_eq(k.fn(iters, 0), k.ops_per_iter / 2 * iters, 0,
                                   "%s over %u iterations: %g multiply-adds, expected %g",
                                   k.instruction, iters, (double)k.fn(iters, 0),
                                   k.ops_per_iter / 2 * iters);
        } else {
            cr_assert(strstr(k.reason, "not available on this CPU") ||
                          strstr(k.reason, "AMX: not permitted by the kernel: "),
                      "%s", k.reason);
            if (!under_valgrind() && strstr(k.reason, "not available"))
                cr_assert(!flag, "/proc/cpuinfo has %s, but: %s", lowp_expect[i].flag, k.reason);
        }
    }
}

Test(machine, lowp_peaks_measured_printed_and_written)
{
    d5_machine_measure_params p = d5_machine_measure_default_params();
    cr_assert_eq(p.lowp, D5_PEAK_ALL);
    p.max_time_s = 0.05;
    p.threads = 2;
    p.triad_bytes = 24u << 20;
    d5_machine_peaks r;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_OK, "%s", d5_last_error());
    double best[D5_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < sizeof lowp_expect / sizeof lowp_expect[0]; i++) {
        const d5_peak_lowp *l = &r.lowp[lowp_expect[i].kind];
        cr_assert_not_null(l->name);
        if (!l->measured) {
            cr_assert(strlen(l->reason) > 0);
            continue;
        }
        cr_assert_gt(l->core.median, 0, "%s", l->name);
        cr_assert_gt(l->all.median, 0, "%s", l->name);
        cr_assert_geq(l->core.n, 10);
        cr_assert(strlen(l->instruction) > 0 && strlen(l->isa) > 0);
        if (l->ops_per_tick > 0) /* a folded kernel would be a thousand times faster */
            cr_assert_lt(l->ops_per_tick, lowp_expect[i].max_ops_per_tick, "%s: %g per tick",
                         l->name, l->ops_per_tick);
        if (l->all.median > best[l->dtype]) best[l->dtype] = l->all.median;
    }
    const char *kernel;
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_F32, &kernel), r.fp32_all.median, 0);
    cr_assert_str_eq(kernel, "fp32 fma");
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_BF16, NULL), best[D5_BF16], 0);
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_F16, NULL), best[D5_F16], 0);
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_I8, NULL), best[D5_I8], 0);
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_U8, NULL), best[D5_I8], 0);
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_F64, &kernel), 0, 0);
    cr_assert_str_eq(kernel, "");

    /* The printout names every kernel: its two rates, or why it has none. */
    d5_machine_info m;
    cr_assert_eq(d5_machine_query(&m), D5_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(d5_machine_print(f, &m, &r), D5_OK);
    fclose(f);
    cr_assert(strstr(text, "low-precision extensions"), "%s", text);
    for (int i = 0; i < D5_PEAK_KINDS; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s peak%s", r.lowp[i].name,
                 r.lowp[i].measured ? ", 1 core" : "");
        cr_assert(strstr(text, what), "no '%s' in:\n%s", what, text);
        if (!r.lowp[i].measured) cr_assert(strstr(text, r.lowp[i].reason), "%s", text);
    }
    free(text);

    /* JSON: peaks.lowp.<kernel> with the same figures. */
    char *dir = tmpdir_make(), path[512];
    snprintf(path, sizeof path, "%s/machine.json", dir);
    cr_assert_eq(d5_machine_write_json(&m, &r, path), D5_OK);
    json_t *doc = json_read(path);
    json_t *lowp = json_object_get(json_object_get(doc, "peaks"), "lowp");
    cr_assert_eq(json_object_size(lowp), D5_PEAK_KINDS);
    static const char *const keys[D5_PEAK_KINDS] = {"bf16_dot", "f16_fma", "int8_dot", "amx_bf16",
                                                    "amx_int8"};
    for (int i = 0; i < D5_PEAK_KINDS; i++) {
        json_t *e = json_object_get(lowp, keys[i]);
        cr_assert_not_null(e, "%s", keys[i]);
        cr_assert_eq(json_is_true(json_object_get(e, "measured")), r.lowp[i].measured);
        if (r.lowp[i].measured)
            cr_assert_float_eq(
                json_number_value(json_object_get(json_object_get(e, "all"), "median")),
                r.lowp[i].all.median, 1e-9 * r.lowp[i].all.median);
        else
            cr_assert_str_eq(json_string_value(json_object_get(e, "reason")), r.lowp[i].reason);
    }
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(doc, "machine"), "isa_lowp")),
        m.isa_lowp);
    json_decref(doc);
    rmtree(dir);
    free(dir);
}

Test(machine, lowp_mask_selects_the_kernels)
{
    d5_machine_measure_params p = d5_machine_measure_default_params();
    p.max_time_s = 0.02;
    p.threads = 1;
    p.triad_bytes = 24u << 20;
    p.lowp = 0;
    d5_machine_peaks r;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_OK);
    for (int i = 0; i < D5_PEAK_KINDS; i++) {
        cr_assert_eq(r.lowp[i].measured, 0);
        cr_assert_str_eq(r.lowp[i].reason, "not measured");
    }
    cr_assert_float_eq(d5_machine_peak_of(&r, D5_BF16, NULL), 0, 0);
    p.lowp = 1u << D5_PEAK_KINDS;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "low-precision peak mask"), "%s", d5_last_error());
}

#if defined(__x86_64__) && defined(__linux__)
/* Linux refusing the tile state (a seccomp filter makes arch_prctl's
 * ARCH_REQ_XCOMP_PERM fail with EPERM, as a container's profile may): the AMX
 * peaks say so and everything else is measured. Criterion runs each test in a
 * process of its own, so the filter ends with it. */
Test(machine, amx_refused_by_the_kernel_is_a_reason)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_arch_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof code / sizeof code[0], code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        cr_skip_test("cannot install a seccomp filter here: %s", strerror(errno));
    d5_machine_measure_params p = d5_machine_measure_default_params();
    p.max_time_s = 0.02;
    p.threads = 1;
    p.triad_bytes = 24u << 20;
    p.lowp = (1u << D5_PEAK_AMX_BF16) | (1u << D5_PEAK_AMX_INT8);
    d5_machine_peaks r;
    cr_assert_eq(d5_machine_measure(&p, &r), D5_OK, "%s", d5_last_error());
    cr_assert_gt(r.fp32_core.median, 0);
    for (int i = D5_PEAK_AMX_BF16; i <= D5_PEAK_AMX_INT8; i++) {
        cr_assert_eq(r.lowp[i].measured, 0);
        if (cpuinfo_has(i == D5_PEAK_AMX_BF16 ? "amx_bf16" : "amx_int8") && !under_valgrind())
            cr_assert(strstr(r.lowp[i].reason, "AMX: not permitted by the kernel: ") &&
                          strstr(r.lowp[i].reason, strerror(EPERM)),
                      "%s", r.lowp[i].reason);
        else
            cr_assert(strstr(r.lowp[i].reason, "not available on this CPU"), "%s",
                      r.lowp[i].reason);
    }
}
#endif
