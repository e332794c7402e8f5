/* Helpers of the dnnl backend's C kernels (kernels.h). */
#include "kernels.h"

d5_status d5__dnnl_ref_shapes(const d5_op_desc *ref, const d5_op_create_args *args)
{
    void *state = NULL;
    d5_status s = ref->create(args, &state);
    if (s == D5_OK && ref->destroy) ref->destroy(state);
    return s;
}

d5_status d5__dnnl_need_f32(const char *op, const d5_tensor *in, int32_t i)
{
    if (in[i].desc.dtype == D5_F32) return D5_OK;
    return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): input %d is %s; float32 only", op, (int)i,
                    d5_dtype_name((d5_dtype)in[i].desc.dtype));
}

d5_status d5__dnnl_f32_shapes(const d5_op_desc *ref, const char *op, const d5_op_create_args *args)
{
    d5_status s = d5__dnnl_need_f32(op, args->inputs, 0);
    return s == D5_OK ? d5__dnnl_ref_shapes(ref, args) : s;
}

float *d5__dnnl_grad_begin(const d5_op_call *call, int64_t n)
{
    float *dx = call->grad_inputs[0].data;
    if (dx && !call->grad_outputs[0].data) {
        memset(dx, 0, (size_t)n * sizeof *dx);
        return NULL;
    }
    return dx;
}
