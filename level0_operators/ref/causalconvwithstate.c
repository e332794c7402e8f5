/* CausalConvWithState (ONNX opset 27): a stateful causal depthwise 1-d
 * convolution. input [B, C, L], weight [C, 1, k], optional bias [C] and
 * past_state [B, C, k - 1] (zeros when omitted). With the padded sequence
 * x = concat(past_state, input) along the last axis (length L + k - 1):
 *   z[b, c, t] = bias[c] + sum_{i < k} weight[c, 0, i] x[b, c, t + i],
 *   output = z, or z * sigmoid(z) with activation "silu" (or its alias
 *   "swish"; the default is "none"),
 *   present_state = the last k - 1 positions of x (old state or zeros when
 *   L < k - 1; [B, C, 0] when k = 1).
 * Computed in double (ONNX's reference computes the activation in float32).
 *
 * Gradient: dz = doutput (times sigmoid(z) (1 + z (1 - sigmoid(z))) under
 * SiLU); dx[t + i] += weight[c, i] dz[t] plus dpresent_state at the last
 * k - 1 positions; dweight[c, i] += x[t + i] dz[t]; dbias[c] += dz[t]; dx
 * splits into dpast_state and dinput.
 * https://onnx.ai/onnx/operators/onnx__CausalConvWithState.html */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct causal_conv {
    int64_t batch, channels, len, k;
    int silu;
    int has_bias, has_past; /* inputs 2 and 3 are given */
} causal_conv;

static d5_status bad_shape(const char *what, const d5_tensor_desc *d, const char *expected)
{
    char got[96];
    d5__shape_str(d, got, sizeof got);
    return d5_error(D5_ERR_SHAPE, "CausalConvWithState: %s has shape %s; expected %s", what, got,
                    expected);
}

static d5_status conv_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_status s = d5__need_float("CausalConvWithState", in, nin, 0);
    if (s == D5_OK) s = d5__need_input("CausalConvWithState", in, nin, 1, "weight");
    for (int32_t i = 1; s == D5_OK && i < 4; i++)
        s = d5__same_type("CausalConvWithState", in, nin, i, 0);
    const char *act = "none";
    if (s == D5_OK) s = d5_attrs_string(args->attrs, "activation", "none", &act);
    if (s != D5_OK) return s;
    if (strcmp(act, "none") != 0 && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return d5_error(D5_ERR_INVALID,
                        "CausalConvWithState: activation is \"%s\"; expected \"none\", \"silu\" "
                        "or \"swish\"",
                        act);
    const d5_tensor_desc *x = &in[0].desc, *w = &in[1].desc;
    if (x->ndim != 3) return bad_shape("input", x, "3 dimensions (batch, channels, length)");
    causal_conv c = {x->shape[0],
                     x->shape[1],
                     x->shape[2],
                     0,
                     strcmp(act, "none") != 0,
                     d5__has_input(in, nin, 2),
                     d5__has_input(in, nin, 3)};
    char want[96];
    snprintf(want, sizeof want, "[%lld, 1, k] with k >= 1 (depthwise)", (long long)c.channels);
    if (w->ndim != 3 || w->shape[0] != c.channels || w->shape[1] != 1 || w->shape[2] < 1)
        return bad_shape("weight", w, want);
    c.k = w->shape[2];
    if (c.has_bias && (in[2].desc.ndim != 1 || in[2].desc.shape[0] != c.channels)) {
        snprintf(want, sizeof want, "[%lld] (channels)", (long long)c.channels);
        return bad_shape("bias", &in[2].desc, want);
    }
    const int64_t st[3] = {c.batch, c.channels, c.k - 1};
    if (c.has_past) {
        const d5_tensor_desc *p = &in[3].desc;
        if (p->ndim != 3 || p->shape[0] != st[0] || p->shape[1] != st[1] || p->shape[2] != st[2]) {
            snprintf(want, sizeof want, "[%lld, %lld, %lld] (batch, channels, k - 1)",
                     (long long)st[0], (long long)st[1], (long long)st[2]);
            return bad_shape("past_state", p, want);
        }
    }
    args->outputs[0] = *x;
    if (args->noutputs > 1) {
        args->outputs[1] = *x;
        memcpy(args->outputs[1].shape, st, sizeof st);
    }
    return d5__ref_state(state, &c, sizeof c, "CausalConvWithState");
}

