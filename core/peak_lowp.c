/* Low-precision peak kernels: bfloat16 dot products (AVX512_BF16), float16
 * multiply-adds (AVX512_FP16), int8 dot products (AVX512_VNNI or AVX-VNNI),
 * and the CPUID and XCR0 checks that choose among them at run time. */
#include "peak_kernels.h"

#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* ---- What the CPU has and the OS has enabled ---- */

#if defined(__x86_64__)
static uint64_t xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

uint32_t d5__cpu_lowp(void)
{
    uint32_t f = 0;
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* no OSXSAVE */
    uint64_t x = xcr0();
    int avx_os = (x & 0x6) == 0x6;         /* XMM and YMM state */
    int avx512_os = (x & 0xe6) == 0xe6;    /* and opmask, ZMM_Hi256, Hi16_ZMM */
    int amx_os = (x & 0x60000) == 0x60000; /* XTILECFG and XTILEDATA */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    unsigned leaf7_ebx = b, leaf7_ecx = c, leaf7_edx = d, subleafs = a;
    unsigned leaf7_1_eax = 0;
    if (subleafs >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) leaf7_1_eax = a;
    int avx512f = avx512_os && (leaf7_ebx & (1u << 16));
    int avx512bw = avx512f && (leaf7_ebx & (1u << 30));
    if (avx512f && (leaf7_1_eax & (1u << 5))) f |= D5__CPU_AVX512_BF16;
    if (avx512bw && (leaf7_edx & (1u << 23))) f |= D5__CPU_AVX512_FP16;
    if (avx512f && (leaf7_ecx & (1u << 11))) f |= D5__CPU_AVX512_VNNI;
    if (avx_os && (leaf7_1_eax & (1u << 4))) f |= D5__CPU_AVX_VNNI;
    if (amx_os && (leaf7_edx & (1u << 24))) {
        f |= D5__CPU_AMX_TILE;
        if (leaf7_edx & (1u << 22)) f |= D5__CPU_AMX_BF16;
        if (leaf7_edx & (1u << 25)) f |= D5__CPU_AMX_INT8;
    }
#endif
    return f;
}

void d5__cpu_lowp_names(uint32_t features, char *buf, size_t size)
{
    static const char *const names[] = {"avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni",
                                        "amx_tile",    "amx_bf16",    "amx_int8"};
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0] && used < size; i++)
        if (features & (1u << i))
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "", names[i]);
}

/* ---- Kernels: 16 independent accumulators (two per cycle on two ports with
 * a latency of up to 8 cycles), operands of ones hidden from the compiler so
 * that nothing is folded. ---- */

#if defined(__x86_64__)
#define CHAINS 16

__attribute__((target("avx512f,avx512bf16"))) static float bf16_dot(uint32_t iters, float seed)
{
    (void)seed;
    __m512i ones = _mm512_set1_epi16(0x3f80); /* bfloat16 1.0 in every element */
    __asm__("" : "+v"(ones));
    const __m512bh x = (__m512bh)ones;
    __m512 acc[CHAINS];
    for (int k = 0; k < CHAINS; k++) acc[k] = _mm512_setzero_ps();
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) acc[k] = _mm512_dpbf16_ps(acc[k], x, x);
    double sum = 0;
    for (int k = 0; k < CHAINS; k++) sum += _mm512_reduce_add_ps(acc[k]);
    return (float)sum;
}
#define BF16_DOT_OPS (CHAINS * 16.0 * 2 * 2) /* 16 lanes, 2 pairs each */

/* The float16 FMA is written in assembly: the compilers' AVX512_FP16
 * intrinsics exist only when the whole file is built for that instruction
 * set (clang 14), which would let other code here use it too. Two asm
 * statements of eight accumulators each (an asm takes at most 30 operands,
 * an in-out one counting twice) keep all CHAINS (16) in registers. */
#define F16_FMA(k) "vfmadd213ph %8, %8, %" #k "\n\t"
#define F16_FMA8(a, b, c, d, e, f, g, h, one)                                                      \
    __asm__(F16_FMA(0) F16_FMA(1) F16_FMA(2) F16_FMA(3) F16_FMA(4) F16_FMA(5) F16_FMA(6)           \
                F16_FMA(7)                                                                         \
            : "+v"(a), "+v"(b), "+v"(c), "+v"(d), "+v"(e), "+v"(f), "+v"(g), "+v"(h)               \
            : "v"(one))
__attribute__((target("avx512f,avx512bw"))) static float f16_fma(uint32_t iters, float seed)
{
    (void)seed;
    /* acc = acc * 1 + 1 counts the multiply-adds until 2048, then stays
     * there: float16 has no subnormals or infinities on the way. Sixteen
     * named accumulators (CHAINS): an array would live in memory. */
    __m512i one = _mm512_set1_epi16(0x3c00); /* float16 1.0 in every lane */
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
            a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0;
    for (uint32_t i = 0; i < iters; i++) {
        F16_FMA8(a0, a1, a2, a3, a4, a5, a6, a7, one);
        F16_FMA8(a8, a9, a10, a11, a12, a13, a14, a15, one);
    }
    const __m512i a[CHAINS] = {a0, a1, a2,  a3,  a4,  a5,  a6,  a7,
                               a8, a9, a10, a11, a12, a13, a14, a15};
    double sum = 0;
    for (int k = 0; k < CHAINS; k++) {
        sum += _mm512_reduce_add_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(a[k], 0)));
        sum += _mm512_reduce_add_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(a[k], 1)));
    }
    return (float)sum;
}
#undef F16_FMA8
#undef F16_FMA
#define F16_FMA_OPS (CHAINS * 32.0 * 2)

