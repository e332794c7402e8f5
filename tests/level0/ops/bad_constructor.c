/* An operator library whose constructor misbehaves as $D5_TEST_CONSTRUCTOR
 * says: "crash" dereferences NULL, "exit" ends the process, "hang" never
 * returns. Loading it must not take d5 down. */
#include "copy_create.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void misbehave(void)
{
    const char *how = getenv("D5_TEST_CONSTRUCTOR");
    if (!how) return;
    if (strcmp(how, "crash") == 0) *(volatile int *)0 = 1;
    if (strcmp(how, "exit") == 0) _exit(7);
    if (strcmp(how, "hang") == 0)
        for (;;) pause();
}

static d5_status copy(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    (void)state;
    memcpy(out[0].data, in[0].data, (size_t)d5_tensor_desc_numel(&in[0].desc) * sizeof(float));
    return D5_OK;
}

/* clang-format off */
static const d5_op_desc copy_op = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "Copy", .backend = "custom",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = copy};
/* clang-format on */

D5_OPERATOR_EXPORT(&copy_op)
