/* FusedConv: a convolution with its following addition and activation, as
 * d5's graph optimisation (fuse-conv-activation) writes it; the signature of
 * ONNX Runtime's com.microsoft FusedConv:
 *   Y = activation(Conv(X, W, B) + Z)
 * with inputs X, W, optional B, optional Z (the convolution's output shape),
 * Conv's attributes, and the string attribute activation ("Relu", or absent
 * for none). The ref and blas backends compute the convolution with their
 * own Conv, then add Z and apply the activation in the tensors' type (float32
 * or float64), in one pass over the output (d5__fused_create/forward below);
 * dnnl runs them as post-ops of its convolution (dnnl/conv.c). Inference only:
 * the optimisation passes run on inference graphs. */
#include "fusedconv.h"
#include "util.h"

#include <string.h>

extern const d5_op_desc d5__op_ref_Conv;

typedef struct fused {
    const d5_op_desc *conv_op; /* the backend's Conv */
    void *conv;                /* its state */
    d5__fusion f;
} fused;

d5_status d5__fusion_read(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5__fusion *f)
{
    const char *act = NULL;
    memset(f, 0, sizeof *f);
    d5_status s = d5_attrs_string(attrs, "activation", "", &act);
    if (s != D5_OK) return s;
    if (strcmp(act, "Relu") == 0)
        f->relu = 1;
    else if (act[0])
        return d5_error(D5_ERR_UNSUPPORTED,
                        "FusedConv: activation '%s' is not supported (Relu or none)", act);
    f->sum = d5__has_input(in, nin, 3);
    return D5_OK;
}

d5_status d5__fusion_check_z(const d5_tensor *in, int32_t nin, const d5_tensor_desc *y)
{
    if (!d5__has_input(in, nin, 3)) return D5_OK;
    const d5_tensor_desc *z = &in[3].desc;
    if (z->dtype == y->dtype && d5__same_shape(z, y)) return D5_OK;
    char zs[96], ys[96];
    d5__shape_str(z, zs, sizeof zs);
    d5__shape_str(y, ys, sizeof ys);
    return d5_error(D5_ERR_SHAPE, "FusedConv: Z is %s %s, the convolution's output is %s %s",
                    d5_dtype_name((d5_dtype)z->dtype), zs, d5_dtype_name((d5_dtype)y->dtype), ys);
}

void d5__fused_destroy(void *state)
{
    fused *f = state;
    if (!f) return;
    if (f->conv) f->conv_op->destroy(f->conv);
    d5_free(f);
}

d5_status d5__fused_create(const d5_op_desc *conv_op, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state)
{
    fused *f = d5_calloc(1, sizeof *f, "FusedConv");
    if (!f) return D5_ERR_NOMEM;
    f->conv_op = conv_op;
    d5_status s = d5__fusion_read(in, nin, attrs, &f->f);
    const d5_op_create_args conv = {.inputs = in,
                                    .ninputs = nin < 3 ? nin : 3,
                                    .outputs = out,
                                    .noutputs = nout,
                                    .attrs = attrs};
    if (s == D5_OK) s = conv_op->create(&conv, &f->conv);
    if (s == D5_OK && out[0].dtype != D5_F32 && out[0].dtype != D5_F64)
        s = d5_error(D5_ERR_UNSUPPORTED,
                     "FusedConv: X has data type %s, expected float32 or float64 (the graph "
                     "passes fuse float32 convolutions only)",
                     d5_dtype_name((d5_dtype)out[0].dtype));
    if (s == D5_OK) s = d5__fusion_check_z(in, nin, &out[0]);
    if (s != D5_OK) {
        d5__fused_destroy(f);
        return s;
    }
    *state = f;
    return D5_OK;
}

d5_status d5__fused_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    fused *f = state;
    d5_op_call conv = *call; /* X, W and B: Z is added here */
    if (conv.ninputs > 3) conv.ninputs = 3;
    d5_status s = f->conv_op->forward(f->conv, &conv);
    if (s != D5_OK) return s;
    int64_t n = d5_tensor_desc_numel(&out[0].desc);
    if (out[0].desc.dtype == D5_F64) {
        double *y = out[0].data;
        const double *z = f->f.sum ? in[3].data : NULL;
        for (int64_t i = 0; i < n; i++) {
            double v = z ? y[i] + z[i] : y[i];
            y[i] = f->f.relu && v < 0 ? 0 : v;
        }
    } else {
        float *y = out[0].data;
        const float *z = f->f.sum ? in[3].data : NULL;
        for (int64_t i = 0; i < n; i++) {
            float v = z ? y[i] + z[i] : y[i];
            y[i] = f->f.relu && v < 0 ? 0 : v;
        }
    }
    return D5_OK;
}

void d5__fused_cost(void *state, double *flops, double *bytes)
{
    const fused *f = state;
    f->conv_op->cost(f->conv, flops, bytes);
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    return d5__fused_create(&d5__op_ref_Conv, args->inputs, args->ninputs, args->attrs,
                            args->outputs, args->noutputs, state);
}

/* clang-format off */
const d5_op_desc d5__op_ref_FusedConv = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "FusedConv", .backend = "ref",
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = d5__fused_forward, .destroy = d5__fused_destroy, .cost = d5__fused_cost};
/* clang-format on */
