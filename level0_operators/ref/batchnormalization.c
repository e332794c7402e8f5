/* BatchNormalization (ONNX opset 15): per channel c of X (N x C x D1 x ... x Dn),
 *   Y = (X - mean) / sqrt(var + epsilon) * scale + B.
 * Inference (training_mode 0): mean and var are the inputs input_mean and
 * input_var, and Y is the only output. Training (training_mode 1): mean and
 * var are the batch statistics over all axes but the channel's, var the
 * population (biased) variance, and the optional outputs are
 *   running_mean = input_mean * momentum + mean * (1 - momentum)
 *   running_var = input_var * momentum + var * (1 - momentum).
 * The gradient covers every input: in training mode it flows through the batch
 * statistics (and from running_mean and running_var).
 *
 * Older opsets (1 to 13) have no training_mode attribute: in opsets 1 and 6
 * the attribute is_test (default 0) selects training mode when 0; in opsets 7
 * to 13 training mode is asked for by the outputs beyond Y. Their outputs are
 * Y, mean and var (running_mean and running_var above), saved_mean and
 * saved_var: the batch mean and the batch (population) variance, as in ONNX's
 * reference implementation. Before opset 9 the attribute spatial (default 1)
 * may be 0: each element of D1 x ... x Dn then has its own statistics, and
 * scale, B, mean and var have the shape C x D1 x ... x Dn.
 * https://onnx.ai/onnx/operators/onnx__BatchNormalization.html */
#include "util.h"

#include <math.h>

typedef struct batchnorm {
    int64_t n, c, inner; /* X seen as n x c x inner */
    double epsilon, momentum;
    int training;
} batchnorm;

static const char *const input_names[5] = {"X", "scale", "B", "input_mean", "input_var"};

/* The mode and the spatial attribute: training_mode from opset 14; before,
 * is_test (opsets 1 and 6) or the number of outputs (opsets 7 to 13). */
static d5_status read_mode(const d5_attrs *attrs, int32_t nout, int *training, int *spatial)
{
    int64_t opset, v, sp;
    d5_status s = d5__ref_opset("BatchNormalization", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_int(attrs, "spatial", 1, &sp);
    if (s != D5_OK) return s;
    if (opset >= 9 && d5_attrs_find(attrs, "spatial"))
        return d5_error(D5_ERR_INVALID,
                        "BatchNormalization: spatial is an attribute of opsets 1 to 8, not of "
                        "opset %lld",
                        (long long)opset);
    *spatial = sp != 0;
    if (opset >= 14) {
        s = d5_attrs_int(attrs, "training_mode", 0, &v);
        *training = v != 0;
        if (s == D5_OK && nout > 3)
            s = d5_error(D5_ERR_INVALID,
                         "BatchNormalization: opset %lld has at most 3 outputs, %d asked for",
                         (long long)opset, (int)nout);
        return s;
    }
    if (d5_attrs_find(attrs, "training_mode"))
        return d5_error(D5_ERR_INVALID,
                        "BatchNormalization: training_mode is an attribute of opset 14 and "
                        "later, not of opset %lld",
                        (long long)opset);
    s = d5_attrs_int(attrs, "is_test", 0, &v);
    if (s != D5_OK) return s;
    *training = opset < 7 ? v == 0 : nout > 1;
    return D5_OK;
}

/* Checks that scale, B, mean and var have the shape `want` (ndim dims). */
static d5_status check_channels(const d5_tensor *in, int32_t ndim, const int64_t *want)
{
    for (int32_t i = 1; i < 5; i++) {
        int same = in[i].desc.ndim == ndim;
        for (int32_t d = 0; same && d < ndim; d++) same = in[i].desc.shape[d] == want[d];
        if (!same) {
            char got[96], exp[96];
            d5_tensor_desc w = {.ndim = ndim};
            for (int32_t d = 0; d < ndim; d++) w.shape[d] = want[d];
            d5__shape_str(&in[i].desc, got, sizeof got);
            d5__shape_str(&w, exp, sizeof exp);
            return d5_error(D5_ERR_SHAPE,
                            "BatchNormalization: %s has shape %s, expected %s (one value per "
                            "channel)",
                            input_names[i], got, exp);
        }
    }
    return D5_OK;
}

static d5_status batchnorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    batchnorm b;
    int spatial = 1;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < 5 && s == D5_OK; i++)
        s = d5__need_float("BatchNormalization", in, nin, i);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &b.epsilon);
    if (s == D5_OK) s = d5_attrs_float(attrs, "momentum", 0.9, &b.momentum);
    if (s == D5_OK) s = read_mode(attrs, nout, &b.training, &spatial);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE,
                        "BatchNormalization: X has %d dims, expected at least 2 (N x C x ...)",
                        (int)x->ndim);
    b.n = x->shape[0];
    b.c = x->shape[1];
    b.inner = 1;
    for (int32_t i = 2; i < x->ndim; i++) b.inner *= x->shape[i];
    s = check_channels(in, spatial ? 1 : x->ndim - 1, x->shape + 1);
    if (s != D5_OK) return s;
    if (!spatial) { /* every element of C x D1 x ... x Dn is a channel of its own */
        b.c *= b.inner;
        b.inner = 1;
    }
    if (nout > 1 && !b.training)
        return d5_error(D5_ERR_INVALID,
                        "BatchNormalization: running_mean and running_var are outputs only in "
                        "training mode (training_mode=1; is_test=0 before opset 7)");
    out[0] = *x;
    for (int32_t k = 1; k < nout; k++) out[k] = in[k == 2 ? 4 : 3].desc;
    return d5__ref_state(state, &b, sizeof b, "BatchNormalization");
}

