/* A library exported by this d5's entry point whose operator table declares
 * ABI version 99: the loader must refuse it on that number alone. */
#include <d5/operator.h>

static d5_status future_create(const d5_op_create_args *args, void **state)
{
    (void)args;
    (void)state;
    return D5_OK;
}

static d5_status future_forward(void *state, const d5_op_call *call)
{
    (void)call;
    (void)state;
    return D5_OK;
}

/* clang-format off */
static const d5_op_desc future = {
    .abi_version = 99, .flags = 0, .name = "Future", .backend = "custom", .min_inputs = 1,
    .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = future_create,
    .forward = future_forward};
/* clang-format on */

D5_OPERATOR_EXPORT(&future)
