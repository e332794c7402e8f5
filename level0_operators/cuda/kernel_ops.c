/* Operators of transformer graphs on the cuda backend's own kernels
 * (kernels.cu), float32, device memory, forward (inference graphs):
 *
 *   Erf, Sqrt, Exp, Neg, Reciprocal, Gelu (approximate none or tanh)
 *   Add, Sub, Mul, Div, Pow with ONNX's multidirectional broadcasting
 *   Where (bool condition, broadcasting all three inputs)
 *   LayerNormalization (opset 17: axis, epsilon; Y only)
 *   Transpose (perm), Concat (axis), Split (every opset's lengths),
 *   Gather (int64 indices, axis)
 *
 * Shapes are worked out at create, where everything is checked; forward
 * only launches. Backward for all but Pow, Where and LayerNormalization:
 * the element-wise derivatives; broadcast operands' gradients (and Gather's)
 * summed with atomic additions into zeroed memory; Transpose and Concat as
 * the forward's copies the other way. https://onnx.ai/onnx/operators/ */
#include "cuda_util.h"
#include "kernels.h"

#include <stdio.h>
#include <string.h>

/* One instance: the operator, its iteration space or sizes. */
typedef struct kop {
    const char *name;
    int op;             /* a d5__cuk_unary or d5__cuk_binary */
    d5__cuk_space sp;   /* binary, Where, Transpose */
    int64_t n;          /* elements of the output */
    int64_t rows, cols; /* LayerNormalization; Gather: outer, inner */
    int64_t nidx, axis_dim;
    float eps;
    int32_t nin;
    int64_t axis; /* Concat */
    d5_tensor_desc y;
} kop;

static void kop_destroy(void *state)
{
    d5_free(state);
}

static d5_status launched(int e, const char *op)
{
    return d5__cuda_check((cudaError_t)e, op, "kernel launch");
}

/* A forward or backward pass of an instance, run once every tensor of the
 * call is known to lie in device memory. */
typedef d5_status (*kop_pass)(const kop *k, const d5_op_call *call);

static d5_status checked(void *state, const d5_op_call *call, kop_pass pass)
{
    const kop *k = state;
    d5_status s = d5__cuda_call_on_device(k->name, call);
    return s == D5_OK ? pass(k, call) : s;
}

/* ENTRY, the forward or backward of the op tables: the device check, then
 * PASS. */
#define D5_CUDA_PASS(ENTRY, PASS)                                                                  \
    static d5_status ENTRY(void *state, const d5_op_call *call)                                    \
    {                                                                                              \
        return checked(state, call, PASS);                                                         \
    }

static d5_status new_kop(const char *name, kop **out)
{
    *out = d5_calloc(1, sizeof **out, name);
    if (!*out) return D5_ERR_NOMEM;
    (*out)->name = name;
    return D5_OK;
}

static d5_status rank_ok(const char *op, const d5_tensor_desc *d)
{
    if (d->ndim > D5__CUK_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): %d dimensions; at most %d", op,
                        (int)d->ndim, D5__CUK_MAX_DIMS);
    return D5_OK;
}

/* *axis, negative counting from the back, as an index of x's dimensions;
 * D5_ERR_INVALID when it is outside them (`of` ends the message: " of X"). */
static d5_status axis_in(const char *op, const d5_tensor_desc *x, const char *of, int64_t *axis)
{
    if (*axis < 0) *axis += x->ndim;
    if (*axis < 0 || *axis >= x->ndim)
        return d5_error(D5_ERR_INVALID, "%s (cuda): axis outside the %d dimensions%s", op,
                        (int)x->ndim, of);
    return D5_OK;
}

/* The broadcast of `n` operands (ONNX's multidirectional rule) into sp, the
 * strides of operand k in sp.stride[k]; y receives the output's shape. */
