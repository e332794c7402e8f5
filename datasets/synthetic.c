/* A synthetic dataset of any shape, for benchmarks that should not depend on
 * files: element j of a sample of label c is drawn from N(0.5 * s(c, j), 1),
 * where s(c, j) = +-1 is a pseudo-random sign pattern fixed per class, the
 * same for every seed: two seeds give a training and a test set of one task.
 * The classes are separable by a linear model, so that training converges.
 * Samples are generated when read, each from a generator seeded by the
 * dataset's seed and the sample's index, so the same seed gives the same
 * samples in any order of reads and on every machine.
 *
 * The noise of an element is d5_rng_normal's Box-Muller draw rounded to float:
 * (float)(sqrt(-2 log(1 - u)) * cos(2 pi v)) for two uniforms u, v of the
 * sample's stream. With the C library's log and cos that costs about 30 ns
 * per element (3 ms for a batch of 32 CIFAR images), more than the step it
 * feeds may take. So the draws of a run of elements are computed first with
 * branch-free polynomials that the compiler vectorizes (relative error below
 * 1e-15, against the library's ~1e-16); an element takes the fast value only
 * when every double within a relative distance of 2^-40 around it rounds to the
 * same float, which then is the float the library's result rounds to as well.
 * The few others (about 2 in 10^5, and those whose cosine is close to zero) go
 * through the library: the samples are bit for bit those of d5_rng_normal. */
#include "dataset_internal.h"

#include <math.h>
#include <string.h>

#define SYNTHETIC_MEAN 0.5f
/* 2 pi as d5_rng_normal writes it. */
#define TWO_PI 6.283185307179586
/* Elements whose draws are computed together (stack buffers of 13 KiB). */
#define RUN 512

