/* Erf (ONNX opset 13) and Gelu (opset 20, approximate "none" or "tanh") on
 * the dnnl backend, float32, element by element with the polynomials of
 * kernels.h (erf within 5e-7 of the exact value; oneDNN 2.6's eltwise has
 * GELU but no erf), in chunks split among the threads. Gelu "none" is
 * 0.5 x (1 + erf(x / sqrt(2))), the form PyTorch's GELU exports as five
 * nodes (Div, Erf, Add, Mul, Mul) and that the graph pass fuse-gelu turns
 * back into one Gelu. Backward: erf'(x) = 2 / sqrt(pi) exp(-x^2); Gelu's as
 * in ref/gelu.c.
 * https://onnx.ai/onnx/operators/onnx__Erf.html
 * https://onnx.ai/onnx/operators/onnx__Gelu.html */
#include "kernels.h"

#include <string.h>

extern const d5_op_desc d5__op_ref_Erf, d5__op_ref_Gelu;

#define CHUNK          16384
#define SQRT_HALF      0.70710678118654752440f
#define TWO_BY_SQRT_PI 1.12837916709551257390f
#define INV_SQRT_2PI   0.39894228040143267794f
#define SQRT_2_BY_PI   0.79788456080286535588f
#define GELU_CUBIC     0.044715f

enum { K_ERF, K_GELU, K_GELU_TANH };

typedef struct derf {
    int kind;
    int64_t n;
} derf;

static D5_CLONES void erf_chunk(int kind, const float *restrict x, float *restrict y, int64_t n)
{
    if (kind == K_ERF) {
        D5_SIMD
        for (int64_t i = 0; i < n; i++) y[i] = d5__erff(x[i]);
    } else if (kind == K_GELU) {
        D5_SIMD
        for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + d5__erff(x[i] * SQRT_HALF));
    } else {
        D5_SIMD
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            y[i] = 0.5f * v * (1.0f + d5__tanhf(SQRT_2_BY_PI * (v + GELU_CUBIC * v * v * v)));
        }
    }
}

/* dx may be dy (D5_OP_GRAD_IN_PLACE). */
static D5_CLONES void erf_chunk_backward(int kind, const float *restrict x, const float *dy,
                                         float *dx, int64_t n)
{
    if (kind == K_ERF) {
        D5_SIMD
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * TWO_BY_SQRT_PI * d5__expf(-x[i] * x[i]);
    } else if (kind == K_GELU) {
        D5_SIMD
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            float d = 0.5f * (1.0f + d5__erff(v * SQRT_HALF)) +
                      v * INV_SQRT_2PI * d5__expf(-0.5f * v * v);
            dx[i] = dy[i] * d;
        }
    } else {
        D5_SIMD
        for (int64_t i = 0; i < n; i++) {
            float v = x[i], t = d5__tanhf(SQRT_2_BY_PI * (v + GELU_CUBIC * v * v * v));
            float d = 0.5f * (1.0f + t) +
                      0.5f * v * (1.0f - t * t) * SQRT_2_BY_PI * (1.0f + 3 * GELU_CUBIC * v * v);
            dx[i] = dy[i] * d;
        }
    }
}

static d5_status create(const d5_op_desc *ref, const char *name, const d5_op_create_args *args,
                        void **state)
{
    d5_status s = d5__dnnl_f32_shapes(ref, name, args);
    if (s != D5_OK) return s;
    int kind = K_ERF;
    if (ref == &d5__op_ref_Gelu) {
        const char *approx = "none";
        s = d5_attrs_string(args->attrs, "approximate", "none", &approx);
        if (s != D5_OK) return s;
        kind = strcmp(approx, "tanh") == 0 ? K_GELU_TANH : K_GELU;
    }
    derf *e = d5_calloc(1, sizeof *e, name);
    if (!e) return D5_ERR_NOMEM;
    e->kind = kind;
    e->n = d5_tensor_desc_numel(&args->inputs[0].desc);
    *state = e;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const derf *e = state;
    const float *x = call->inputs[0].data;
    float *y = call->outputs[0].data;
    int64_t chunks = (e->n + CHUNK - 1) / CHUNK;
    D5_PARALLEL_RANGE(chunks, chunks > 1, lo, hi, {
        for (int64_t c = lo; c < hi; c++) {
            int64_t a = c * CHUNK, b = a + CHUNK < e->n ? a + CHUNK : e->n;
            erf_chunk(e->kind, x + a, y + a, b - a);
        }
    })
    return D5_OK;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const derf *e = state;
    float *dx = d5__dnnl_grad_begin(call, e->n);
    if (!dx) return D5_OK;
    const float *x = call->inputs[0].data, *dy = call->grad_outputs[0].data;
    int64_t chunks = (e->n + CHUNK - 1) / CHUNK;
    D5_PARALLEL_RANGE(chunks, chunks > 1, lo, hi, {
        for (int64_t c = lo; c < hi; c++) {
            int64_t a = c * CHUNK, b = a + CHUNK < e->n ? a + CHUNK : e->n;
            erf_chunk_backward(e->kind, x + a, dy + a, dx + a, b - a);
        }
    })
    return D5_OK;
}

static void destroy(void *state)
{
    d5_free(state);
}

static void cost(void *state, double *flops, double *bytes)
{
    const derf *e = state;
    *flops = 20.0 * (double)e->n;
    *bytes = 8.0 * (double)e->n;
}

static d5_status erf_create(const d5_op_create_args *args, void **state)
{
    return create(&d5__op_ref_Erf, "Erf", args, state);
}

static d5_status gelu_create(const d5_op_create_args *args, void **state)
{
    return create(&d5__op_ref_Gelu, "Gelu", args, state);
}

/* dX is computed element by element from dY: in place is fine. */
/* clang-format off */
const d5_op_desc d5__op_dnnl_Erf = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD | D5_OP_GRAD_IN_PLACE,
    .name = "Erf", .backend = "dnnl", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
    .max_outputs = 1, .create = erf_create, .forward = forward, .backward = backward,
    .destroy = destroy, .cost = cost};
/* clang-format on */
/* clang-format off */
const d5_op_desc d5__op_dnnl_Gelu = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD | D5_OP_GRAD_IN_PLACE,
    .name = "Gelu", .backend = "dnnl", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
    .max_outputs = 1, .create = gelu_create, .forward = forward, .backward = backward,
    .destroy = destroy, .cost = cost};
/* clang-format on */
