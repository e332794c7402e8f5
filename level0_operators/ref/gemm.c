/* Gemm (ONNX opset 13): Y = alpha * A' * B' + beta * C, where A' = transA ? A^T : A,
 * B' = transB ? B^T : B, and C (optional) broadcasts unidirectionally to (M, N).
 * A, B and C share one type: floating point or a 32- or 64-bit integer; an
 * integer Y is computed in double, truncated toward zero and wrapped into
 * its type.
 * https://onnx.ai/onnx/operators/onnx__Gemm.html */
#include "util.h"

typedef struct gemm {
    int64_t m, n, k;
    int trans_a, trans_b;
    double alpha, beta;
} gemm;

static d5_status gemm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *tin = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const d5_tensor_desc in[3] = {tin[0].desc, tin[nin > 1 ? 1 : 0].desc,
                                  tin[nin > 2 ? 2 : 0].desc};
    int64_t ta, tb;
    double alpha, beta;
    d5_status s = d5__need_types("Gemm", tin, nin, 0, D5__WIDE);
    if (s == D5_OK) s = d5__need_types("Gemm", tin, nin, 1, D5__WIDE);
    if (s == D5_OK) s = d5__same_type("Gemm", tin, nin, 1, 0);
    if (s == D5_OK) s = d5__same_type("Gemm", tin, nin, 2, 0);
    if (s == D5_OK) s = d5_attrs_int(attrs, "transA", 0, &ta);
    if (s == D5_OK) s = d5_attrs_int(attrs, "transB", 0, &tb);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1.0, &alpha);
    if (s == D5_OK) s = d5_attrs_float(attrs, "beta", 1.0, &beta);
    if (s != D5_OK) return s;
    if (in[0].ndim != 2 || in[1].ndim != 2)
        return d5_error(D5_ERR_SHAPE, "Gemm: A and B must be 2-d, got %d-d and %d-d",
                        (int)in[0].ndim, (int)in[1].ndim);
    gemm g = {ta ? in[0].shape[1] : in[0].shape[0],
              tb ? in[1].shape[0] : in[1].shape[1],
              ta ? in[0].shape[0] : in[0].shape[1],
              ta != 0,
              tb != 0,
              alpha,
              beta};
    int64_t kb = tb ? in[1].shape[1] : in[1].shape[0];
    if (kb != g.k)
        return d5_error(D5_ERR_SHAPE, "Gemm: A' is %lldx%lld but B' is %lldx%lld", (long long)g.m,
                        (long long)g.k, (long long)kb, (long long)g.n);
    out[0].ndim = 2;
    out[0].shape[0] = g.m;
    out[0].shape[1] = g.n;
    if (d5__has_input(tin, nin, 2)) {
        d5_tensor_desc tmp = out[0];
        const d5_tensor_desc *both[2] = {&out[0], &in[2]};
        s = d5__broadcast("Gemm", both, 2, &tmp);
        if (s != D5_OK) return s;
        if (tmp.ndim != 2 || tmp.shape[0] != g.m || tmp.shape[1] != g.n)
            return d5_error(D5_ERR_SHAPE, "Gemm: C does not broadcast to %lldx%lld", (long long)g.m,
                            (long long)g.n);
    }
    return d5__ref_state(state, &g, sizeof g, "Gemm");
}

/* Element (i, p) of A' and (p, j) of B'. */
static double a_at(const gemm *g, const double *a, int64_t i, int64_t p)
{
    return g->trans_a ? a[p * g->m + i] : a[i * g->k + p];
}
static double b_at(const gemm *g, const double *b, int64_t p, int64_t j)
{
    return g->trans_b ? b[j * g->k + p] : b[p * g->n + j];
}

static d5_status gemm_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const gemm *g = state;
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < g->k; p++)
                acc += a_at(g, in[0].data, i, p) * b_at(g, in[1].data, p, j);
            double c = 0;
            if (nin > 2 && in[2].data)
                c = in[2].data[d5__broadcast_index(out[0].desc, in[2].desc, i * g->n + j)];
            out[0].data[i * g->n + j] = g->alpha * acc + g->beta * c;
        }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

/* dA' = alpha dY B'^T, dB' = alpha A'^T dY, dC = beta * dY summed over broadcast axes. */
static d5_status gemm_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *gin = call->grad_inputs;
    const gemm *g = state;
    const double *dy = gout[0].data;
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double d = g->alpha * dy[i * g->n + j];
            for (int64_t p = 0; p < g->k; p++) {
                if (gin[0].data) {
                    int64_t ia = g->trans_a ? p * g->m + i : i * g->k + p;
                    gin[0].data[ia] += d * b_at(g, in[1].data, p, j);
                }
                if (gin[1].data) {
                    int64_t ib = g->trans_b ? j * g->k + p : p * g->n + j;
                    gin[1].data[ib] += d * a_at(g, in[0].data, i, p);
                }
            }
            if (nin > 2 && gin[2].data)
                gin[2].data[d5__broadcast_index(gout[0].desc, in[2].desc, i * g->n + j)] +=
                    g->beta * dy[i * g->n + j];
        }
    return D5_OK;
}

static double gemm_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    const gemm *g = state;
    return 2.0 * (double)g->m * (double)g->n * (double)g->k;
}

D5_REF_OPERATOR(Gemm, 2, 3, 1, 1, gemm_create, gemm_forward, gemm_backward, NULL, gemm_flops);
