/* Split (ONNX opsets 1 to 18) and Concat (opset 13) on the dnnl backend, any
 * data type: blocks copied with memcpy. Seen along the axis, the tensor is
 * outer x len x inner; output (Split) or input (Concat) k holds the blocks
 * [len_k x inner] at offset off_k of every outer row. The (outer row, part)
 * pairs are split among the threads. The parts' lengths and the checks are
 * ref's (its create runs first). Backward is the other operator: Split's dX
 * is the concatenation of the dY (zeros where one is not given), Concat's dX
 * the parts of dY.
 * https://onnx.ai/onnx/operators/onnx__Split.html
 * https://onnx.ai/onnx/operators/onnx__Concat.html */
#include "kernels.h"

#include "ref/util.h"

extern const d5_op_desc d5__op_ref_Split, d5__op_ref_Concat;

typedef struct dparts {
    int64_t outer, len, inner; /* inner in bytes; len: the whole axis */
    int32_t nparts;
    int64_t *plen, *poff; /* each part's length and offset along the axis */
} dparts;

static void parts_destroy(void *state)
{
    dparts *p = state;
    if (!p) return;
    d5_free(p->plen);
    d5_free(p->poff);
    d5_free(p);
}

/* The plan of a tensor `whole` cut along `axis` into parts of the given
 * descriptors. */
static d5_status parts_make(const char *name, const d5_tensor_desc *whole, int32_t axis,
                            const d5_tensor_desc *const *part, int32_t nparts, void **state)
{
    dparts *p = d5_calloc(1, sizeof *p, name);
    if (!p) return D5_ERR_NOMEM;
    p->plen = d5_alloc((size_t)nparts * sizeof *p->plen, name);
    p->poff = d5_alloc((size_t)nparts * sizeof *p->poff, name);
    if (!p->plen || !p->poff) {
        parts_destroy(p);
        return D5_ERR_NOMEM;
    }
    p->nparts = nparts;
    p->outer = 1;
    p->inner = (int64_t)d5_dtype_size((d5_dtype)whole->dtype);
    for (int32_t d = 0; d < axis; d++) p->outer *= whole->shape[d];
    for (int32_t d = axis + 1; d < whole->ndim; d++) p->inner *= whole->shape[d];
    p->len = whole->shape[axis];
    int64_t off = 0;
    for (int32_t k = 0; k < nparts; k++) {
        p->plen[k] = part[k]->shape[axis];
        p->poff[k] = off;
        off += p->plen[k];
    }
    *state = p;
    return D5_OK;
}

/* to_parts 1: whole -> parts (Split); 0: parts -> whole (Concat). A NULL part
 * reads as zeros. */
static void parts_copy(const dparts *p, char *whole, char *const *part, int to_parts)
{
    int64_t items = p->outer * p->nparts;
    int parallel = (double)p->outer * (double)p->len * (double)p->inner >= D5_PARALLEL_BYTES;
    D5_PARALLEL_RANGE(items, parallel, lo, hi, {
        for (int64_t i = lo; i < hi; i++) {
            int64_t o = i / p->nparts;
            int32_t k = (int32_t)(i % p->nparts);
            size_t bytes = (size_t)(p->plen[k] * p->inner);
            char *w = whole + (o * p->len + p->poff[k]) * p->inner;
            char *q = part[k] ? part[k] + (size_t)o * bytes : NULL;
            if (!bytes) continue;
            if (to_parts && q)
                memcpy(q, w, bytes);
            else if (!to_parts && q)
                memcpy(w, q, bytes);
            else if (!to_parts)
                memset(w, 0, bytes);
        }
    })
}

/* ---- Split ---------------------------------------------------------------------------- */

static d5_status split_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    d5_status s = d5__dnnl_ref_shapes(&d5__op_ref_Split, args);
    int64_t axis;
    int32_t ax;
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5__axis("Split", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    const d5_tensor_desc *part[256];
    if (nout > 256) return d5_error(D5_ERR_UNSUPPORTED, "Split (dnnl): more than 256 outputs");
    for (int32_t k = 0; k < nout; k++) part[k] = &out[k];
    return parts_make("Split", &in[0].desc, ax, part, nout, state);
}

static d5_status split_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    int32_t nout = call->noutputs;
    char *part[256];
    for (int32_t k = 0; k < nout; k++) part[k] = out[k].data;
    parts_copy(state, in[0].data, part, 1);
    return D5_OK;
}

static d5_status split_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    d5_tensor *gin = call->grad_inputs;
    if (!gin[0].data) return D5_OK;
    char *part[256];
    for (int32_t k = 0; k < nout; k++) part[k] = gout[k].data;
    parts_copy(state, gin[0].data, part, 0);
    return D5_OK;
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Split = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "Split",
    .backend = "dnnl", .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 256,
    .create = split_create, .forward = split_forward, .backward = split_backward,
    .destroy = parts_destroy};
/* clang-format on */

/* ---- Concat --------------------------------------------------------------------------- */

static d5_status concat_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__dnnl_ref_shapes(&d5__op_ref_Concat, args);
    int64_t axis;
    int32_t ax;
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5__axis("Concat", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    const d5_tensor_desc *part[256];
    if (nin > 256) return d5_error(D5_ERR_UNSUPPORTED, "Concat (dnnl): more than 256 inputs");
    for (int32_t k = 0; k < nin; k++) part[k] = &in[k].desc;
    return parts_make("Concat", &out[0], ax, part, nin, state);
}

static d5_status concat_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    char *part[256];
    for (int32_t k = 0; k < nin; k++) part[k] = in[k].data;
    parts_copy(state, out[0].data, part, 0);
    return D5_OK;
}

static d5_status concat_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nin = call->ninputs;
    d5_tensor *gin = call->grad_inputs;
    const dparts *p = state;
    char *part[256];
    for (int32_t k = 0; k < nin; k++) part[k] = gin[k].data;
    if (gout[0].data) {
        parts_copy(p, gout[0].data, part, 1);
        return D5_OK;
    }
    for (int32_t k = 0; k < nin; k++)
        if (part[k]) memset(part[k], 0, (size_t)(p->outer * p->plen[k] * p->inner));
    return D5_OK;
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Concat = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "Concat",
    .backend = "dnnl", .min_inputs = 1, .max_inputs = 256, .min_outputs = 1, .max_outputs = 1,
    .create = concat_create, .forward = concat_forward, .backward = concat_backward,
    .destroy = parts_destroy};
/* clang-format on */
