/* Transpose (ONNX opset 13) on the dnnl backend: any permutation, any data
 * type of 1, 2, 4 or 8 bytes, in C on oneDNN's OpenMP threads.
 *
 * At create the permutation is simplified: axes of size 1 are dropped and
 * axes that stay neighbours in the same order are merged, so that a
 * [B, S, H, D] -> [B, H, S, D] (attention heads) becomes a 4-d transpose
 * with rows of D elements, and [M, N] -> [N, M] stays 2-d. Then:
 *  - nothing moves: one copy;
 *  - the last axis stays last: rows of contiguous elements are copied;
 *  - otherwise the two axes that are contiguous in X and in Y form a 2-d
 *    transpose, done in tiles of 16 x 16 elements that stay in cache (read
 *    16 columns of X, write 16 rows of Y), repeated over the other axes.
 * Work items (rows, or tile rows of a 2-d transpose) are split among the
 * threads. Backward is the transpose of dY by the inverse permutation.
 * https://onnx.ai/onnx/operators/onnx__Transpose.html */
#include "kernels.h"

extern const d5_op_desc d5__op_ref_Transpose;

enum { T_COPY, T_ROWS, T_TILES };
#define TILE 16

typedef struct tplan {
    int kind;
    int32_t r;                /* rank after simplification */
    int64_t dim[D5_MAX_DIMS]; /* Y's dimensions */
    int64_t xs[D5_MAX_DIMS];  /* X's stride along each of Y's axes, elements */
    int64_t ys[D5_MAX_DIMS];  /* Y's strides */
    int32_t q;                /* T_TILES: Y's axis along which X is contiguous */
    int64_t numel;
    size_t esize;
} tplan;

typedef struct dtranspose {
    tplan fwd, bwd;
} dtranspose;

/* The plan of Y = X transposed by perm, X of dimensions xd[0..rank-1]. */
static void plan_make(tplan *t, const int64_t *xd, const int32_t *perm, int32_t rank, size_t esize)
{
    /* Drop the axes of size 1 and renumber the rest. */
    int32_t newid[D5_MAX_DIMS], n = 0;
    int64_t d[D5_MAX_DIMS], xs[D5_MAX_DIMS];
    t->numel = 1;
    for (int32_t i = 0; i < rank; i++) {
        t->numel *= xd[i];
        newid[i] = xd[i] != 1 ? n : -1;
        if (xd[i] != 1) d[n++] = xd[i];
    }
    int32_t p[D5_MAX_DIMS], m = 0;
    for (int32_t j = 0, k = 0; j < rank; j++)
        if (newid[perm[j]] >= 0) p[k++] = newid[perm[j]];
    int64_t stride = 1;
    for (int32_t i = n - 1; i >= 0; i--) {
        xs[i] = stride;
        stride *= d[i];
    }
    /* Y's axes j, j+1 that read X's axes i, i+1 merge into one group, whose
     * X stride is that of its last X axis. */
    for (int32_t j = 0; j < n; j++) {
        if (j > 0 && p[j] == p[j - 1] + 1) {
            t->dim[m - 1] *= d[p[j]];
            t->xs[m - 1] = xs[p[j]];
            continue;
        }
        t->dim[m] = d[p[j]];
        t->xs[m++] = xs[p[j]];
    }
    t->r = m;
    t->esize = esize;
    stride = 1;
    for (int32_t j = m - 1; j >= 0; j--) {
        t->ys[j] = stride;
        stride *= t->dim[j];
    }
    t->q = -1;
    for (int32_t j = 0; j < m; j++)
        if (t->xs[j] == 1) t->q = j;
    t->kind = m <= 1 || t->numel == 0 ? T_COPY : t->q == m - 1 ? T_ROWS : T_TILES;
}

/* Offsets in X and Y of the `idx`-th combination of Y's axes other than
 * skip1 and skip2 (-1: none), the last of them varying fastest. */
static void offsets(const tplan *t, int64_t idx, int32_t skip1, int32_t skip2, int64_t *xo,
                    int64_t *yo)
{
    int64_t x = 0, y = 0;
    for (int32_t j = t->r - 1; j >= 0; j--) {
        if (j == skip1 || j == skip2) continue;
        int64_t c = idx % t->dim[j];
        idx /= t->dim[j];
        x += c * t->xs[j];
        y += c * t->ys[j];
    }
    *xo = x;
    *yo = y;
}

/* The 2-d tiles: Y[a * ya + b] = X[a + b * xb] for a < na, b < nb. */
#define TILES(T)                                                                                   \
    static void tiles_##T(T *restrict y, const T *restrict x, int64_t na, int64_t nb, int64_t ya,  \
                          int64_t xb, int64_t a0, int64_t a1)                                      \
    {                                                                                              \
        for (int64_t b0 = 0; b0 < nb; b0 += TILE) {                                                \
            int64_t b1 = b0 + TILE < nb ? b0 + TILE : nb;                                          \
            for (int64_t a = a0; a < a1; a++) {                                                    \
                T *yr = y + a * ya;                                                                \
                const T *xc = x + a;                                                               \
                for (int64_t b = b0; b < b1; b++) yr[b] = xc[b * xb];                              \
            }                                                                                      \
        }                                                                                          \
        (void)na;                                                                                  \
    }