static d5_status broadcast(const char *op, const d5_tensor_desc *const *d, int n, d5__cuk_space *sp,
                           d5_tensor_desc *y)
{
    int32_t rank = 0;
    for (int k = 0; k < n; k++) {
        d5_status s = rank_ok(op, d[k]);
        if (s != D5_OK) return s;
        if (d[k]->ndim > rank) rank = d[k]->ndim;
    }
    memset(sp, 0, sizeof *sp);
    sp->rank = rank;
    for (int32_t i = 0; i < rank; i++) {
        int64_t dim = 1;
        for (int k = 0; k < n; k++) {
            int32_t j = i - (rank - d[k]->ndim);
            int64_t v = j < 0 ? 1 : d[k]->shape[j];
            if (v != 1 && dim != 1 && v != dim) {
                char a[96], b[96];
                snprintf(a, sizeof a, "dimension %d is %lld", (int)i, (long long)dim);
                snprintf(b, sizeof b, "input %d has %lld", k, (long long)v);
                return d5_error(D5_ERR_SHAPE, "%s (cuda): the inputs do not broadcast: %s, %s", op,
                                a, b);
            }
            if (v != 1) dim = v;
        }
        sp->dims[i] = dim;
    }
    for (int k = 0; k < n; k++) {
        int64_t stride = 1;
        for (int32_t i = rank - 1; i >= 0; i--) {
            int32_t j = i - (rank - d[k]->ndim);
            int64_t v = j < 0 ? 1 : d[k]->shape[j];
            sp->stride[k][i] = v == 1 ? 0 : stride;
            stride *= v;
        }
    }
    memset(y, 0, sizeof *y);
    y->dtype = D5_F32;
    y->ndim = rank;
    for (int32_t i = 0; i < rank; i++) y->shape[i] = sp->dims[i];
    return D5_OK;
}

/* ---- Element-wise functions ---- */

static d5_status unary_create(const char *name, int op, const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_status s = d5__cuda_need_f32(name, in, args->ninputs, 0);
    kop *k = NULL;
    if (s == D5_OK) s = new_kop(name, &k);
    if (s != D5_OK) return s;
    k->op = op;
    k->n = d5_tensor_desc_numel(&in[0].desc);
    args->outputs[0] = in[0].desc;
    *state = k;
    return D5_OK;
}

static d5_status run_unary(const kop *k, const d5_op_call *call)
{
    return launched(d5__cuk_unary(k->op, call->inputs[0].data, call->outputs[0].data, k->n),
                    k->name);
}
D5_CUDA_PASS(unary_forward, run_unary)

static void elementwise_cost(void *state, double *flops, double *bytes)
{
    const kop *k = state;
    *flops = (double)k->n;
    *bytes = 8.0 * (double)k->n;
}

/* The create of operator NAME: FN(its name, OP, ...), FN unary_create or
 * binary_create. */
#define D5_CUDA_CREATE(NAME, FN, OP)                                                               \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return FN(#NAME, OP, args, state);                                                         \
    }
D5_CUDA_CREATE(Erf, unary_create, D5__CUK_ERF)
D5_CUDA_CREATE(Sqrt, unary_create, D5__CUK_SQRT)
D5_CUDA_CREATE(Exp, unary_create, D5__CUK_EXP)
D5_CUDA_CREATE(Neg, unary_create, D5__CUK_NEG)
D5_CUDA_CREATE(Reciprocal, unary_create, D5__CUK_RECIPROCAL)

static d5_status Gelu_create(const d5_op_create_args *args, void **state)
{
    const char *approximate = NULL;
    d5_status s = d5_attrs_string(args->attrs, "approximate", "none", &approximate);
    if (s != D5_OK) return s;
    int tanh_form = strcmp(approximate, "tanh") == 0;
    if (!tanh_form && strcmp(approximate, "none") != 0)
        return d5_error(D5_ERR_INVALID,
                        "Gelu (cuda): approximate is '%.32s'; expected none or tanh", approximate);
    return unary_create("Gelu", tanh_form ? D5__CUK_GELU_TANH : D5__CUK_GELU, args, state);
}

/* ---- Broadcasting binary operators and Where ---- */

