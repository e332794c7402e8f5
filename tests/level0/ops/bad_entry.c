/* A library whose entry point promises three operators and returns no list. */
#include <d5/operator.h>

#include <stddef.h>

__attribute__((visibility("default"))) const d5_op_desc *const *
d5_operator_entry(int32_t *count, uint32_t *abi_version)
{
    *count = 3;
    *abi_version = D5_OP_ABI_VERSION;
    return NULL;
}
