/* Concat (ONNX opset 13): joins 1..N tensors along `axis` (required; negative
 * counts from the back). All inputs have the same rank, data type and sizes
 * except along the axis.
 * https://onnx.ai/onnx/operators/onnx__Concat.html */
#include "shape_util.h"

typedef struct concat {
    int32_t axis;
} concat;

static d5_status concat_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5_attrs_find(attrs, "axis"))
        return d5_error(D5_ERR_INVALID, "Concat: attribute axis is required");
    int64_t axis;
    int32_t ax;
    d5_status s = d5_attrs_int(attrs, "axis", 0, &axis);
    for (int32_t k = 0; s == D5_OK && k < nin; k++)
        s = d5__need_input("Concat", in, nin, k, "input");
    if (s == D5_OK) s = d5__axis("Concat", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x0 = &in[0].desc;
    out[0] = *x0;
    out[0].shape[ax] = 0;
    for (int32_t k = 0; k < nin; k++) {
        const d5_tensor_desc *x = &in[k].desc;
        if (x->dtype != x0->dtype)
            return d5_error(D5_ERR_INVALID, "Concat: input %d has data type %s, input 0 %s", (int)k,
                            d5_dtype_name((d5_dtype)x->dtype), d5_dtype_name((d5_dtype)x0->dtype));
        int same = x->ndim == x0->ndim;
        for (int32_t d = 0; same && d < x->ndim; d++)
            if (d != ax && x->shape[d] != x0->shape[d]) same = 0;
        if (!same) {
            char a[96], b[96];
            d5__shape_str(x0, a, sizeof a);
            d5__shape_str(x, b, sizeof b);
            return d5_error(D5_ERR_SHAPE,
                            "Concat: input 0 is %s but input %d is %s: they may differ only "
                            "along axis %d",
                            a, (int)k, b, (int)ax);
        }
        out[0].shape[ax] += x->shape[ax];
    }
    concat *st = d5_alloc(sizeof *st, "Concat");
    if (!st) return D5_ERR_NOMEM;
    st->axis = ax;
    *state = st;
    return D5_OK;
}

static d5_status concat_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const concat *c = state;
    int64_t offset = 0;
    for (int32_t k = 0; k < nin; k++) {
        int64_t len = in[k].desc->shape[c->axis];
        d5__axis_block(out[0].desc, c->axis, offset, len, out[0].data, in[k].data, 1);
        offset += len;
    }
    return D5_OK;
}

static d5_status concat_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const concat *c = state;
    int64_t offset = 0;
    for (int32_t k = 0; k < nin; k++) {
        int64_t len = in[k].desc->shape[c->axis];
        if (gin[k].data)
            d5__axis_block(out[0].desc, c->axis, offset, len, gout[0].data, gin[k].data, 0);
        offset += len;
    }
    return D5_OK;
}

D5_REF_OPERATOR(Concat, 1, INT32_MAX, 1, 1, concat_create, concat_forward, concat_backward, NULL,
                NULL);
