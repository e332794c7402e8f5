/* Compute precisions (d5/precision.h): the class names, and d5_op_impl_get,
 * which reads what an operator instance runs where its descriptor says it
 * tells (D5_OP_REPORTS_IMPL). What a backend says of a precision on this
 * machine is in its folder. */
#include "d5/precision.h"

#include <string.h>

void *d5__op_state(const d5_op *op); /* abi/instance.c */

const char *d5_precision_class_name(int cls)
{
    switch (cls) {
    case D5_PRECISION_UNSUPPORTED: return "unsupported";
    case D5_PRECISION_EMULATED: return "emulated";
    case D5_PRECISION_NATIVE: return "native";
    default: return "unknown";
    }
}

void d5_op_impl_get(const d5_op *op, d5_op_impl *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!op) return;
    const d5_op_desc *desc = d5_op_desc_of(op);
    const void *state = d5__op_state(op);
    /* The first member of the state of an operator with the flag. */
    if (desc && state && (desc->flags & D5_OP_REPORTS_IMPL)) memcpy(out, state, sizeof *out);
}