/* An instance over the broadcast of the n input descriptors. */
static d5_status broadcast_create(const char *name, int op, const d5_tensor_desc *const *d, int n,
                                  d5_tensor_desc *out, void **state)
{
    kop *k = NULL;
    d5_status s = new_kop(name, &k);
    if (s == D5_OK) s = broadcast(name, d, n, &k->sp, &out[0]);
    if (s == D5_OK) {
        k->op = op;
        k->n = d5_tensor_desc_numel(&out[0]);
    }
    return d5__cuda_created(s, k, kop_destroy, state);
}

static d5_status binary_create(const char *name, int op, const d5_op_create_args *args,
                               void **state)
{
    const d5_tensor *in = args->inputs;
    d5_status s = d5__cuda_inputs_f32(name, in, args->ninputs, 2, 0);
    const d5_tensor_desc *d[2] = {&in[0].desc, &in[1].desc};
    return s == D5_OK ? broadcast_create(name, op, d, 2, args->outputs, state) : s;
}

static d5_status run_binary(const kop *k, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    return launched(d5__cuk_binary(k->op, in[0].data, in[1].data, call->outputs[0].data, &k->sp),
                    k->name);
}
D5_CUDA_PASS(binary_forward, run_binary)

D5_CUDA_CREATE(Add, binary_create, D5__CUK_ADD)
D5_CUDA_CREATE(Sub, binary_create, D5__CUK_SUB)
D5_CUDA_CREATE(Mul, binary_create, D5__CUK_MUL)
D5_CUDA_CREATE(Div, binary_create, D5__CUK_DIV)
D5_CUDA_CREATE(Pow, binary_create, D5__CUK_POW)

static d5_status Where_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    if (nin < 3 || in[0].desc.dtype != D5_BOOL)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Where (cuda): a bool condition and two float32 inputs");
    d5_status s = d5__cuda_need_f32("Where", in, nin, 1);
    if (s == D5_OK) s = d5__cuda_need_f32("Where", in, nin, 2);
    const d5_tensor_desc *d[3] = {&in[0].desc, &in[1].desc, &in[2].desc};
    return s == D5_OK ? broadcast_create("Where", 0, d, 3, args->outputs, state) : s;
}

static d5_status run_where(const kop *k, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    return launched(
        d5__cuk_where(in[0].data, in[1].data, in[2].data, call->outputs[0].data, &k->sp), k->name);
}
D5_CUDA_PASS(Where_forward, run_where)

/* ---- LayerNormalization ---- */

static d5_status LayerNormalization_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    const char *const OP = "LayerNormalization";
    int64_t axis = -1;
    double eps = 1e-5;
    d5_status s = d5__cuda_inputs_f32(OP, in, nin, 2, 1);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &eps);
    if (s != D5_OK) return s;
    if (args->noutputs > 1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (cuda): Mean and InvStdDev outputs are not supported (Y only)", OP);
    const d5_tensor_desc *x = &in[0].desc;
    if ((s = axis_in(OP, x, " of X", &axis)) != D5_OK) return s;
    int64_t rows = 1, cols = 1;
    for (int32_t i = 0; i < x->ndim; i++) *(i < axis ? &rows : &cols) *= x->shape[i];
    for (int32_t k = 1; k < nin && k < 3; k++)
        if (in[k].desc.dtype != D5_DTYPE_INVALID && d5_tensor_desc_numel(&in[k].desc) != cols)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (cuda): input %d must have the %lld elements of the normalized "
                            "axes (no other broadcast)",
                            OP, (int)k, (long long)cols);
    kop *k = NULL;
    if ((s = new_kop(OP, &k)) != D5_OK) return s;
    k->rows = rows;
    k->cols = cols;
    k->eps = (float)eps;
    k->n = rows * cols;
    args->outputs[0] = *x;
    *state = k;
    return D5_OK;
}

