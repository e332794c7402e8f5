/* FusedConv (ref/fusedconv.c) on the blas backend: its Conv, then Z and the
 * activation in one pass over the output. */
#include "../ref/fusedconv.h"

extern const d5_op_desc d5__op_blas_Conv;

static d5_status create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                        d5_tensor_desc *out, int32_t nout, void **state)
{
    return d5__fused_create(&d5__op_blas_Conv, in, nin, attrs, out, nout, state);
}

const d5_op_desc d5__op_blas_FusedConv = {
    D5_OP_ABI_VERSION, 0,    "FusedConv",       "blas",        2, 4, 1, 1, create,
    d5__fused_forward, NULL, d5__fused_destroy, d5__fused_cost};
