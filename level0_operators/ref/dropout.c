/* Dropout (ONNX opsets 1 to 13): inputs data, optional ratio (a float scalar,
 * 0.5 when omitted) and optional training_mode (a bool scalar, false when
 * omitted); outputs output and the optional bool mask. In inference mode, or
 * with ratio 0, output = data and the mask is all true. In training mode each
 * element is kept with probability 1 - ratio (mask = u >= ratio for u uniform
 * in [0, 1), as in ONNX's reference) and output = data * mask / (1 - ratio);
 * ratio must lie in [0, 1). The backward pass multiplies by mask / (1 - ratio),
 * with the mask and ratio of the latest forward call; ratio and training_mode
 * get no gradient (the spec marks them non-differentiable).
 *
 * Before opset 12 the operator takes one input: ratio is the float attribute
 * ratio (default 0.5) and the mode is inference, except in opsets 1 and 6,
 * where the attribute is_test (default 0) selects training mode when 0. Before
 * opset 10 the mask has the data's type (1 kept, 0 dropped), not bool.
 *
 * Randomness: each instance draws from its own d5_rng seeded with the
 * attribute seed (0 when absent) at create. A new instance with a given seed
 * gives the same sequence of masks on every machine; the generator advances
 * with every training-mode forward call, so successive calls of one instance
 * drop different elements.
 * https://onnx.ai/onnx/operators/onnx__Dropout.html */
#include "util.h"

typedef struct dropout {
    d5_rng rng;
    int fixed; /* opsets 1 to 11: ratio and mode come from the attributes */
    int fixed_training;
    double fixed_ratio;
    double scale;         /* of the latest forward call: 1 / (1 - ratio), or 1 */
    unsigned char keep[]; /* its mask, one per element of data */
} dropout;

/* Checks that optional input i, when given, is a scalar of the expected type. */
static d5_status scalar_input(const d5_tensor *in, int32_t nin, int32_t i, const char *what,
                              int want_bool)
{
    if (!d5__has_input(in, nin, i)) return D5_OK;
    const d5_tensor_desc *d = &in[i].desc;
    int is_float = d5__in_types(d->dtype, D5__FLOATS);
    if (want_bool ? d->dtype != D5_BOOL : !is_float)
        return d5_error(D5_ERR_INVALID, "Dropout: %s has data type %s, expected %s", what,
                        d5_dtype_name((d5_dtype)d->dtype), want_bool ? "bool" : "float");
    if (d5_tensor_desc_numel(d) != 1) {
        char got[96];
        d5__shape_str(d, got, sizeof got);
        return d5_error(D5_ERR_SHAPE, "Dropout: %s must be a scalar (one element), got shape %s",
                        what, got);
    }
    return D5_OK;
}

/* Opsets 1 to 11: one input; ratio from the attribute, and training mode
 * when is_test is 0 in opsets 1 and 6. */
static d5_status dropout_attributes(int32_t nin, const d5_attrs *attrs, int64_t opset, dropout *d)
{
    int64_t is_test;
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Dropout: opset %lld takes 1 input (ratio is an attribute), got %d",
                        (long long)opset, (int)nin);
    d5_status s = d5_attrs_float(attrs, "ratio", 0.5, &d->fixed_ratio);
    if (s == D5_OK) s = d5_attrs_int(attrs, "is_test", 0, &is_test);
    if (s != D5_OK) return s;
    d->fixed = 1;
    d->fixed_training = opset < 7 && is_test == 0;
    if (d->fixed_training && !(d->fixed_ratio >= 0 && d->fixed_ratio < 1))
        return d5_error(D5_ERR_INVALID, "Dropout: attribute ratio is %g, must be in [0, 1)",
                        d->fixed_ratio);
    return D5_OK;
}

static d5_status dropout_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    int64_t seed, opset;
    dropout d = {0};
    d5_status s = d5__need_float("Dropout", in, nin, 0);
    if (s == D5_OK) s = d5__ref_opset("Dropout", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK && opset < 12) s = dropout_attributes(nin, attrs, opset, &d);
    if (s == D5_OK && opset >= 12 && d5_attrs_find(attrs, "ratio"))
        s = d5_error(D5_ERR_INVALID,
                     "Dropout: opset %lld takes ratio as input 1, not as an attribute",
                     (long long)opset);
    if (s == D5_OK) s = scalar_input(in, nin, 1, "ratio", 0);
    if (s == D5_OK) s = scalar_input(in, nin, 2, "training_mode", 1);
    if (s == D5_OK) s = d5_attrs_int(attrs, "seed", 0, &seed);
    if (s != D5_OK) return s;
    out[0] = in[0].desc;
    if (nout > 1) {
        out[1] = in[0].desc;
        out[1].dtype = opset < 10 ? in[0].desc.dtype : D5_BOOL;
    }
    int64_t n = d5_tensor_desc_numel(&in[0].desc);
    dropout *st = d5_alloc(sizeof *st + (size_t)n, "Dropout");
    if (!st) return D5_ERR_NOMEM;
    *st = d;
    d5_rng_seed(&st->rng, (uint64_t)seed);
    st->scale = 1;
    for (int64_t i = 0; i < n; i++) st->keep[i] = 1;
    *state = st;
    return D5_OK;
}

static d5_status dropout_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    dropout *st = state;
    double ratio = st->fixed ? st->fixed_ratio : nin > 1 && in[1].data ? in[1].data[0] : 0.5;
    int training = st->fixed ? st->fixed_training : nin > 2 && in[2].data && in[2].data[0] != 0;
    if (training && !(ratio >= 0 && ratio < 1))
        return d5_error(D5_ERR_INVALID, "Dropout: ratio is %g, must be in [0, 1)", ratio);
    training = training && ratio > 0;
    st->scale = training ? 1 / (1 - ratio) : 1;
    for (int64_t i = 0; i < in[0].numel; i++) {
        st->keep[i] = !training || d5_rng_uniform(&st->rng) >= ratio;
        out[0].data[i] = st->keep[i] ? in[0].data[i] * st->scale : 0;
        if (nout > 1) out[1].data[i] = st->keep[i];
    }
    return D5_OK;
}

static d5_status dropout_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const dropout *st = state;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] = st->keep[i] ? gout[0].data[i] * st->scale : 0;
    return D5_OK;
}

D5_REF_OPERATOR(Dropout, 1, 3, 1, 2, dropout_create, dropout_forward, dropout_backward, NULL,
                d5__flops_per_input);
