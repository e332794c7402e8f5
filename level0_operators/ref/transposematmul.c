/* TransposeMatMul (d5's own operator, written by the graph passes
 * fold-transpose-matmul, fuse-matmul-scale and fuse-matmul-bias): Y = alpha
 * MatMul(Transpose(A, perm_a), Transpose(B, perm_b)) + C with numpy's MatMul
 * semantics, each perm optional, the float attribute alpha 1 by default, the
 * optional C broadcast into the product as Add does. Here it is
 * the operators it replaces run one after the other through scratch tensors:
 * the ref backend's Transpose, MatMul and Add (any type they take), or
 * another backend's (d5__tmm_create). Inference only. */
#include "transposematmul.h"

#include <stdio.h>
#include <string.h>

/* 1 when two descriptors have the same type and shape. */
static int same_desc(const d5_tensor_desc *a, const d5_tensor_desc *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

static const char *const perm_names[2] = {"perm_a", "perm_b"};

typedef struct tmm {
    d5_op *t[2];     /* NULL: operand k is not transposed */
    d5_op *mm, *add; /* add: NULL without C */
    d5_tensor scratch[2], product;
    double flops, alpha;
} tmm;

d5_status d5__tmm_perm(const d5_attrs *attrs, int32_t k, int32_t ndim, const int64_t **perm)
{
    int64_t n = 0;
    d5_status s = d5_attrs_ints(attrs, perm_names[k], perm, &n);
    if (s != D5_OK || !*perm) return s;
    unsigned seen = 0;
    if (n != ndim)
        return d5_error(D5_ERR_INVALID, "TransposeMatMul: %s has %lld values for a %d-d operand",
                        perm_names[k], (long long)n, (int)ndim);
    for (int64_t j = 0; j < n; j++) {
        int64_t p = (*perm)[j];
        if (p < 0 || p >= ndim || (seen >> p) & 1u)
            return d5_error(D5_ERR_INVALID,
                            "TransposeMatMul: %s is not a permutation of 0..%d (%s[%lld] = %lld)",
                            perm_names[k], (int)ndim - 1, perm_names[k], (long long)j,
                            (long long)p);
        seen |= 1u << p;
    }
    return D5_OK;
}

void d5__tmm_destroy(void *state)
{
    tmm *t = state;
    if (!t) return;
    for (int k = 0; k < 2; k++) {
        d5_op_free(t->t[k]);
        d5_tensor_free(&t->scratch[k]);
    }
    d5_op_free(t->mm);
    d5_op_free(t->add);
    d5_tensor_free(&t->product);
    d5_free(t);
}

d5_status d5__tmm_create(const d5_op_desc *transpose, const d5_op_desc *matmul,
                         const d5_op_desc *add, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    if (nin < 2 || nin > 3)
        return d5_error(D5_ERR_INVALID, "TransposeMatMul: 2 or 3 inputs (A, B, C), not %d",
                        (int)nin);
    tmm *t = d5_calloc(1, sizeof *t, "TransposeMatMul");
    if (!t) return D5_ERR_NOMEM;
    d5_tensor mm_in[2];
    d5_status s = D5_OK;
    for (int32_t k = 0; k < 2 && s == D5_OK; k++) {
        const int64_t *perm = NULL;
        mm_in[k] = in[k];
        s = d5__tmm_perm(attrs, k, in[k].desc.ndim, &perm);
        if (s != D5_OK || !perm) continue;
        d5_attr a = {.name = "perm", .type = D5_ATTR_INTS, .ints = perm, .count = in[k].desc.ndim};
        d5_attrs pa = {&a, 1};
        s = d5_op_create(transpose, &in[k], 1, &pa, 1, &t->t[k]);
        if (s == D5_OK) s = d5_tensor_alloc(d5_op_output_desc(t->t[k], 0), &t->scratch[k]);
        if (s == D5_OK && in[k].data) /* a constant: transposed once, here */
            s = d5_op_forward(t->t[k], &in[k], &t->scratch[k]);
        if (s == D5_OK) {
            mm_in[k].desc = t->scratch[k].desc;
            mm_in[k].data = in[k].data ? t->scratch[k].data : NULL;
        }
    }
    if (s == D5_OK) s = d5_op_create(matmul, mm_in, 2, attrs, 1, &t->mm);
    if (s == D5_OK && nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID) {
        d5_tensor add_in[2] = {{.desc = *d5_op_output_desc(t->mm, 0)}, in[2]};
        s = d5_op_create(add, add_in, 2, NULL, 1, &t->add);
        if (s == D5_OK && !same_desc(d5_op_output_desc(t->add, 0), &add_in[0].desc))
            s = d5_error(D5_ERR_SHAPE, "TransposeMatMul: C does not broadcast into the product");
        if (s == D5_OK) s = d5_tensor_alloc(&add_in[0].desc, &t->product);
    }
    if (s != D5_OK) {
        d5__tmm_destroy(t);
        return s;
    }
    out[0] = *d5_op_output_desc(t->mm, 0);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1.0, &t->alpha);
    if (s == D5_OK && t->alpha != 1.0 && out[0].dtype != D5_F32 && out[0].dtype != D5_F64)
        s = d5_error(D5_ERR_UNSUPPORTED, "TransposeMatMul: alpha needs float32 or float64, not %s",
                     d5_dtype_name((d5_dtype)out[0].dtype));
    if (s != D5_OK) {
        d5__tmm_destroy(t);
        return s;
    }
    const d5_tensor_desc *a = &mm_in[0].desc;
    t->flops = 2.0 * (double)d5_tensor_desc_numel(&out[0]) * (double)a->shape[a->ndim - 1];
    *state = t;
    return D5_OK;
}