static d5_status run_layernorm(const kop *k, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    const float *bias = call->ninputs > 2 ? in[2].data : NULL;
    return launched(d5__cuk_layernorm(in[0].data, in[1].data, bias, call->outputs[0].data, k->rows,
                                      k->cols, k->eps),
                    k->name);
}
D5_CUDA_PASS(LayerNormalization_forward, run_layernorm)

static void layernorm_cost(void *state, double *flops, double *bytes)
{
    const kop *k = state;
    *flops = 8.0 * (double)k->n;
    *bytes = 8.0 * (double)k->n;
}

/* ---- Transpose, Concat, Gather ---- */

static d5_status Transpose_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__cuda_need_f32("Transpose", in, args->ninputs, 0);
    if (s == D5_OK) s = rank_ok("Transpose", &in[0].desc);
    const int64_t *perm = NULL;
    int64_t np = 0;
    if (s == D5_OK) s = d5_attrs_ints(args->attrs, "perm", &perm, &np);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int32_t r = x->ndim;
    if (perm && np != r)
        return d5_error(D5_ERR_INVALID, "Transpose (cuda): perm has %lld entries for %d dimensions",
                        (long long)np, (int)r);
    int64_t xs[D5__CUK_MAX_DIMS], p[D5__CUK_MAX_DIMS];
    int seen[D5__CUK_MAX_DIMS] = {0};
    {
        int64_t st = 1;
        for (int32_t i = r - 1; i >= 0; i--) {
            xs[i] = st;
            st *= x->shape[i];
        }
    }
    for (int32_t i = 0; i < r; i++) {
        p[i] = perm ? perm[i] : r - 1 - i;
        if (p[i] < 0 || p[i] >= r || seen[p[i]]++)
            return d5_error(D5_ERR_INVALID, "Transpose (cuda): perm is not a permutation of 0..%d",
                            (int)r - 1);
    }
    kop *k = NULL;
    if ((s = new_kop("Transpose", &k)) != D5_OK) return s;
    k->sp.rank = r;
    out[0] = *x;
    int64_t ys = 1;
    for (int32_t i = r - 1; i >= 0; i--) {
        out[0].shape[i] = x->shape[p[i]];
        k->sp.dims[i] = x->shape[p[i]];
        k->sp.stride[0][i] = xs[p[i]];
        k->sp.stride[1][i] = ys;
        ys *= x->shape[p[i]];
    }
    k->n = d5_tensor_desc_numel(&out[0]);
    *state = k;
    return D5_OK;
}

static d5_status run_transpose(const kop *k, const d5_op_call *call)
{
    return launched(d5__cuk_copy(call->inputs[0].data, call->outputs[0].data, &k->sp), k->name);
}
D5_CUDA_PASS(Transpose_forward, run_transpose)

static d5_status Concat_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    int64_t axis = 0;
    d5_status s = d5_attrs_int(args->attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5__cuda_inputs_f32("Concat", in, nin, nin, 0);
    if (s == D5_OK) s = rank_ok("Concat", &in[0].desc);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if ((s = axis_in("Concat", x, "", &axis)) != D5_OK) return s;
    out[0] = *x;
    out[0].shape[axis] = 0;
    for (int32_t i = 0; i < nin; i++) {
        const d5_tensor_desc *d = &in[i].desc;
        for (int32_t j = 0; j < x->ndim; j++)
            if (d->ndim != x->ndim || (j != axis && d->shape[j] != x->shape[j]))
                return d5_error(D5_ERR_SHAPE,
                                "Concat (cuda): input %d does not match input 0 off the axis",
                                (int)i);
        out[0].shape[axis] += d->shape[axis];
    }
    kop *k = NULL;
    if ((s = new_kop("Concat", &k)) != D5_OK) return s;
    k->nin = nin;
    k->axis = axis;
    k->y = out[0];
    k->n = d5_tensor_desc_numel(&out[0]);
    *state = k;
    return D5_OK;
}

/* The copy between part `t` (contiguous) and its slice of the whole `w` at
 * offset `at` along the axis: to_whole 0 reads the slice, 1 writes it. */
