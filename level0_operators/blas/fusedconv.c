/* FusedConv (ref/fusedconv.c) on the blas backend: its Conv, then Z and the
 * activation in one pass over the output. */
#include "../ref/fusedconv.h"

extern const d5_op_desc d5__op_blas_Conv;

static d5_status create(const d5_op_create_args *args, void **state)
{
    return d5__fused_create(&d5__op_blas_Conv, args->inputs, args->ninputs, args->attrs,
                            args->outputs, args->noutputs, state);
}

/* clang-format off */
const d5_op_desc d5__op_blas_FusedConv = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "FusedConv", .backend = "blas",
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = d5__fused_forward, .destroy = d5__fused_destroy, .cost = d5__fused_cost};
/* clang-format on */
