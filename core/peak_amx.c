/* AMX peak kernels: tdpbf16ps and tdpbusd on four accumulator tiles (2 x 2
 * blocking over two A and two B tiles, as a GEMM's inner loop does), and the
 * request for the tile data state that Linux wants before a process uses it. */
#define _GNU_SOURCE
#include "peak_kernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#define HAVE_AMX 1
#else
#define HAVE_AMX 0
#endif

/* arch_prctl codes and the XSAVE feature number, from Linux's
 * arch/x86/include/uapi/asm/prctl.h (not in every libc's headers). */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

static pthread_once_t permit_once = PTHREAD_ONCE_INIT;
static int permit_ok;
static char permit_why[160];

static void permit_request(void)
{
#if HAVE_AMX
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0) {
        permit_ok = 1;
        return;
    }
    snprintf(permit_why, sizeof permit_why,
             "AMX: not permitted by the kernel: arch_prctl(ARCH_REQ_XCOMP_PERM, "
             "XFEATURE_XTILEDATA): %s",
             strerror(errno));
#else
    snprintf(permit_why, sizeof permit_why, "AMX: not available on this system");
#endif
}

int d5__amx_permit(char *why, size_t size)
{
    pthread_once(&permit_once, permit_request);
    if (!permit_ok && size) snprintf(why, size, "%s", permit_why);
    return permit_ok;
}

#if HAVE_AMX
/* The tile configuration of palette 1: 16 rows of 64 bytes in tiles 0-7. */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* In static storage rather than filled on the stack: GCC 12's
 * _tile_loadconfig tells the compiler it reads only the first 8 bytes, so
 * stores to the rest of a local configuration may be dropped. */
static const tile_config tile_cfg = {.palette = 1,
                                     .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
                                     .rows = {16, 16, 16, 16, 16, 16, 16, 16}};

/* Configures the tiles, zeroes the accumulators 0-3 and loads the A tiles 4
 * and 5 and the B tiles 6 and 7 from `ones` (16 rows of 64 bytes). */
__attribute__((target("amx-tile"))) static void tiles_begin(const void *ones)
{
    _tile_loadconfig(&tile_cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ones, 64);
    _tile_loadd(5, ones, 64);
    _tile_loadd(6, ones, 64);
    _tile_loadd(7, ones, 64);
}

/* `iters` rounds of the 2 x 2 blocking with the tile instruction `dp`
 * (_tile_dpbf16ps, _tile_dpbusd): accumulator 0 += A4 B6, 1 += A4 B7,
 * 2 += A5 B6, 3 += A5 B7. The instruction is fixed at compile time. */
#define DP_2X2(dp, iters)                                                                          \
    for (uint32_t i_ = 0; i_ < (iters); i_++) {                                                    \
        dp(0, 4, 6);                                                                               \
        dp(1, 4, 7);                                                                               \
        dp(2, 5, 6);                                                                               \
        dp(3, 5, 7);                                                                               \
    }

/* The sum of the four accumulator tiles (16 x 16 float32 or int32 each),
 * then the tiles released. */
#define SUM_TILES(type, sum)                                                                       \
    do {                                                                                           \
        type c_[4][16 * 16];                                                                       \
        _tile_stored(0, c_[0], 64);                                                                \
        _tile_stored(1, c_[1], 64);                                                                \
        _tile_stored(2, c_[2], 64);                                                                \
        _tile_stored(3, c_[3], 64);                                                                \
        _tile_release();                                                                           \
        for (int t_ = 0; t_ < 4; t_++)                                                             \
            for (int i_ = 0; i_ < 16 * 16; i_++) sum += (double)c_[t_][i_];                        \
    } while (0)

__attribute__((target("amx-tile,amx-bf16"))) float d5__amx_bf16(uint32_t iters, float seed)
{
    (void)seed;
    uint16_t ones[16 * 32]; /* bfloat16 1.0: A is 16 x 32, B 16 rows of 16 pairs */
    for (int i = 0; i < 16 * 32; i++) ones[i] = 0x3f80;
    tiles_begin(ones);
    DP_2X2(_tile_dpbf16ps, iters);
    double sum = 0;
    SUM_TILES(float, sum);
    return (float)sum;
}

__attribute__((target("amx-tile,amx-int8"))) float d5__amx_int8(uint32_t iters, float seed)
{
    (void)seed;
    uint8_t ones[16 * 64]; /* u8 1 in A (16 x 64), s8 1 in B (16 rows of 16 quads) */
    memset(ones, 1, sizeof ones);
    tiles_begin(ones);
    DP_2X2(_tile_dpbusd, iters);
    double sum = 0;
    SUM_TILES(int32_t, sum);
    return (float)sum;
}
#else
float d5__amx_bf16(uint32_t iters, float seed)
{
    (void)iters;
    return seed;
}
float d5__amx_int8(uint32_t iters, float seed)
{
    (void)iters;
    return seed;
}
#endif