/* Element i of channel ch of batch item k. */
static int64_t at(const batchnorm *b, int64_t k, int64_t ch, int64_t i)
{
    return (k * b->c + ch) * b->inner + i;
}

/* The mean and variance of channel ch: the batch's in training mode. */
static void statistics(const batchnorm *b, const d5_rt *in, int64_t ch, double *mean, double *var)
{
    if (!b->training) {
        *mean = in[3].data[ch];
        *var = in[4].data[ch];
        return;
    }
    double m = (double)(b->n * b->inner), sum = 0, sq = 0;
    for (int64_t k = 0; k < b->n; k++)
        for (int64_t i = 0; i < b->inner; i++) sum += in[0].data[at(b, k, ch, i)];
    *mean = sum / m;
    for (int64_t k = 0; k < b->n; k++)
        for (int64_t i = 0; i < b->inner; i++) {
            double d = in[0].data[at(b, k, ch, i)] - *mean;
            sq += d * d;
        }
    *var = sq / m;
}

static d5_status batchnorm_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    const batchnorm *b = state;
    for (int64_t ch = 0; ch < b->c; ch++) {
        double mean, var;
        statistics(b, in, ch, &mean, &var);
        double inv = 1 / sqrt(var + b->epsilon);
        for (int64_t k = 0; k < b->n; k++)
            for (int64_t i = 0; i < b->inner; i++) {
                int64_t e = at(b, k, ch, i);
                out[0].data[e] = (in[0].data[e] - mean) * inv * in[1].data[ch] + in[2].data[ch];
            }
        if (nout > 1) out[1].data[ch] = in[3].data[ch] * b->momentum + mean * (1 - b->momentum);
        if (nout > 2) out[2].data[ch] = in[4].data[ch] * b->momentum + var * (1 - b->momentum);
        if (nout > 3) out[3].data[ch] = mean; /* saved_mean and saved_var, opsets 1 to 13 */
        if (nout > 4) out[4].data[ch] = var;
    }
    return D5_OK;
}

/* With xh = (x - mean) * inv, inv = 1 / sqrt(var + epsilon), and g = dY * scale:
 * dB = sum dY, dscale = sum dY * xh. Inference: dX = g * inv, dmean = -sum g * inv,
 * dvar = -sum g * xh * inv^2 / 2. Training (M elements per channel):
 * dX = inv * (g - mean(g) - xh * mean(g * xh)), plus the running outputs' share
 * (1 - momentum) * (dRM + 2 (x - mean) dRV) / M and the saved outputs' share
 * (dSM + 2 (x - mean) dSV) / M, and dinput_mean = momentum * dRM,
 * dinput_var = momentum * dRV. */
static d5_status batchnorm_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const batchnorm *b = state;
    const double *x = in[0].data, *dy = gout[0].data;
    double m = (double)(b->n * b->inner);
    for (int64_t ch = 0; ch < b->c; ch++) {
        double mean, var, scale = in[1].data[ch];
        statistics(b, in, ch, &mean, &var);
        double inv = 1 / sqrt(var + b->epsilon), sum_dy = 0, sum_dyxh = 0;
        for (int64_t k = 0; k < b->n; k++)
            for (int64_t i = 0; i < b->inner; i++) {
                int64_t e = at(b, k, ch, i);
                sum_dy += dy[e];
                sum_dyxh += dy[e] * (x[e] - mean) * inv;
            }
        if (gin[1].data) gin[1].data[ch] += sum_dyxh;
        if (gin[2].data) gin[2].data[ch] += sum_dy;
        double sum_g = scale * sum_dy, sum_gxh = scale * sum_dyxh;
        double drm = nout > 1 ? gout[1].data[ch] : 0, drv = nout > 2 ? gout[2].data[ch] : 0;
        double dsm = nout > 3 ? gout[3].data[ch] : 0, dsv = nout > 4 ? gout[4].data[ch] : 0;
        if (!b->training) {
            if (gin[3].data) gin[3].data[ch] += -sum_g * inv;
            if (gin[4].data) gin[4].data[ch] += -0.5 * sum_gxh * inv * inv;
        } else {
            if (gin[3].data) gin[3].data[ch] += b->momentum * drm;
            if (gin[4].data) gin[4].data[ch] += b->momentum * drv;
        }
        if (!gin[0].data) continue;
        for (int64_t k = 0; k < b->n; k++)
            for (int64_t i = 0; i < b->inner; i++) {
                int64_t e = at(b, k, ch, i);
                double g = dy[e] * scale;
                if (!b->training) {
                    gin[0].data[e] += g * inv;
                    continue;
                }
                double xh = (x[e] - mean) * inv;
                gin[0].data[e] += inv * (g - sum_g / m - xh * sum_gxh / m) +
                                  (1 - b->momentum) * (drm + 2 * (x[e] - mean) * drv) / m +
                                  (dsm + 2 * (x[e] - mean) * dsv) / m;
            }
    }
    return D5_OK;
}

/* Normalising and scaling: 4 operations per element; the batch statistics in
 * training mode: 4 more. */
static double batchnorm_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    const batchnorm *b = state;
    return (b->training ? 8.0 : 4.0) * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(BatchNormalization, 5, 5, 1, 5, batchnorm_create, batchnorm_forward,
                batchnorm_backward, NULL, batchnorm_flops);
