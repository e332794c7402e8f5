/* TransposeMatMul (d5's operator of the graph passes, ../ref/transposematmul.c)
 * on the cuda backend, forward: each operand with a perm is transposed by the
 * strided-copy kernel into device scratch memory owned by the instance, the
 * product is the cuda MatMul (cuBLAS), alpha scales it in place and C is
 * added by the broadcasting Add kernel. So the fused nodes of an optimised
 * transformer graph stay on the device. */
#include "../ref/transposematmul.h"
#include "cuda_util.h"

#include <string.h>

extern const d5_op_desc d5__op_cuda_Transpose, d5__op_cuda_MatMul, d5__op_cuda_Add, d5__op_cuda_Mul;

static const char *const OP = "TransposeMatMul";

typedef struct ctmm {
    d5_op *t[2]; /* NULL: operand k as it is */
    d5_op *mm, *add, *scale;
    d5_tensor scratch[2], product, alpha; /* device memory */
} ctmm;

static void device_free(d5_tensor *t)
{
    d5__cuda_free(t->data);
    t->data = NULL;
}

static void destroy(void *state)
{
    ctmm *c = state;
    if (!c) return;
    for (int k = 0; k < 2; k++) {
        d5_op_free(c->t[k]);
        device_free(&c->scratch[k]);
    }
    d5_op_free(c->mm);
    d5_op_free(c->add);
    d5_op_free(c->scale);
    device_free(&c->product);
    device_free(&c->alpha);
    d5_free(c);
}

/* A device tensor of descriptor d. */
static d5_status device_tensor(const d5_tensor_desc *d, d5_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->desc = *d;
    t->device = D5_DEVICE_CUDA;
    return d5__cuda_malloc(&t->data, (size_t)d5_tensor_desc_numel(d) * sizeof(float), OP,
                           "scratch");
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_status s = d5__cuda_inputs_f32(OP, in, nin, 2, 1);
    int bias = nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID;
    double alpha = 1.0;
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1.0, &alpha);
    if (s != D5_OK) return s;
    ctmm *c = d5_calloc(1, sizeof *c, "TransposeMatMul (cuda)");
    if (!c) return D5_ERR_NOMEM;
    d5_tensor_desc mm_in[2] = {in[0].desc, in[1].desc};
    for (int32_t k = 0; k < 2 && s == D5_OK; k++) {
        const int64_t *perm = NULL;
        s = d5__tmm_perm(attrs, k, in[k].desc.ndim, &perm);
        if (s != D5_OK || !perm) continue;
        d5_attr a = {.name = "perm", .type = D5_ATTR_INTS, .ints = perm, .count = in[k].desc.ndim};
        d5_attrs pa = {&a, 1};
        s = d5_op_create_desc(&d5__op_cuda_Transpose, &in[k].desc, 1, &pa, 1, &c->t[k]);
        if (s == D5_OK) mm_in[k] = *d5_op_output_desc(c->t[k], 0);
        if (s == D5_OK) s = device_tensor(&mm_in[k], &c->scratch[k]);
    }
    if (s == D5_OK) s = d5_op_create_desc(&d5__op_cuda_MatMul, mm_in, 2, attrs, 1, &c->mm);
    const d5_tensor_desc *y = s == D5_OK ? d5_op_output_desc(c->mm, 0) : NULL;
    if (s == D5_OK && alpha != 1.0) {
        d5_tensor_desc scalar, sin[2];
        s = d5_tensor_desc_make(D5_F32, 0, NULL, &scalar);
        sin[0] = *y, sin[1] = scalar;
        if (s == D5_OK) s = d5_op_create_desc(&d5__op_cuda_Mul, sin, 2, NULL, 1, &c->scale);
        if (s == D5_OK) s = device_tensor(&scalar, &c->alpha);
        float a32 = (float)alpha;
        if (s == D5_OK)
            s = d5__cuda_check(cudaMemcpy(c->alpha.data, &a32, sizeof a32, cudaMemcpyHostToDevice),
                               OP, "cudaMemcpy of alpha");
    }
    if (s == D5_OK && bias) {
        d5_tensor_desc ain[2] = {*y, in[2].desc};
        s = d5_op_create_desc(&d5__op_cuda_Add, ain, 2, NULL, 1, &c->add);
        const d5_tensor_desc *sum = s == D5_OK ? d5_op_output_desc(c->add, 0) : NULL;
        if (s == D5_OK && (sum->ndim != y->ndim ||
                           memcmp(sum->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim) != 0))
            s = d5_error(D5_ERR_SHAPE, "%s (cuda): C does not broadcast into the product", OP);
        if (s == D5_OK) s = device_tensor(y, &c->product);
    }
    if (s == D5_OK) args->outputs[0] = *y;
    return d5__cuda_created(s, c, destroy, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    ctmm *c = state;
    d5_status s = d5__cuda_call_on_device(OP, call);
    d5_tensor mm_in[2] = {in[0], in[1]};
    for (int k = 0; k < 2 && s == D5_OK; k++) {
        if (!c->t[k]) continue;
        s = d5_op_forward(c->t[k], &in[k], &c->scratch[k]);
        mm_in[k] = c->scratch[k];
    }
    d5_tensor *y = c->add ? &c->product : out;
    if (s == D5_OK) s = d5_op_forward(c->mm, mm_in, y);
    if (s == D5_OK && c->scale) {
        d5_tensor sin[2] = {*y, c->alpha};
        s = d5_op_forward(c->scale, sin, y);
    }
    if (s == D5_OK && c->add) {
        d5_tensor ain[2] = {c->product, in[2]};
        s = d5_op_forward(c->add, ain, out);
    }
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    d5_op_cost(((const ctmm *)state)->mm, flops, bytes);
}

/* clang-format off */
const d5_op_desc d5__op_cuda_TransposeMatMul = {
    D5_CUDA_OP("TransposeMatMul", 0, 2, 3, 1, 1), .create = create, .forward = forward,
    .destroy = destroy, .cost = cost};
/* clang-format on */