/* Position p of the padded sequence of row (b, c): past_state, then input. */
static double padded(const causal_conv *c, const d5_rt *in, int64_t row, int64_t p)
{
    if (p >= c->k - 1) return in[0].data[row * c->len + p - (c->k - 1)];
    return c->has_past ? in[3].data[row * (c->k - 1) + p] : 0;
}

/* z at position t of row (b, c). */
static double pre_activation(const causal_conv *c, const d5_rt *in, int64_t row, int64_t t)
{
    int64_t ch = row % c->channels;
    double z = c->has_bias ? in[2].data[ch] : 0;
    for (int64_t i = 0; i < c->k; i++) z += in[1].data[ch * c->k + i] * padded(c, in, row, t + i);
    return z;
}

static double sigmoid(double z)
{
    return 1 / (1 + exp(-z));
}

static d5_status conv_forward(void *state, const d5_ref_call *call)
{
    const causal_conv *c = state;
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    for (int64_t row = 0; row < c->batch * c->channels; row++) {
        for (int64_t t = 0; t < c->len; t++) {
            double z = pre_activation(c, in, row, t);
            out[0].data[row * c->len + t] = c->silu ? z * sigmoid(z) : z;
        }
        for (int64_t j = 0; call->noutputs > 1 && j < c->k - 1; j++)
            out[1].data[row * (c->k - 1) + j] = padded(c, in, row, c->len + j);
    }
    return D5_OK;
}

/* Adds g to the gradient of position p of the padded sequence of a row. */
static void add_padded(const causal_conv *c, d5_rt *gin, int64_t row, int64_t p, double g)
{
    if (p >= c->k - 1) {
        if (gin[0].data) gin[0].data[row * c->len + p - (c->k - 1)] += g;
    } else if (c->has_past && gin[3].data) {
        gin[3].data[row * (c->k - 1) + p] += g;
    }
}

static d5_status conv_backward(void *state, const d5_ref_call *call)
{
    const causal_conv *c = state;
    const d5_rt *in = call->inputs, *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    for (int64_t row = 0; row < c->batch * c->channels; row++) {
        int64_t ch = row % c->channels;
        for (int64_t t = 0; t < c->len; t++) {
            double dz = gout[0].data[row * c->len + t];
            if (c->silu) {
                double z = pre_activation(c, in, row, t), sg = sigmoid(z);
                dz *= sg * (1 + z * (1 - sg));
            }
            if (c->has_bias && gin[2].data) gin[2].data[ch] += dz;
            for (int64_t i = 0; i < c->k; i++) {
                if (gin[1].data) gin[1].data[ch * c->k + i] += padded(c, in, row, t + i) * dz;
                add_padded(c, gin, row, t + i, in[1].data[ch * c->k + i] * dz);
            }
        }
        for (int64_t j = 0; call->noutputs > 1 && j < c->k - 1; j++)
            add_padded(c, gin, row, c->len + j, gout[1].data[row * (c->k - 1) + j]);
    }
    return D5_OK;
}

/* A multiply and an add per tap and output, and a few operations for SiLU. */
static double conv_flops(void *state, const d5_ref_shapes *shapes)
{
    const causal_conv *c = state;
    (void)shapes;
    return (double)(c->batch * c->channels * c->len) * (2.0 * (double)c->k + (c->silu ? 4 : 0));
}

D5_REF_OPERATOR(CausalConvWithState, 2, 4, 1, 2, conv_create, conv_forward, conv_backward, NULL,
                conv_flops);