static d5_status slice_copy(const kop *k, const d5_tensor_desc *t, float *part, float *whole,
                            int64_t at, int to_whole)
{
    const d5_tensor_desc *w = &k->y;
    d5__cuk_space sp;
    memset(&sp, 0, sizeof sp);
    sp.rank = t->ndim;
    int64_t ts = 1, ws = 1, base = 0;
    for (int32_t j = t->ndim - 1; j >= 0; j--) {
        sp.dims[j] = t->shape[j];
        sp.stride[to_whole][j] = ws;
        sp.stride[1 - to_whole][j] = ts;
        if (j == k->axis) base = at * ws;
        ts *= t->shape[j];
        ws *= w->shape[j];
    }
    const float *src = to_whole ? part : whole + base;
    float *dst = to_whole ? whole + base : part;
    return launched(d5__cuk_copy(src, dst, &sp), k->name);
}

/* Each of the n parts, one after the other along the axis, copied into
 * (to_whole 1) or out of (0) its slice of the whole. */
static d5_status parts_copy(const kop *k, const d5_tensor *parts, int32_t n, float *whole,
                            int to_whole)
{
    d5_status s = D5_OK;
    int64_t at = 0;
    for (int32_t i = 0; s == D5_OK && i < n; i++) {
        s = slice_copy(k, &parts[i].desc, parts[i].data, whole, at, to_whole);
        at += parts[i].desc.shape[k->axis];
    }
    return s;
}

/* Each input copied into its slice of the output: the output's strides, the
 * input's own contiguous ones. */
static d5_status run_concat(const kop *k, const d5_op_call *call)
{
    return parts_copy(k, call->inputs, call->ninputs, call->outputs[0].data, 1);
}
D5_CUDA_PASS(Concat_forward, run_concat)

static d5_status Gather_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    int64_t axis = 0;
    d5_status s = d5__cuda_need_f32("Gather", in, nin, 0);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "axis", 0, &axis);
    if (s != D5_OK) return s;
    if (nin < 2 || in[1].desc.dtype != D5_I64)
        return d5_error(D5_ERR_UNSUPPORTED, "Gather (cuda): int64 indices only");
    const d5_tensor_desc *x = &in[0].desc, *ix = &in[1].desc;
    if ((s = axis_in("Gather", x, " of data", &axis)) != D5_OK) return s;
    if (x->ndim - 1 + ix->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "Gather (cuda): the output has too many dimensions");
    kop *k = NULL;
    if ((s = new_kop("Gather", &k)) != D5_OK) return s;
    k->rows = k->cols = 1;
    for (int32_t i = 0; i < x->ndim; i++)
        if (i < axis)
            k->rows *= x->shape[i];
        else if (i > axis)
            k->cols *= x->shape[i];
    k->nidx = d5_tensor_desc_numel(ix);
    k->axis_dim = x->shape[axis];
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = D5_F32;
    for (int32_t i = 0; i < axis; i++) out[0].shape[out[0].ndim++] = x->shape[i];
    for (int32_t i = 0; i < ix->ndim; i++) out[0].shape[out[0].ndim++] = ix->shape[i];
    for (int32_t i = (int32_t)axis + 1; i < x->ndim; i++) out[0].shape[out[0].ndim++] = x->shape[i];
    k->n = d5_tensor_desc_numel(&out[0]);
    *state = k;
    return D5_OK;
}

static d5_status run_gather(const kop *k, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    return launched(d5__cuk_gather(in[0].data, in[1].data, call->outputs[0].data, k->rows, k->nidx,
                                   k->cols, k->axis_dim),
                    k->name);
}
D5_CUDA_PASS(Gather_forward, run_gather)

/* Split: its shapes and checks are ref's (every opset's way of giving the
 * lengths); each output is a strided copy of its slice of the input. */