/* A 64-bit mix (the finalizer of splitmix64) to derive independent seeds. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* d5_rng_next (xoshiro256**), here so that the compiler inlines it. */
static inline uint64_t next(d5_rng *r)
{
    uint64_t *s = r->s, x = s[1] * 5;
    uint64_t result = ((x << 7) | (x >> 57)) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* d5_rng_uniform. */
static inline double uniform(d5_rng *r)
{
    return (double)(next(r) >> 11) * 0x1.0p-53;
}

/* d5_rng_normal from its two uniforms, with the C library. */
static double normal_libm(double u, double v)
{
    return sqrt(-2.0 * log(1.0 - u)) * cos(TWO_PI * v);
}

/* A double and its bits (C11 reads a union's other member as a
 * reinterpretation). */
typedef union f64_bits {
    double d;
    uint64_t b;
} f64_bits;
#define BITS_OF(x)   ((f64_bits){.d = (x)}.b)
#define DOUBLE_OF(x) ((f64_bits){.b = (x)}.d)

/* log(t) for a normal t > 0 to a relative error of a few 2^-53: t = 2^k m
 * with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with s = (m - 1) /
 * (m + 1), |s| < 0.172, summed to s^19 (the rest is below 1e-17 of it). */
static inline double fast_log(double t)
{
    const uint64_t sqrt_half = 0x3fe6a09e667f3bcdu, bias = (uint64_t)1024 << 52;
    uint64_t b = BITS_OF(t);
    uint64_t q = (b - sqrt_half + bias) >> 52; /* k + 1024 */
    double m = DOUBLE_OF(b - (q << 52) + bias);
    /* k as a double without an integer conversion: 2^52 + q - 2^52 - 1024. */
    double k = DOUBLE_OF(0x4330000000000000u | q) - (0x1.0p52 + 1024.0);
    double f = m - 1.0, s = f / (2.0 + f), z = s * s;
    double p = 2.0 / 19;
    p = p * z + 2.0 / 17;
    p = p * z + 2.0 / 15;
    p = p * z + 2.0 / 13;
    p = p * z + 2.0 / 11;
    p = p * z + 2.0 / 9;
    p = p * z + 2.0 / 7;
    p = p * z + 2.0 / 5;
    p = p * z + 2.0 / 3;
    p = p * z + 2.0;
    return k * 0x1.62e42fefa39efp-1 + s * p;
}

/* cos(x) for x in [0, 2 pi] to a relative error of a few 2^-53 where |cos x|
 * >= 2^-20: cos x = -sin(x - pi/2) = (-1)^(k+1) sin r with x - pi/2 = k pi
 * + r, |r| <= pi/2 (pi/2 in two parts, the first of 33 bits, so that (2k + 1)
 * times it is exact and so is x minus that near the zeros of cos), and sin r
 * by its Taylor series to r^21 (the rest is below 3e-16 of it). */
static inline double fast_cos(double x)
{
    const double pio2_1 = 0x1.921fb544p+0, pio2_1t = 0x1.0b4611a626331p-34;
    const double round = 0x1.8p52;
    double kr = (x * 0x1.45f306dc9c883p-2 - 0.5) + round; /* (x / pi - 1/2) rounded */
    uint64_t odd = BITS_OF(kr) & 1u;
    double m = 2.0 * (kr - round) + 1.0; /* 2k + 1 */
    double r = (x - m * pio2_1) - m * pio2_1t, z = r * r;
    double p = 1.0 / 51090942171709440000.0;
    p = p * z - 1.0 / 121645100408832000.0;
    p = p * z + 1.0 / 355687428096000.0;
    p = p * z - 1.0 / 1307674368000.0;
    p = p * z + 1.0 / 6227020800.0;
    p = p * z - 1.0 / 39916800.0;
    p = p * z + 1.0 / 362880.0;
    p = p * z - 1.0 / 5040.0;
    p = p * z + 1.0 / 120.0;
    p = p * z - 1.0 / 6.0;
    double s = p * z * r + r;
    /* k even: -sin r; odd: sin r. */
    return DOUBLE_OF(BITS_OF(s) ^ ((odd ^ 1u) << 63));
}

/* One run of n <= RUN elements: x[i] = the class mean (+-0.5 as bit i % 64 of
 * signs[i / 64] is 1 or 0) plus (float)normal_libm(u[i], v[i]), or NaN for the
 * elements the fast path cannot vouch for. The draws are computed for a
 * multiple of 16 elements (y holds them), so that the loop the compiler
 * vectorizes needs no scalar remainder. sqrt becomes the instruction because
 * this file is compiled with -fno-math-errno (its argument is never negative). */
static inline __attribute__((always_inline)) void
run_body(const double *restrict u, const double *restrict v, const uint64_t *restrict signs,
         float *restrict y, float *restrict x, int n)
{
    for (int i = 0; i < (n + 15) / 16 * 16; i++) {
        double c = fast_cos(TWO_PI * v[i]);
        double w = sqrt(-2.0 * fast_log(1.0 - u[i])) * c;
        double e = fabs(w) * 0x1.0p-40;
        float lo = (float)(w - e), hi = (float)(w + e);
        y[i] = lo == hi && fabs(c) >= 0x1.0p-20 ? lo : NAN;
    }
    for (unsigned i = 0; i < (unsigned)n; i++)
        x[i] = ((signs[i / 64] >> (i % 64)) & 1u ? SYNTHETIC_MEAN : -SYNTHETIC_MEAN) + y[i];
}

typedef void (*run_fn)(const double *restrict u, const double *restrict v,
                       const uint64_t *restrict signs, float *restrict y, float *restrict x, int n);

static void run_base(const double *restrict u, const double *restrict v,
                     const uint64_t *restrict signs, float *restrict y, float *restrict x, int n)
{
    run_body(u, v, signs, y, x, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void
run_avx2(const double *restrict u, const double *restrict v, const uint64_t *restrict signs,
         float *restrict y, float *restrict x, int n)
{
    run_body(u, v, signs, y, x, n);
}

__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,fma"))) static void
run_avx512(const double *restrict u, const double *restrict v, const uint64_t *restrict signs,
           float *restrict y, float *restrict x, int n)
{
    run_body(u, v, signs, y, x, n);
}
#endif

static run_fn pick_run(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("fma"))
        return run_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return run_avx2;
#endif
    return run_base;
}

static void generate(const d5_dataset *ds, int64_t index, float *x)
{
    const uint64_t label = (uint64_t)ds->labels[index];
    d5_rng noise;
    d5_rng_seed(&noise, mix(ds->seed ^ mix((uint64_t)index)));
    /* The sign pattern of the class: 64 signs per draw of its own stream. */
    d5_rng pattern;
    d5_rng_seed(&pattern, mix(0x5851f42d4c957f2du) ^ mix(~label));
    run_fn run = pick_run();
    double u[RUN], v[RUN];
    float y[RUN];
    uint64_t signs[RUN / 64];
    for (int64_t j0 = 0; j0 < ds->numel; j0 += RUN) {
        int n = ds->numel - j0 < RUN ? (int)(ds->numel - j0) : RUN;
        for (int i = 0; i < n; i++) {
            u[i] = uniform(&noise);
            v[i] = uniform(&noise);
        }
        for (int i = n; i % 16 != 0; i++) u[i] = v[i] = 0.5; /* computed, not used */
        for (int k = 0; k < (n + 63) / 64; k++) signs[k] = next(&pattern);
        if (n >= 16)
            run(u, v, signs, y, x + j0, n);
        else /* too short to gain: all through the library below */
            for (int i = 0; i < n; i++) x[j0 + i] = NAN;
        for (int i = 0; i < n; i++)
            if (isnan(x[j0 + i])) {
                float mean = (signs[i / 64] >> (i % 64)) & 1u ? SYNTHETIC_MEAN : -SYNTHETIC_MEAN;
                x[j0 + i] = mean + (float)normal_libm(u[i], v[i]);
            }
    }
}

d5_status d5_dataset_synthetic(const d5_tensor_desc *sample, int64_t n, int64_t classes,
                               uint64_t seed, d5_dataset **out)
{
    if (!sample || !out) return d5_error(D5_ERR_INVALID, "d5_dataset_synthetic: NULL argument");
    if (n < 1 || classes < 1)
        return d5_error(D5_ERR_INVALID,
                        "synthetic dataset: %lld samples of %lld classes; both must be >= 1",
                        (long long)n, (long long)classes);
    if (sample->ndim < 0 || sample->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "synthetic dataset: sample has %d dimensions",
                        (int)sample->ndim);
    int64_t numel = 1;
    for (int32_t i = 0; i < sample->ndim; i++) {
        if (sample->shape[i] < 1)
            return d5_error(D5_ERR_INVALID, "synthetic dataset: sample dimension %d is %lld",
                            (int)i, (long long)sample->shape[i]);
        if (numel > INT64_MAX / sample->shape[i])
            return d5_error(D5_ERR_RANGE, "synthetic dataset: sample size overflows");
        numel *= sample->shape[i];
    }
    d5_dataset *ds = NULL;
    d5_status s = d5__dataset_new("synthetic", sample->ndim, sample->shape, n, classes, &ds);
    if (s != D5_OK) return s;
    ds->gen = generate;
    ds->seed = seed;
    d5_rng r;
    d5_rng_seed(&r, mix(seed ^ 0x6c6162656c73u)); /* "labels" */
    for (int64_t i = 0; i < n; i++) ds->labels[i] = (int64_t)d5_rng_below(&r, (uint64_t)classes);
    *out = ds;
    return D5_OK;
}

/* Token ids of the synthetic token dataset: element j of a sample of label c
 * is, with probability 1/2, the class's token at that position, mix(c, j)
 * mod vocab (a fixed pattern per class), and otherwise uniform in
 * [0, vocab). Stored as floats (exact up to 2^24). */
static void generate_tokens(const d5_dataset *ds, int64_t index, float *x)
{
    const uint64_t label = (uint64_t)ds->labels[index];
    d5_rng r;
    d5_rng_seed(&r, mix(ds->seed ^ mix((uint64_t)index)));
    const uint64_t vocab = (uint64_t)ds->vocab, klass = mix(0x746f6b656e73u ^ mix(~label));
    for (int64_t j = 0; j < ds->numel; j++) {
        uint64_t u = next(&r);
        uint64_t id = u & 1u ? mix(klass ^ (uint64_t)j) % vocab : (u >> 1) % vocab;
        x[j] = (float)id;
    }
}

d5_status d5_dataset_synthetic_tokens(const d5_tensor_desc *sample, int64_t n, int64_t classes,
                                      int64_t vocab, uint64_t seed, d5_dataset **out)
{
    if (vocab < 1 || vocab > (1 << 24))
        return d5_error(D5_ERR_INVALID,
                        "synthetic token dataset: vocabulary %lld, expected 1..16777216 (ids are "
                        "held exactly as floats)",
                        (long long)vocab);
    d5_status s = d5_dataset_synthetic(sample, n, classes, seed, out);
    if (s != D5_OK) return s;
    (*out)->gen = generate_tokens;
    (*out)->vocab = vocab;
    return D5_OK;
}
