/* Split (ONNX opsets 1 to 18): cuts the input along `axis` (default 0, negative
 * counts from the back) into the outputs. Their lengths come from `split`:
 * the optional int64 input 1 (known at create) from opset 13, the optional
 * attribute split in opsets 2 to 12, either of the two in opset 1. Without
 * it the axis is cut into equal parts, one per output, and must divide evenly;
 * from opset 18 the attribute num_outputs may ask for ceil-sized parts
 * instead, the last one shorter.
 * https://onnx.ai/onnx/operators/onnx__Split.html */
#include "shape_util.h"

typedef struct split {
    int32_t axis;
} split;

/* The lengths of the parts when `split` is not given. */
static d5_status equal_parts(int64_t dim, int32_t nout, const d5_attrs *attrs, int64_t opset,
                             int64_t *len)
{
    int64_t num;
    d5_status s = d5_attrs_int(attrs, "num_outputs", 0, &num);
    if (s != D5_OK) return s;
    if (d5_attrs_find(attrs, "num_outputs")) {
        if (opset < 18)
            return d5_error(D5_ERR_INVALID,
                            "Split: num_outputs is an attribute of opset 18 and later, not of "
                            "opset %lld",
                            (long long)opset);
        if (num != nout)
            return d5_error(D5_ERR_INVALID, "Split: num_outputs is %lld but %d outputs asked for",
                            (long long)num, (int)nout);
        int64_t part = (dim + nout - 1) / nout; /* ceil */
        if (dim - part * (nout - 1) < 0)
            return d5_error(D5_ERR_SHAPE,
                            "Split: the axis has %lld elements, too few for %d parts of %lld",
                            (long long)dim, (int)nout, (long long)part);
        for (int32_t k = 0; k < nout; k++) len[k] = k < nout - 1 ? part : dim - part * (nout - 1);
        return D5_OK;
    }
    if (dim % nout != 0)
        return d5_error(D5_ERR_SHAPE,
                        "Split: the axis has %lld elements, not divisible into %d equal outputs",
                        (long long)dim, (int)nout);
    for (int32_t k = 0; k < nout; k++) len[k] = dim / nout;
    return D5_OK;
}

/* Reads the attribute split (opset 12 and earlier) into len[0..nout-1]. */
static d5_status split_attribute(const d5_attr *a, int32_t nout, int64_t *len)
{
    if (a->type != D5_ATTR_INTS)
        return d5_error(D5_ERR_INVALID, "Split: attribute split must be a list of ints");
    if (a->count != nout)
        return d5_error(D5_ERR_INVALID, "Split: attribute split has %lld values for %d outputs",
                        (long long)a->count, (int)nout);
    for (int32_t k = 0; k < nout; k++) len[k] = a->ints[k];
    return D5_OK;
}

/* Where the lengths come from in this opset: input 1, the attribute, or
 * neither (*from is 1, 2 or 0). */
static d5_status split_source(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                              int64_t opset, int *from)
{
    int has_input = d5__has_input(in, nin, 1), has_attr = d5_attrs_find(attrs, "split") != NULL;
    if (opset >= 2 && opset < 13 && nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Split: opset %lld takes 1 input (split is an attribute), got %d",
                        (long long)opset, (int)nin);
    if (opset >= 13 && has_attr)
        return d5_error(D5_ERR_INVALID,
                        "Split: opset %lld takes split as input 1, not as an attribute",
                        (long long)opset);
    if (has_input && has_attr)
        return d5_error(D5_ERR_INVALID,
                        "Split: give split either as input 1 or as an attribute, not both");
    *from = has_input ? 1 : has_attr ? 2 : 0;
    return D5_OK;
}

static d5_status split_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    int64_t axis, opset;
    int32_t ax;
    int from = 0;
    d5_status s = d5__need_input("Split", in, nin, 0, "input");
    if (s == D5_OK) s = d5__ref_opset("Split", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = split_source(in, nin, attrs, opset, &from);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5__axis("Split", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    int64_t dim = in[0].desc.shape[ax];
    int64_t *len = d5_alloc((size_t)nout * sizeof *len, "Split");
    if (!len) return D5_ERR_NOMEM;
    if (from != 0) {
        int64_t n = nout, sum = 0;
        if (d5_attrs_find(attrs, "num_outputs"))
            s = d5_error(D5_ERR_INVALID, "Split: give either split or num_outputs, not both");
        if (s == D5_OK && from == 1)
            s = d5__const_ints("Split", in, nin, 1, "split", len, nout, &n);
        if (s == D5_OK && from == 2) s = split_attribute(d5_attrs_find(attrs, "split"), nout, len);
        if (s == D5_OK && n != nout)
            s = d5_error(D5_ERR_INVALID, "Split: input 1 (split) has %lld values for %d outputs",
                         (long long)n, (int)nout);
        for (int32_t k = 0; s == D5_OK && k < nout; k++) {
            if (len[k] < 0)
                s = d5_error(D5_ERR_INVALID, "Split: split[%d] is %lld", (int)k, (long long)len[k]);
            sum += len[k];
        }
        if (s == D5_OK && sum != dim)
            s = d5_error(D5_ERR_SHAPE, "Split: split sums to %lld but axis %d has %lld elements",
                         (long long)sum, (int)ax, (long long)dim);
    } else {
        s = equal_parts(dim, nout, attrs, opset, len);
    }
    for (int32_t k = 0; s == D5_OK && k < nout; k++) {
        out[k] = in[0].desc;
        out[k].shape[ax] = len[k];
    }
    d5_free(len);
    if (s != D5_OK) return s;
    split *st = d5_alloc(sizeof *st, "Split");
    if (!st) return D5_ERR_NOMEM;
    st->axis = ax;
    *state = st;
    return D5_OK;
}

static d5_status split_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    const split *sp = state;
    int64_t offset = 0;
    for (int32_t k = 0; k < nout; k++) {
        int64_t len = out[k].desc->shape[sp->axis];
        d5__axis_block(in[0].desc, sp->axis, offset, len, in[0].data, out[k].data, 0);
        offset += len;
    }
    return D5_OK;
}

static d5_status split_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const split *sp = state;
    int64_t offset = 0;
    if (!gin[0].data) return D5_OK;
    for (int32_t k = 0; k < nout; k++) {
        int64_t len = out[k].desc->shape[sp->axis];
        d5__axis_block(in[0].desc, sp->axis, offset, len, gin[0].data, gout[k].data, 1);
        offset += len;
    }
    return D5_OK;
}

D5_REF_OPERATOR(Split, 1, 2, 1, INT32_MAX, split_create, split_forward, split_backward, NULL, NULL);
