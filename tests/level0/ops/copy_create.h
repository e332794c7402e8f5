/* The create function shared by the custom operator libraries in this folder:
 * one output shaped as the first input, no state. Included by each library's
 * source (d5 compile-op hashes only the sources it is given, so a change here
 * takes --force or a fresh cache to reach a cached library). */
#ifndef D5_TEST_OPS_COPY_CREATE_H
#define D5_TEST_OPS_COPY_CREATE_H

#include <d5/operator.h>

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    out[0] = in[0].desc;
    *state = NULL;
    return D5_OK;
}

#endif