/* y *= alpha (float32 or float64). */
static void scale(d5_tensor *y, double alpha)
{
    int64_t n = d5_tensor_desc_numel(&y->desc);
    if (y->desc.dtype == D5_F64)
        for (int64_t i = 0; i < n; i++) ((double *)y->data)[i] *= alpha;
    else
        for (int64_t i = 0; i < n; i++) ((float *)y->data)[i] *= (float)alpha;
}

d5_status d5__tmm_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    tmm *t = state;
    d5_tensor mm_in[2] = {in[0], in[1]};
    d5_status s = D5_OK;
    for (int k = 0; k < 2 && s == D5_OK; k++) {
        if (!t->t[k]) continue;
        s = d5_op_forward(t->t[k], &in[k], &t->scratch[k]);
        mm_in[k] = t->scratch[k];
    }
    d5_tensor *y = t->add ? &t->product : out;
    if (s == D5_OK) s = d5_op_forward(t->mm, mm_in, y);
    if (s == D5_OK && t->alpha != 1.0) scale(y, t->alpha);
    d5_tensor add_in[2] = {t->product, t->add ? in[2] : t->product};
    if (s == D5_OK && t->add) s = d5_op_forward(t->add, add_in, out);
    return s;
}

void d5__tmm_cost(void *state, double *flops, double *bytes)
{
    const tmm *t = state;
    *flops = t->flops;
    *bytes = 0;
    for (int k = 0; k < 2; k++) {
        const d5_tensor_desc *d = d5_op_input_desc(t->mm, k);
        *bytes += (double)d5_tensor_desc_numel(d) * (double)d5_dtype_size((d5_dtype)d->dtype);
    }
    const d5_tensor_desc *y = d5_op_output_desc(t->mm, 0);
    *bytes += (double)d5_tensor_desc_numel(y) * (double)d5_dtype_size((d5_dtype)y->dtype);
}

extern const d5_op_desc d5__op_ref_Transpose, d5__op_ref_MatMul, d5__op_ref_Add;

static d5_status ref_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    return d5__tmm_create(&d5__op_ref_Transpose, &d5__op_ref_MatMul, &d5__op_ref_Add, in, nin,
                          attrs, out, state);
}

/* clang-format off */
const d5_op_desc d5__op_ref_TransposeMatMul = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "TransposeMatMul",
    .backend = "ref", .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .create = ref_create, .forward = d5__tmm_forward, .destroy = d5__tmm_destroy,
    .cost = d5__tmm_cost};
/* clang-format on */