static d5_status Split_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_op_desc *ref = NULL;
    void *ref_state = NULL;
    int64_t axis = 0;
    d5_status s = d5__cuda_need_f32("Split", in, args->ninputs, 0);
    if (s == D5_OK) s = rank_ok("Split", &in[0].desc);
    if (s == D5_OK) s = d5_op_find("Split", "ref", &ref);
    if (s == D5_OK) s = ref->create(args, &ref_state);
    if (s == D5_OK && ref->destroy) ref->destroy(ref_state);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "axis", 0, &axis);
    if (s != D5_OK) return s;
    kop *k = NULL;
    if ((s = new_kop("Split", &k)) != D5_OK) return s;
    k->axis = axis < 0 ? axis + in[0].desc.ndim : axis;
    k->y = in[0].desc; /* the input: its strides */
    k->n = d5_tensor_desc_numel(&in[0].desc);
    *state = k;
    return D5_OK;
}

static d5_status run_split(const kop *k, const d5_op_call *call)
{
    return parts_copy(k, call->outputs, call->noutputs, call->inputs[0].data, 0);
}
D5_CUDA_PASS(Split_forward, run_split)

/* ---- Backward passes ---- */

/* Zeroes a gradient (before atomic additions, or when none flows in). */
static d5_status zero(const kop *k, const d5_tensor *t)
{
    return t->data ? d5__cuda_zero(t->data, d5_tensor_desc_numel(&t->desc), k->name) : D5_OK;
}

static d5_status grad_unary(const kop *k, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    d5_tensor *gin = call->grad_inputs;
    if (!gin[0].data) return D5_OK;
    if (!gout[0].data) return zero(k, &gin[0]);
    return launched(d5__cuk_unary_backward(k->op, call->inputs[0].data, call->outputs[0].data,
                                           gout[0].data, gin[0].data, k->n),
                    k->name);
}
D5_CUDA_PASS(unary_backward, grad_unary)

static d5_status grad_binary(const kop *k, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < 2 && s == D5_OK; i++) s = zero(k, &gin[i]);
    if (s != D5_OK || !call->grad_outputs[0].data) return s;
    return launched(d5__cuk_binary_backward(k->op, in[0].data, in[1].data,
                                            call->grad_outputs[0].data, gin[0].data, gin[1].data,
                                            &k->sp),
                    k->name);
}
D5_CUDA_PASS(binary_backward, grad_binary)

/* The forward's copy the other way: dX at the input's offsets, read from dY
 * at the output's. */
static d5_status grad_transpose(const kop *k, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    d5_tensor *gin = call->grad_inputs;
    if (!gin[0].data) return D5_OK;
    if (!gout[0].data) return zero(k, &gin[0]);
    d5__cuk_space sp = k->sp;
    memcpy(sp.stride[0], k->sp.stride[1], sizeof sp.stride[0]);
    memcpy(sp.stride[1], k->sp.stride[0], sizeof sp.stride[1]);
    return launched(d5__cuk_copy(gout[0].data, gin[0].data, &sp), k->name);
}
D5_CUDA_PASS(Transpose_backward, grad_transpose)

/* Each input's gradient is its slice of dY. */
static d5_status grad_concat(const kop *k, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    float *dy = call->grad_outputs[0].data;
    d5_tensor *gin = call->grad_inputs;
    d5_status s = D5_OK;
    int64_t at = 0;
    for (int32_t i = 0; s == D5_OK && i < call->ninputs; i++) {
        if (gin[i].data)
            s = dy ? slice_copy(k, &in[i].desc, gin[i].data, dy, at, 0) : zero(k, &gin[i]);
        at += in[i].desc.shape[k->axis];
    }
    return s;
}
D5_CUDA_PASS(Concat_backward, grad_concat)

/* dData sums dY's rows at their indices; the indices have no gradient. */
static d5_status grad_gather(const kop *k, const d5_op_call *call)
{
    const float *dy = call->grad_outputs[0].data;
    d5_tensor *gin = call->grad_inputs;
    d5_status s = zero(k, &gin[0]);
    if (s != D5_OK || !gin[0].data || !dy) return s;
    return launched(d5__cuk_gather_backward(dy, call->inputs[1].data, gin[0].data, k->rows, k->nidx,
                                            k->cols, k->axis_dim),
                    k->name);
}
D5_CUDA_PASS(Gather_backward, grad_gather)