__attribute__((target("avx512f,avx512vnni"))) static float int8_dot512(uint32_t iters, float seed)
{
    (void)seed;
    __m512i ones = _mm512_set1_epi8(1);
    __asm__("" : "+v"(ones));
    __m512i acc[CHAINS];
    for (int k = 0; k < CHAINS; k++) acc[k] = _mm512_setzero_si512();
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) acc[k] = _mm512_dpbusd_epi32(acc[k], ones, ones);
    double sum = 0;
    for (int k = 0; k < CHAINS; k++) {
        int32_t v[16];
        _mm512_storeu_si512(v, acc[k]);
        for (int j = 0; j < 16; j++) sum += v[j];
    }
    return (float)sum;
}
#define INT8_DOT512_OPS (CHAINS * 16.0 * 4 * 2) /* 16 lanes, 4 products each */

__attribute__((target("avx2,avxvnni"))) static float int8_dot256(uint32_t iters, float seed)
{
    (void)seed;
    __m256i ones = _mm256_set1_epi8(1);
    __asm__("" : "+x"(ones));
    __m256i acc[CHAINS];
    for (int k = 0; k < CHAINS; k++) acc[k] = _mm256_setzero_si256();
    for (uint32_t i = 0; i < iters; i++)
        for (int k = 0; k < CHAINS; k++) acc[k] = _mm256_dpbusd_avx_epi32(acc[k], ones, ones);
    double sum = 0;
    for (int k = 0; k < CHAINS; k++) {
        int32_t v[8];
        _mm256_storeu_si256((__m256i *)v, acc[k]);
        for (int j = 0; j < 8; j++) sum += v[j];
    }
    return (float)sum;
}
#define INT8_DOT256_OPS (CHAINS * 8.0 * 4 * 2)
#endif

static void unavailable(d5__peak_kernel *k, const char *isa)
{
    snprintf(k->reason, sizeof k->reason, "not available on this CPU (no %s)", isa);
}

void d5__peak_kernel_get(d5_peak_kind kind, d5__peak_kernel *k)
{
    memset(k, 0, sizeof *k);
    k->isa = "";
    k->instruction = "";
    uint32_t f = d5__cpu_lowp();
#if defined(__x86_64__)
    switch (kind) {
    case D5_PEAK_BF16_DOT:
        if (!(f & D5__CPU_AVX512_BF16)) {
            unavailable(k, "AVX512_BF16");
            return;
        }
        *k = (d5__peak_kernel){bf16_dot, 100000, BF16_DOT_OPS, "avx512_bf16", "vdpbf16ps zmm", ""};
        return;
    case D5_PEAK_F16_FMA:
        if (!(f & D5__CPU_AVX512_FP16)) {
            unavailable(k, "AVX512_FP16");
            return;
        }
        *k = (d5__peak_kernel){f16_fma, 100000, F16_FMA_OPS, "avx512_fp16", "vfmadd213ph zmm", ""};
        return;
    case D5_PEAK_INT8_DOT:
        if (f & D5__CPU_AVX512_VNNI)
            *k = (d5__peak_kernel){int8_dot512,   100000,         INT8_DOT512_OPS,
                                   "avx512_vnni", "vpdpbusd zmm", ""};
        else if (f & D5__CPU_AVX_VNNI)
            *k = (d5__peak_kernel){int8_dot256, 100000,         INT8_DOT256_OPS,
                                   "avx_vnni",  "vpdpbusd ymm", ""};
        else
            unavailable(k, "AVX512_VNNI or AVX-VNNI");
        return;
    case D5_PEAK_AMX_BF16:
    case D5_PEAK_AMX_INT8: {
        int bf = kind == D5_PEAK_AMX_BF16;
        if (!(f & (bf ? D5__CPU_AMX_BF16 : D5__CPU_AMX_INT8))) {
            unavailable(k, bf ? "AMX-BF16" : "AMX-INT8");
            return;
        }
        if (!d5__amx_permit(k->reason, sizeof k->reason)) return;
        *k = bf ? (d5__peak_kernel){d5__amx_bf16, 20000,       D5__AMX_BF16_OPS,
                                    "amx_bf16",   "tdpbf16ps", ""}
                : (d5__peak_kernel){d5__amx_int8, 20000,     D5__AMX_INT8_OPS,
                                    "amx_int8",   "tdpbusd", ""};
        return;
    }
    default: break;
    }
    snprintf(k->reason, sizeof k->reason, "no such peak kernel (%d)", (int)kind);
#else
    (void)f;
    snprintf(k->reason, sizeof k->reason, "not available on this CPU (not x86-64)");
    (void)kind;
#endif
}
