/* Where (ONNX opset 16) on the dnnl backend: Y = condition ? X : Y's second
 * operand, element by element with numpy broadcasting of all three inputs
 * (a causal mask [1, 1, S, S] over attention scores [B, H, S, S] with a
 * scalar fill), for elements of 1, 2, 4 or 8 bytes. The output is walked row
 * by row along its last axis, each input with stride 0 or 1 there; rows are
 * split among the threads. No backward: training runs ref's.
 * https://onnx.ai/onnx/operators/onnx__Where.html */
#include "kernels.h"

extern const d5_op_desc d5__op_ref_Where;

typedef struct dwhere {
    int32_t ndim;
    int64_t dim[D5_MAX_DIMS];
    int64_t st[3][D5_MAX_DIMS]; /* each input's stride along each output axis; 0 broadcast */
    int64_t numel;
    size_t esize;
} dwhere;

/* One row: each input's stride is 0 (broadcast) or 1. The strides are
 * passed as constants from a switch over their eight combinations, so that
 * each copy is inlined with them known and vectorised (a causal mask over
 * scores with a scalar fill is (1, 1, 0)). */
#define WHERE_ROW(T)                                                                               \
    static inline __attribute__((always_inline)) void row_##T##_k(                                 \
        const uint8_t *restrict c, const T *restrict x, const T *restrict y, T *restrict out,      \
        int64_t n, int64_t sc, int64_t sx, int64_t sy)                                             \
    {                                                                                              \
        D5_SIMD                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T a = x[i * sx], b = y[i * sy]; /* both read: a select, not a branch */                \
            out[i] = c[i * sc] ? a : b;                                                            \
        }                                                                                          \
    }                                                                                              \
    static D5_CLONES void row_##T(const uint8_t *c, const T *x, const T *y, T *out, int64_t n,     \
                                  int64_t sc, int64_t sx, int64_t sy)                              \
    {                                                                                              \
        switch ((sc != 0) << 2 | (sx != 0) << 1 | (sy != 0)) {                                     \
        case 0: row_##T##_k(c, x, y, out, n, 0, 0, 0); break;                                      \
        case 1: row_##T##_k(c, x, y, out, n, 0, 0, 1); break;                                      \
        case 2: row_##T##_k(c, x, y, out, n, 0, 1, 0); break;                                      \
        case 3: row_##T##_k(c, x, y, out, n, 0, 1, 1); break;                                      \
        case 4: row_##T##_k(c, x, y, out, n, 1, 0, 0); break;                                      \
        case 5: row_##T##_k(c, x, y, out, n, 1, 0, 1); break;                                      \
        case 6: row_##T##_k(c, x, y, out, n, 1, 1, 0); break;                                      \
        default: row_##T##_k(c, x, y, out, n, 1, 1, 1); break;                                     \
        }                                                                                          \
    }
WHERE_ROW(uint8_t)
WHERE_ROW(uint16_t)
WHERE_ROW(uint32_t)
WHERE_ROW(uint64_t)

static d5_status where_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__dnnl_ref_shapes(&d5__op_ref_Where, args);
    if (s != D5_OK) return s;
    size_t es = d5_dtype_size((d5_dtype)in[1].desc.dtype);
    if (in[0].desc.dtype != D5_BOOL || (es != 1 && es != 2 && es != 4 && es != 8))
        return d5_error(D5_ERR_UNSUPPORTED, "Where (dnnl): a bool condition and elements of 1, 2, "
                                            "4 or 8 bytes");
    dwhere *w = d5_calloc(1, sizeof *w, "Where");
    if (!w) return D5_ERR_NOMEM;
    w->ndim = out[0].ndim > 0 ? out[0].ndim : 1;
    w->esize = es;
    w->numel = 1;
    for (int32_t d = 0; d < w->ndim; d++) {
        w->dim[d] = out[0].ndim > 0 ? out[0].shape[d] : 1;
        w->numel *= w->dim[d];
    }
    for (int k = 0; k < 3; k++) {
        const d5_tensor_desc *t = &in[k].desc;
        int64_t stride = 1;
        for (int32_t d = w->ndim - 1; d >= 0; d--) {
            int32_t td = d - (w->ndim - t->ndim);
            int64_t size = td >= 0 ? t->shape[td] : 1;
            w->st[k][d] = size == 1 ? 0 : stride;
            stride *= size;
        }
    }
    *state = w;
    return D5_OK;
}

static d5_status where_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const dwhere *w = state;
    int32_t last = w->ndim - 1;
    int64_t n = w->dim[last], rows = n ? w->numel / n : 0;
    const char *x = in[1].data, *y = in[2].data;
    const uint8_t *c = in[0].data;
    char *o = out[0].data;
    size_t es = w->esize;
    int parallel = (double)w->numel * (double)es >= D5_PARALLEL_BYTES;
    D5_PARALLEL_RANGE(rows, parallel, lo, hi, {
        for (int64_t r = lo; r < hi; r++) {
            int64_t off[3] = {0, 0, 0}, idx = r;
            for (int32_t d = last - 1; d >= 0; d--) {
                int64_t i = idx % w->dim[d];
                idx /= w->dim[d];
                for (int k = 0; k < 3; k++) off[k] += i * w->st[k][d];
            }
            const uint8_t *cr = c + off[0];
            const void *xr = x + (size_t)off[1] * es, *yr = y + (size_t)off[2] * es;
            void *orow = o + (size_t)(r * n) * es;
            int64_t sc = w->st[0][last], sx = w->st[1][last], sy = w->st[2][last];
            switch (es) {
            case 1: row_uint8_t(cr, xr, yr, orow, n, sc, sx, sy); break;
            case 2: row_uint16_t(cr, xr, yr, orow, n, sc, sx, sy); break;
            case 4: row_uint32_t(cr, xr, yr, orow, n, sc, sx, sy); break;
            default: row_uint64_t(cr, xr, yr, orow, n, sc, sx, sy); break;
            }
        }
    })
    return D5_OK;
}

static void where_destroy(void *state)
{
    d5_free(state);
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Where = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "Where", .backend = "dnnl",
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .create = where_create,
    .forward = where_forward, .destroy = where_destroy};
/* clang-format on */
