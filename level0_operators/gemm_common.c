/* Gemm (ONNX opset 13) on any row-major sgemm: Y = alpha A' B' + beta C,
 * float32. C may be a scalar, a row (N), a column (M, 1) or a full (M, N)
 * matrix. The blas and dnnl backends differ only in the sgemm they pass.
 * https://onnx.ai/onnx/operators/onnx__Gemm.html */
#include "gemm_common.h"

#include <string.h>

struct bgemm {
    d5_sgemm_fn sgemm;
    int64_t m, n, k;
    int ta, tb;
    float alpha, beta;
    int64_t cm, cn; /* shape of C as (rows, cols) after broadcasting rules; 0: no C */
};

static d5_status need_f32(const char *backend, const d5_tensor *in, int32_t nin, int32_t i)
{
    if (i >= nin || in[i].desc.dtype == D5_DTYPE_INVALID)
        return d5_error(D5_ERR_INVALID, "Gemm (%s): input %d is required", backend, i);
    if (in[i].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Gemm (%s): input %d is %s; the %s backend runs "
                        "float32 only",
                        backend, i, d5_dtype_name((d5_dtype)in[i].desc.dtype), backend);
    return D5_OK;
}

d5_status d5__gemm_dims(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_gemm_dims *out)
{
    int64_t ta, tb;
    double alpha, beta;
    d5_status s = d5_attrs_int(attrs, "transA", 0, &ta);
    if (s == D5_OK) s = d5_attrs_int(attrs, "transB", 0, &tb);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1.0, &alpha);
    if (s == D5_OK) s = d5_attrs_float(attrs, "beta", 1.0, &beta);
    if (s != D5_OK) return s;
    const d5_tensor_desc *a = &in[0].desc, *b = &in[1].desc;
    if (a->ndim != 2 || b->ndim != 2)
        return d5_error(D5_ERR_SHAPE, "Gemm: A and B must be 2-d, got %d-d and %d-d", (int)a->ndim,
                        (int)b->ndim);
    d5_gemm_dims g = {ta ? a->shape[1] : a->shape[0],
                      tb ? b->shape[0] : b->shape[1],
                      ta ? a->shape[0] : a->shape[1],
                      ta != 0,
                      tb != 0,
                      (float)alpha,
                      (float)beta,
                      0,
                      0};
    int64_t kb = tb ? b->shape[1] : b->shape[0];
    if (kb != g.k)
        return d5_error(D5_ERR_SHAPE, "Gemm: A' is %lldx%lld but B' is %lldx%lld", (long long)g.m,
                        (long long)g.k, (long long)kb, (long long)g.n);
    if (nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID) {
        const d5_tensor_desc *c = &in[2].desc;
        g.cm = c->ndim == 2 ? c->shape[0] : 1;
        g.cn = c->ndim >= 1 ? c->shape[c->ndim - 1] : 1;
        if (c->ndim > 2 || (g.cm != 1 && g.cm != g.m) || (g.cn != 1 && g.cn != g.n))
            return d5_error(D5_ERR_SHAPE, "Gemm: C does not broadcast to %lldx%lld", (long long)g.m,
                            (long long)g.n);
    }
    *out = g;
    return D5_OK;
}

d5_status d5__gemm_create(const char *backend, d5_sgemm_fn sgemm, const d5_tensor *in, int32_t nin,
                          const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    d5_status s = need_f32(backend, in, nin, 0);
    if (s == D5_OK) s = need_f32(backend, in, nin, 1);
    if (s == D5_OK && nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID)
        s = need_f32(backend, in, nin, 2);
    d5_gemm_dims d;
    if (s == D5_OK) s = d5__gemm_dims(in, nin, attrs, &d);
    if (s != D5_OK) return s;
    bgemm g = {sgemm, d.m, d.n, d.k, d.ta, d.tb, d.alpha, d.beta, d.cm, d.cn};
    out[0].dtype = D5_F32;
    out[0].ndim = 2;
    out[0].shape[0] = g.m;
    out[0].shape[1] = g.n;
    bgemm *st = d5_alloc(sizeof *st, "Gemm");
    if (!st) return D5_ERR_NOMEM;
    *st = g;
    *state = st;
    return D5_OK;
}

d5_status d5__gemm_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const bgemm *g = state;
    float *y = out[0].data;
    float beta = 0;
    if (g->cm) { /* Y = broadcast(C), then accumulate beta Y */
        const float *c = in[2].data;
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++)
                y[i * g->n + j] = c[(g->cm == 1 ? 0 : i) * g->cn + (g->cn == 1 ? 0 : j)];
        beta = g->beta;
    }
    g->sgemm(g->ta, g->tb, g->m, g->n, g->k, g->alpha, in[0].data, g->ta ? g->m : g->k, in[1].data,
             g->tb ? g->k : g->n, beta, y, g->n);
    return D5_OK;
}

/* dA = alpha dY B'^T (stored transposed when transA), dB = alpha A'^T dY. */
d5_status d5__gemm_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *gin = call->grad_inputs;
    const bgemm *g = state;
    const float *dy = gout[0].data;
    if (gin[0].data) {
        if (g->ta) /* dA (k x m) = alpha B' dY^T */
            g->sgemm(g->tb, 1, g->k, g->m, g->n, g->alpha, in[1].data, g->tb ? g->k : g->n, dy,
                     g->n, 0, gin[0].data, g->m);
        else /* dA (m x k) = alpha dY B'^T */
            g->sgemm(0, !g->tb, g->m, g->k, g->n, g->alpha, dy, g->n, in[1].data,
                     g->tb ? g->k : g->n, 0, gin[0].data, g->k);
    }
    if (gin[1].data) {
        if (g->tb) /* dB (n x k) = alpha dY^T A' */
            g->sgemm(1, g->ta, g->n, g->k, g->m, g->alpha, dy, g->n, in[0].data,
                     g->ta ? g->m : g->k, 0, gin[1].data, g->k);
        else /* dB (k x n) = alpha A'^T dY */
            g->sgemm(!g->ta, 0, g->k, g->n, g->m, g->alpha, in[0].data, g->ta ? g->m : g->k, dy,
                     g->n, 0, gin[1].data, g->n);
    }
    if (nin > 2 && g->cm && gin[2].data) {
        float *dc = gin[2].data;
        memset(dc, 0, (size_t)(g->cm * g->cn) * sizeof *dc);
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++)
                dc[(g->cm == 1 ? 0 : i) * g->cn + (g->cn == 1 ? 0 : j)] +=
                    g->beta * dy[i * g->n + j];
    }
    return D5_OK;
}

void d5__gemm_cost(void *state, double *flops, double *bytes)
{
    const bgemm *g = state;
    *flops = 2.0 * (double)g->m * (double)g->n * (double)g->k;
    *bytes = 4.0 * ((double)g->m * (double)g->k + (double)g->k * (double)g->n +
                    (double)g->m * (double)g->n * (g->cm ? 2 : 1));
}

void d5__gemm_destroy(void *state)
{
    d5_free(state);
}
