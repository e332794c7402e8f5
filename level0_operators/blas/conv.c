/* Conv (ONNX opset 11) as im2col + OpenBLAS sgemm, float32, any number of
 * spatial dimensions, groups and dilations. Per batch element and group the
 * input windows are unrolled into a (C/group * kernel) x out matrix, so the
 * convolution becomes one GEMM with the group's filters; backward reuses the
 * same unrolling (weights: dY col^T; data: col2im of W^T dY).
 * https://onnx.ai/onnx/operators/onnx__Conv.html */
#include "../ref/conv_shape.h"
#include "blas.h"

#include <string.h>

/* A run of output positions p0 .. p0+len-1 of one kernel tap that read the
 * input at src, src+step, ...; src < 0 for a run in the padding (zeros). Runs
 * turn the unrolling into copies without a test per element: a stride-1
 * convolution's rows are plain memcpy. */
typedef struct run {
    int32_t p0, len, src, step;
} run;

typedef struct bconv {
    d5_conv_geometry g;
    int64_t cg, mg, rows; /* channels and filters per group; rows = cg * kernel_size */
    run *runs;            /* the runs of every tap, tap by tap */
    int64_t *first;       /* [kernel_size + 1]: runs of tap k are first[k] .. first[k+1]-1 */
    float *col;           /* rows x out_size */
} bconv;

static void destroy(void *state)
{
    bconv *c = state;
    if (!c) return;
    d5_free(c->runs);
    d5_free(c->first);
    d5_free(c->col);
    d5_free(c);
}

/* Splits each tap's input positions into runs of a constant step (or of
 * padding). Two passes over the taps: count, then fill. */
static d5_status make_runs(bconv *c)
{
    const d5_conv_geometry *g = &c->g;
    int64_t ks = g->kernel_size, os = g->out_size, total = 0;
    c->first = d5_alloc((size_t)(ks + 1) * sizeof *c->first, "Conv (blas) runs");
    if (!c->first) return D5_ERR_NOMEM;
    for (int pass = 0; pass < 2; pass++) {
        int64_t r = 0;
        for (int64_t k = 0; k < ks; k++) {
            if (pass) c->first[k] = r;
            for (int64_t p = 0; p < os;) {
                int64_t t = d5__conv_tap(g, p, k), len = 1, step = 0;
                if (p + 1 < os) {
                    int64_t u = d5__conv_tap(g, p + 1, k);
                    if ((t < 0) == (u < 0)) step = t < 0 ? 0 : u - t;
                }
                if (t < 0 || step > 0)
                    while (p + len < os) {
                        int64_t u = d5__conv_tap(g, p + len, k);
                        if (t < 0 ? u >= 0 : u != t + len * step) break;
                        len++;
                    }
                if (pass)
                    c->runs[r] = (run){(int32_t)p, (int32_t)len, (int32_t)(t < 0 ? -1 : t),
                                       (int32_t)(step > 0 ? step : 1)};
                r++;
                p += len;
            }
        }
        if (!pass) {
            total = r;
            c->runs = d5_alloc((size_t)total * sizeof *c->runs, "Conv (blas) runs");
            if (!c->runs) return D5_ERR_NOMEM;
        } else {
            c->first[ks] = r;
        }
    }
    return D5_OK;
}

/* The geometry of a convolution whose given inputs are all float32, and its
 * im2col plan (buffer and runs) in c. */
static d5_status plan(bconv *c, const d5_op_create_args *args)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    for (int32_t i = 0; i < nin; i++)
        if (in[i].desc.dtype != D5_DTYPE_INVALID) {
            d5_status s = d5__blas_need_f32("Conv", in, nin, i);
            if (s != D5_OK) return s;
        }
    const d5_conv_geometry *g = &c->g;
    d5_status s = d5__conv_geometry(&in[0].desc, &in[1].desc, nin > 2 ? &in[2].desc : NULL,
                                    args->attrs, &c->g);
    if (s != D5_OK) return s;
    if ((double)g->kernel_size * (double)g->out_size > 2e9 || (double)g->in_size > 2e9)
        return d5_error(
            D5_ERR_UNSUPPORTED,
            "Conv (blas): the im2col index of %lld x %lld (input plane %lld) is too large",
            (long long)g->kernel_size, (long long)g->out_size, (long long)g->in_size);
    c->cg = g->in_channels / g->group;
    c->mg = g->out_channels / g->group;
    c->rows = c->cg * g->kernel_size;
    c->col = d5_alloc((size_t)(c->rows * g->out_size) * sizeof *c->col, "Conv im2col buffer");
    return c->col ? make_runs(c) : D5_ERR_NOMEM;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    bconv *c = d5_calloc(1, sizeof *c, "Conv (blas)");
    if (!c) return D5_ERR_NOMEM;
    d5_status s = plan(c, args);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    d5_tensor_desc *y = &args->outputs[0];
    memset(y, 0, sizeof *y);
    y->dtype = D5_F32;
    d5__conv_output_desc(&c->g, y);
    *state = c;
    return D5_OK;
}

