/* ReverseSequence (ONNX opset 10): reverses, for each batch entry b, the first
 * sequence_lens[b] elements of `input` (rank >= 2, any data type) along the
 * time axis and copies the rest. time_axis and batch_axis (attributes,
 * defaults 0 and 1) are 0 and 1 in either order; sequence_lens is int64 (or
 * int32) of shape [batch], each in [0, time] (read at run time: D5_ERR_RANGE
 * otherwise). The output has the input's shape and data type; its gradient
 * is the output gradient reversed the same way.
 * https://onnx.ai/onnx/operators/onnx__ReverseSequence.html */
#include "util.h"

typedef struct revseq {
    int64_t batch, time, inner; /* inner: elements after the first two axes */
    int time_first;             /* time_axis 0, batch_axis 1 */
} revseq;

static d5_status revseq_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_types("ReverseSequence", in, nin, 0, D5__ANY);
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 1))
        return d5_error(D5_ERR_INVALID, "ReverseSequence: input 1 (sequence_lens) is required");
    const d5_tensor_desc *x = &in[0].desc, *lens = &in[1].desc;
    if (lens->dtype != D5_I64 && lens->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID,
                        "ReverseSequence: input 1 (sequence_lens) has data type %s, expected int64",
                        d5_dtype_name((d5_dtype)lens->dtype));
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE, "ReverseSequence: input has %d dims, expected at least 2",
                        (int)x->ndim);
    int64_t time_axis, batch_axis;
    s = d5_attrs_int(attrs, "time_axis", 0, &time_axis);
    if (s == D5_OK) s = d5_attrs_int(attrs, "batch_axis", 1, &batch_axis);
    if (s != D5_OK) return s;
    if ((time_axis != 0 && time_axis != 1) || batch_axis != 1 - time_axis)
        return d5_error(D5_ERR_INVALID,
                        "ReverseSequence: time_axis %lld and batch_axis %lld, expected 0 and 1 in "
                        "either order",
                        (long long)time_axis, (long long)batch_axis);
    int64_t batch = x->shape[batch_axis];
    if (lens->ndim != 1 || lens->shape[0] != batch)
        return d5_error(D5_ERR_SHAPE,
                        "ReverseSequence: input 1 (sequence_lens) has %lld values in %d dims, "
                        "expected a 1-d tensor of the batch size %lld",
                        (long long)d5_tensor_desc_numel(lens), (int)lens->ndim, (long long)batch);
    revseq *r = d5_alloc(sizeof *r, "ReverseSequence");
    if (!r) return D5_ERR_NOMEM;
    *r = (revseq){batch, x->shape[time_axis], 1, time_axis == 0};
    for (int32_t d = 2; d < x->ndim; d++) r->inner *= x->shape[d];
    *state = r;
    out[0] = *x;
    return D5_OK;
}

/* The flat offset of (time t, batch b). */
static int64_t at(const revseq *r, int64_t t, int64_t b)
{
    return (r->time_first ? t * r->batch + b : b * r->time + t) * r->inner;
}

static d5_status check_lens(const revseq *r, const d5_rt *lens)
{
    for (int64_t b = 0; b < r->batch; b++)
        if (!(lens->data[b] >= 0 && lens->data[b] <= (double)r->time))
            return d5_error(D5_ERR_RANGE,
                            "ReverseSequence: sequence_lens[%lld] is %.0f, outside [0, %lld]",
                            (long long)b, lens->data[b], (long long)r->time);
    return D5_OK;
}

/* dst[at(t, b)] (+)= src[at(source time, b)] for every element. */
static void reverse(const revseq *r, const double *lens, const double *src, double *dst, int add)
{
    for (int64_t b = 0; b < r->batch; b++) {
        int64_t len = (int64_t)lens[b];
        for (int64_t t = 0; t < r->time; t++) {
            const double *s = src + at(r, t < len ? len - 1 - t : t, b);
            double *d = dst + at(r, t, b);
            for (int64_t i = 0; i < r->inner; i++) d[i] = add ? d[i] + s[i] : s[i];
        }
    }
}

static d5_status revseq_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const revseq *r = state;
    d5_status s = check_lens(r, &in[1]);
    if (s == D5_OK) reverse(r, in[1].data, in[0].data, out[0].data, 0);
    return s;
}

static d5_status revseq_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const revseq *r = state;
    if (!gin[0].data) return D5_OK;
    d5_status s = check_lens(r, &in[1]);
    /* The map is its own inverse, so the gradient is reversed the same way. */
    if (s == D5_OK) reverse(r, in[1].data, gout[0].data, gin[0].data, 1);
    return s;
}

D5_REF_OPERATOR(ReverseSequence, 2, 2, 1, 1, revseq_create, revseq_forward, revseq_backward, NULL,
                NULL);