TILES(uint8_t)
TILES(uint16_t)
TILES(uint32_t)
TILES(uint64_t)

static void run_plan(const tplan *t, const void *xv, void *yv)
{
    const char *x = xv;
    char *y = yv;
    size_t es = t->esize;
    int parallel = (double)t->numel * (double)es >= D5_PARALLEL_BYTES;
    if (t->kind == T_COPY) {
        memcpy(y, x, (size_t)t->numel * es);
        return;
    }
    if (t->kind == T_ROWS) {
        int64_t len = t->dim[t->r - 1], rows = t->numel / len;
        D5_PARALLEL_RANGE(rows, parallel, lo, hi, {
            for (int64_t i = lo; i < hi; i++) {
                int64_t xo, yo;
                offsets(t, i, t->r - 1, -1, &xo, &yo);
                memcpy(y + (size_t)yo * es, x + (size_t)xo * es, (size_t)len * es);
            }
        })
        return;
    }
    int32_t q = t->q, l = t->r - 1;
    int64_t na = t->dim[q], nb = t->dim[l], ya = t->ys[q], xb = t->xs[l];
    int64_t atiles = (na + TILE - 1) / TILE, outer = t->numel / (na * nb);
    D5_PARALLEL_RANGE(outer * atiles, parallel, lo, hi, {
        for (int64_t i = lo; i < hi; i++) {
            int64_t xo, yo, a0 = (i % atiles) * TILE, a1 = a0 + TILE < na ? a0 + TILE : na;
            offsets(t, i / atiles, q, l, &xo, &yo);
            switch (es) {
            case 1:
                tiles_uint8_t((uint8_t *)y + yo, (const uint8_t *)x + xo, na, nb, ya, xb, a0, a1);
                break;
            case 2:
                tiles_uint16_t((uint16_t *)(void *)y + yo, (const uint16_t *)(const void *)x + xo,
                               na, nb, ya, xb, a0, a1);
                break;
            case 4:
                tiles_uint32_t((uint32_t *)(void *)y + yo, (const uint32_t *)(const void *)x + xo,
                               na, nb, ya, xb, a0, a1);
                break;
            default:
                tiles_uint64_t((uint64_t *)(void *)y + yo, (const uint64_t *)(const void *)x + xo,
                               na, nb, ya, xb, a0, a1);
                break;
            }
        }
    })
}

static d5_status transpose_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__dnnl_ref_shapes(&d5__op_ref_Transpose, args);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    size_t es = d5_dtype_size((d5_dtype)x->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return d5_error(D5_ERR_UNSUPPORTED, "Transpose (dnnl): elements of %zu bytes", es);
    const int64_t *perm = NULL;
    int64_t n = 0;
    s = d5_attrs_ints(attrs, "perm", &perm, &n);
    if (s != D5_OK) return s;
    int32_t p[D5_MAX_DIMS], inv[D5_MAX_DIMS];
    for (int32_t j = 0; j < x->ndim; j++) p[j] = perm ? (int32_t)perm[j] : x->ndim - 1 - j;
    for (int32_t j = 0; j < x->ndim; j++) inv[p[j]] = j;
    dtranspose *t = d5_calloc(1, sizeof *t, "Transpose");
    if (!t) return D5_ERR_NOMEM;
    plan_make(&t->fwd, x->shape, p, x->ndim, es);
    plan_make(&t->bwd, out[0].shape, inv, x->ndim, es);
    *state = t;
    return D5_OK;
}

static d5_status transpose_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const dtranspose *t = state;
    run_plan(&t->fwd, in[0].data, out[0].data);
    return D5_OK;
}

static d5_status transpose_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    d5_tensor *gin = call->grad_inputs;
    const dtranspose *t = state;
    if (!gin[0].data) return D5_OK;
    if (!gout[0].data) {
        memset(gin[0].data, 0, (size_t)t->bwd.numel * t->bwd.esize);
        return D5_OK;
    }
    run_plan(&t->bwd, gout[0].data, gin[0].data);
    return D5_OK;
}

static void transpose_destroy(void *state)
{
    d5_free(state);
}

static void transpose_cost(void *state, double *flops, double *bytes)
{
    const dtranspose *t = state;
    *flops = 0;
    *bytes = 2.0 * (double)t->fwd.numel * (double)t->fwd.esize;
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Transpose = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "Transpose",
    .backend = "dnnl", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = transpose_create, .forward = transpose_forward, .backward = transpose_backward,
    .destroy = transpose_destroy, .cost = transpose_cost};
/* clang-format on */
