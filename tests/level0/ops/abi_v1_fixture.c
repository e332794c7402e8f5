/* A custom operator library as it was built against operator ABI 1, before
 * version 2 gave create, forward and backward one struct each: it declares
 * version 1's table itself (this d5's include/d5/operator.h has version 2's)
 * and exports it as D5_OPERATOR_EXPORT did then. The loader must refuse it
 * with a status that says how to rebuild it, without calling its functions. */
#include <d5/core.h>

/* Operator ABI 1's table, field for field. */
typedef struct v1_op_desc {
    uint32_t abi_version;
    uint32_t flags;
    const char *name;
    const char *backend;
    int32_t min_inputs, max_inputs, min_outputs, max_outputs;
    d5_status (*create)(const d5_tensor *inputs, int32_t ninputs, const void *attrs,
                        d5_tensor_desc *outputs, int32_t noutputs, void **state);
    d5_status (*forward)(void *state, const d5_tensor *inputs, int32_t ninputs, d5_tensor *outputs,
                         int32_t noutputs);
    d5_status (*backward)(void *state, const d5_tensor *grad_outputs, int32_t noutputs,
                          const d5_tensor *inputs, int32_t ninputs, const d5_tensor *outputs,
                          d5_tensor *grad_inputs);
    void (*destroy)(void *state);
    void (*cost)(void *state, double *flops, double *bytes);
} v1_op_desc;

static d5_status copy_create(const d5_tensor *inputs, int32_t ninputs, const void *attrs,
                             d5_tensor_desc *outputs, int32_t noutputs, void **state)
{
    (void)attrs, (void)state;
    if (ninputs != 1 || noutputs != 1) return D5_ERR_INVALID;
    outputs[0] = inputs[0].desc;
    return D5_OK;
}

static d5_status copy_forward(void *state, const d5_tensor *inputs, int32_t ninputs,
                              d5_tensor *outputs, int32_t noutputs)
{
    (void)state;
    if (ninputs != 1 || noutputs != 1) return D5_ERR_INVALID;
    size_t bytes = 0;
    d5_status s = d5_tensor_desc_bytes(&inputs[0].desc, &bytes);
    for (size_t i = 0; s == D5_OK && i < bytes; i++)
        ((unsigned char *)outputs[0].data)[i] = ((const unsigned char *)inputs[0].data)[i];
    return s;
}

/* clang-format off */
static const v1_op_desc copy_op = {
    .abi_version = 1, .name = "CopyV1", .backend = "custom", .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1, .create = copy_create, .forward = copy_forward};
/* clang-format on */

/* What D5_OPERATOR_EXPORT(&copy_op) expanded to under ABI 1. */
__attribute__((visibility("default"))) const v1_op_desc *const *
d5_operator_entry(int32_t *count, uint32_t *abi_version);
__attribute__((visibility("default"))) const v1_op_desc *const *
d5_operator_entry(int32_t *count, uint32_t *abi_version)
{
    static const v1_op_desc *const ops[] = {&copy_op};
    *count = 1;
    *abi_version = 1;
    return ops;
}
