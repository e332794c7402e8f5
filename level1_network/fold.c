/* Constant folding at create: nodes whose inputs are all known are evaluated
 * once with the ref backend and their outputs become constants, within a
 * budget of memory. */
#include "executor_internal.h"

#include <stdint.h>
#include <string.h>

/* Nodes evaluated at create when all their inputs are constant. Random
 * operators are never folded. */
static int foldable_op(const char *op_type)
{
    static const char *const never[] = {"Dropout",          "RandomNormal",      "RandomUniform",
                                        "RandomNormalLike", "RandomUniformLike", "Multinomial"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (strcmp(op_type, never[i]) == 0) return 0;
    return 1;
}

int d5__fold_candidate(const d5__node *node, int all_const)
{
    if (node->domain[0] || !foldable_op(node->op_type)) return 0;
    return all_const || strcmp(node->op_type, "Shape") == 0;
}

/* Constant folding keeps at most FOLD_BUDGET bytes of folded values per
 * executor: a node whose outputs would go beyond runs at every step instead,
 * so that a small model cannot make create allocate what its shapes claim
 * (a ConstantOfShape of 2^40 elements, say) before it is ever run. Outputs of
 * at most FOLD_SMALL bytes in all fold whatever is left and are not counted:
 * the values that shape-dependent operators read (Reshape's shape, Slice's
 * starts) are a few bytes and must be constants. */
#define FOLD_BUDGET ((size_t)256 << 20)
#define FOLD_SMALL  ((size_t)64 << 10)

/* The one byte that stands behind a non-constant input of Shape, whose
 * forward reads descriptors only. */
static uint8_t shape_stand_in;

/* The ref operator is created first: its outputs' sizes are weighed against
 * the budget before anything is allocated for them. */
d5_status d5__fold(d5_executor *ex, const d5__node *node, const d5_tensor *in,
                   const d5_attrs *attrs, int *folded)
{
    const d5_op_desc *desc = NULL;
    d5_op *op = NULL;
    d5_tensor out[16];
    memset(out, 0, sizeof out);
    *folded = 0;
    if (node->nout > 16) return d5_error(D5_ERR_UNSUPPORTED, "more than 16 outputs");
    if (d5_op_find(node->op_type, "ref", &desc) != D5_OK) return d5__unsupported(node);
    d5_status s = d5_op_create(desc, in, node->nin, attrs, node->nout, &op);
    const size_t left = FOLD_BUDGET - ex->folded_bytes;
    size_t total = 0; /* the outputs' bytes, SIZE_MAX where they overflow */
    for (int32_t k = 0; s == D5_OK && k < node->nout; k++) {
        size_t bytes;
        s = d5_tensor_desc_bytes(d5_op_output_desc(op, k), &bytes);
        if (s == D5_OK) total = bytes > SIZE_MAX - total ? SIZE_MAX : total + bytes;
    }
    if (s != D5_OK || (total > FOLD_SMALL && total > left)) {
        d5_op_free(op);
        return s == D5_OK ? s : d5__node_error(node, s);
    }
    if (total > FOLD_SMALL) ex->folded_bytes += total;
    for (int32_t k = 0; s == D5_OK && k < node->nout; k++) {
        int32_t v = d5__network_value(ex->net, node->outputs[k]);
        xval *x = &ex->vals[v];
        x->desc = *d5_op_output_desc(op, k);
        x->known = 1;
        s = d5_tensor_desc_bytes(&x->desc, &x->bytes);
        if (s == D5_OK) s = d5_tensor_alloc(&x->desc, &out[k]);
        if (s == D5_OK) {
            x->owned = x->data = out[k].data;
            x->kind = XV_CONST;
        }
    }
    /* Only Shape folds with an input that has no data yet: the operator
     * contract wants memory behind it, which Shape never reads. */
    d5_tensor *filled = NULL;
    if (s == D5_OK && node->nin > 0 &&
        !(filled = d5_calloc((size_t)node->nin, sizeof *filled, "folded inputs")))
        s = D5_ERR_NOMEM;
    for (int32_t k = 0; s == D5_OK && k < node->nin; k++) {
        filled[k] = in[k];
        if (in[k].desc.dtype != D5_DTYPE_INVALID && !in[k].data) filled[k].data = &shape_stand_in;
    }
    if (s == D5_OK) s = d5_op_forward(op, filled, out);
    /* Strings an operator made live in the operator: they are copied out
     * before it goes. */
    for (int32_t k = 0; s == D5_OK && k < node->nout; k++) {
        if (out[k].desc.dtype != D5_STRING) continue;
        xval *x = &ex->vals[d5__network_value(ex->net, node->outputs[k])];
        d5_tensor copy;
        if ((s = d5_tensor_clone(&out[k], &copy)) != D5_OK) break;
        d5_free(x->owned);
        x->owned = x->data = copy.data;
    }
    d5_free(filled);
    d5_op_free(op);
    if (s == D5_OK) *folded = 1;
    return s == D5_OK ? s : d5__node_error(node, s);
}