/* col[(ci * ks + k) * out + p] = x[ci, tap k of p] (0 in the padding) for
 * the cg channels at x. */
static void im2col(const bconv *c, const float *x)
{
    int64_t ks = c->g.kernel_size, os = c->g.out_size, is = c->g.in_size;
    for (int64_t ci = 0; ci < c->cg; ci++)
        for (int64_t k = 0; k < ks; k++) {
            float *dst = c->col + (ci * ks + k) * os;
            const float *src = x + ci * is;
            for (int64_t r = c->first[k]; r < c->first[k + 1]; r++) {
                const run *u = &c->runs[r];
                float *d = dst + u->p0;
                if (u->src < 0)
                    memset(d, 0, (size_t)u->len * sizeof *d);
                else if (u->step == 1)
                    memcpy(d, src + u->src, (size_t)u->len * sizeof *d);
                else
                    for (int32_t i = 0; i < u->len; i++) d[i] = src[u->src + i * u->step];
            }
        }
}

/* The adjoint: dx[ci, tap k of p] += col[(ci * ks + k) * out + p]. */
static void col2im(const bconv *c, float *dx)
{
    int64_t ks = c->g.kernel_size, os = c->g.out_size, is = c->g.in_size;
    for (int64_t ci = 0; ci < c->cg; ci++)
        for (int64_t k = 0; k < ks; k++) {
            const float *src = c->col + (ci * ks + k) * os;
            float *dst = dx + ci * is;
            for (int64_t r = c->first[k]; r < c->first[k + 1]; r++) {
                const run *u = &c->runs[r];
                if (u->src < 0) continue;
                const float *sp = src + u->p0;
                float *d = dst + u->src;
                for (int32_t i = 0; i < u->len; i++) d[i * u->step] += sp[i];
            }
        }
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    bconv *c = state;
    const d5_conv_geometry *g = &c->g;
    const float *x = in[0].data, *w = in[1].data, *b = g->has_bias ? in[2].data : NULL;
    float *y = out[0].data;
    int64_t os = g->out_size;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            im2col(c, x + (n * g->in_channels + gi * c->cg) * g->in_size);
            float *yg = y + (n * g->out_channels + gi * c->mg) * os;
            d5__sgemm(0, 0, c->mg, os, c->rows, 1.0f, w + gi * c->mg * c->rows, c->rows, c->col, os,
                      0.0f, yg, os);
            for (int64_t m = 0; b && m < c->mg; m++)
                for (int64_t p = 0; p < os; p++) yg[m * os + p] += b[gi * c->mg + m];
        }
    return D5_OK;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *gin = call->grad_inputs;
    bconv *c = state;
    const d5_conv_geometry *g = &c->g;
    const float *x = in[0].data, *w = in[1].data, *dy = gout[0].data;
    float *dx = gin[0].data, *dw = gin[1].data, *db = nin > 2 && g->has_bias ? gin[2].data : NULL;
    int64_t os = g->out_size;
    if (dx) memset(dx, 0, (size_t)(g->batch * g->in_channels * g->in_size) * sizeof *dx);
    if (dw) memset(dw, 0, (size_t)(g->out_channels * c->rows) * sizeof *dw);
    if (db) memset(db, 0, (size_t)g->out_channels * sizeof *db);
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *dyg = dy + (n * g->out_channels + gi * c->mg) * os;
            const float *wg = w + gi * c->mg * c->rows;
            if (dw) { /* dW_g += dY_g col^T */
                im2col(c, x + (n * g->in_channels + gi * c->cg) * g->in_size);
                d5__sgemm(0, 1, c->mg, c->rows, os, 1.0f, dyg, os, c->col, os, 1.0f,
                          dw + gi * c->mg * c->rows, c->rows);
            }
            if (dx) { /* dcol = W_g^T dY_g, scattered back */
                d5__sgemm(1, 0, c->rows, os, c->mg, 1.0f, wg, c->rows, dyg, os, 0.0f, c->col, os);
                col2im(c, dx + (n * g->in_channels + gi * c->cg) * g->in_size);
            }
            for (int64_t m = 0; db && m < c->mg; m++)
                for (int64_t p = 0; p < os; p++) db[gi * c->mg + m] += dyg[m * os + p];
        }
    return D5_OK;
}

static void cost(void *state, double *flops, double *bytes)
{
    const d5_conv_geometry *g = &((bconv *)state)->g;
    *flops = d5__conv_flops(g);
    *bytes = 4.0 * ((double)g->batch * (double)g->in_channels * (double)g->in_size +
                    (double)g->out_channels * (double)(g->in_channels / g->group) *
                        (double)g->kernel_size +
                    (double)g->batch * (double)g->out_channels * (double)g->out_size);
}

/* clang-format off */
const d5_op_desc d5__op_blas_Conv = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "Conv",
    .backend = "blas", .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .create = create, .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