/* dX is dY's parts put back in place (zeros for a part without gradient). */
static d5_status grad_split(const kop *k, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_tensor *out = call->outputs;
    d5_tensor *gin = call->grad_inputs;
    if (!gin[0].data) return D5_OK;
    int all = 1;
    for (int32_t i = 0; i < nout; i++) all = all && gout[i].data;
    d5_status s = all ? D5_OK : zero(k, &gin[0]);
    int64_t at = 0;
    for (int32_t i = 0; s == D5_OK && i < nout; i++) {
        if (gout[i].data) s = slice_copy(k, &out[i].desc, gout[i].data, gin[0].data, at, 1);
        at += out[i].desc.shape[k->axis];
    }
    return s;
}
D5_CUDA_PASS(Split_backward, grad_split)

/* ---- The tables ---- */

/* FLAGS: FWD (forward only) or BWD (with backward). */
#define FWD 0
#define BWD D5_OP_HAS_BACKWARD
#define D5_CUDA_KOP(NAME, MININ, MAXIN, FLAGS, FORWARD, BACKWARD, COST)                            \
    const d5_op_desc d5__op_cuda_##NAME = {D5_CUDA_OP(#NAME, FLAGS, MININ, MAXIN, 1, 1),           \
                                           .create = NAME##_create,                                \
                                           .forward = FORWARD,                                     \
                                           .backward = BACKWARD,                                   \
                                           .destroy = kop_destroy,                                 \
                                           .cost = COST};
D5_CUDA_KOP(Erf, 1, 1, BWD, unary_forward, unary_backward, elementwise_cost)
D5_CUDA_KOP(Sqrt, 1, 1, BWD, unary_forward, unary_backward, elementwise_cost)
D5_CUDA_KOP(Exp, 1, 1, BWD, unary_forward, unary_backward, elementwise_cost)
D5_CUDA_KOP(Neg, 1, 1, BWD, unary_forward, unary_backward, elementwise_cost)
D5_CUDA_KOP(Reciprocal, 1, 1, BWD, unary_forward, unary_backward, elementwise_cost)
D5_CUDA_KOP(Gelu, 1, 1, BWD, unary_forward, unary_backward, elementwise_cost)
D5_CUDA_KOP(Add, 2, 2, BWD, binary_forward, binary_backward, elementwise_cost)
D5_CUDA_KOP(Sub, 2, 2, BWD, binary_forward, binary_backward, elementwise_cost)
D5_CUDA_KOP(Mul, 2, 2, BWD, binary_forward, binary_backward, elementwise_cost)
D5_CUDA_KOP(Div, 2, 2, BWD, binary_forward, binary_backward, elementwise_cost)
D5_CUDA_KOP(Pow, 2, 2, FWD, binary_forward, NULL, elementwise_cost)
D5_CUDA_KOP(Where, 3, 3, FWD, Where_forward, NULL, elementwise_cost)
D5_CUDA_KOP(LayerNormalization, 2, 3, FWD, LayerNormalization_forward, NULL, layernorm_cost)
D5_CUDA_KOP(Transpose, 1, 1, BWD, Transpose_forward, Transpose_backward, elementwise_cost)
D5_CUDA_KOP(Concat, 1, 2147483647, BWD, Concat_forward, Concat_backward, elementwise_cost)
D5_CUDA_KOP(Gather, 2, 2, BWD, Gather_forward, Gather_backward, elementwise_cost)
/* clang-format off */
const d5_op_desc d5__op_cuda_Split = {
    D5_CUDA_OP("Split", BWD, 1, 2, 1, 2147483647), .create = Split_create,
    .forward = Split_forward, .backward = Split_backward, .destroy = kop_destroy,
    .cost = elementwise_cost};
/* clang-format on */
