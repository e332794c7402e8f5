/* MedianPool: a custom operator in C, the example of Deep500's paper. Each
 * (N, C) plane of X (N, C, H, W) is split into k x k windows (stride k, no
 * padding; k from -D KERNEL=k at compile time, default 2) and each output
 * element is the median of its window (the lower middle one for an even count).
 * Backward sends each output gradient to the element that was the median.
 *
 *     d5 compile-op examples/ops/median_pool.c --name MedianPool -D KERNEL=3
 *     d5 test-operator MedianPool --backend custom:LIB:MedianPool --sizes shape=8x16x64x64
 */
#include <d5/operator.h>

#include <stdlib.h>
#include <string.h>

#ifndef KERNEL
#define KERNEL 2
#endif

typedef struct pool {
    int64_t n, c, h, w, oh, ow;
} pool;

static d5_status mp_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->dtype != D5_F32 || x->ndim != 4)
        return d5_error(D5_ERR_SHAPE, "MedianPool: X must be a 4-d float32 tensor (N, C, H, W)");
    if (x->shape[2] < KERNEL || x->shape[3] < KERNEL)
        return d5_error(D5_ERR_SHAPE, "MedianPool: X is smaller than the %dx%d window", KERNEL,
                        KERNEL);
    pool *p = malloc(sizeof *p);
    if (!p) return d5_error(D5_ERR_NOMEM, "MedianPool: out of memory");
    *p = (pool){x->shape[0], x->shape[1],          x->shape[2],
                x->shape[3], x->shape[2] / KERNEL, x->shape[3] / KERNEL};
    out[0] = *x;
    out[0].shape[2] = p->oh;
    out[0].shape[3] = p->ow;
    *state = p;
    return D5_OK;
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Flat index (within the plane) of the median of window (i, j). */
static int64_t median_at(const pool *p, const float *plane, int64_t i, int64_t j)
{
    float v[KERNEL * KERNEL];
    for (int a = 0; a < KERNEL; a++)
        for (int b = 0; b < KERNEL; b++)
            v[a * KERNEL + b] = plane[(i * KERNEL + a) * p->w + j * KERNEL + b];
    float sorted[KERNEL * KERNEL];
    memcpy(sorted, v, sizeof v);
    qsort(sorted, KERNEL * KERNEL, sizeof(float), cmp);
    float m = sorted[(KERNEL * KERNEL - 1) / 2];
    for (int a = 0; a < KERNEL; a++)
        for (int b = 0; b < KERNEL; b++)
            if (v[a * KERNEL + b] == m) return (i * KERNEL + a) * p->w + j * KERNEL + b;
    return 0;
}

static d5_status mp_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const pool *p = state;
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t pl = 0; pl < p->n * p->c; pl++)
        for (int64_t i = 0; i < p->oh; i++)
            for (int64_t j = 0; j < p->ow; j++) {
                const float *plane = x + pl * p->h * p->w;
                y[(pl * p->oh + i) * p->ow + j] = plane[median_at(p, plane, i, j)];
            }
    return D5_OK;
}

static d5_status mp_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    const pool *p = state;
    if (!gin[0].data) return D5_OK;
    const float *x = in[0].data, *dy = gout[0].data;
    float *dx = gin[0].data;
    memset(dx, 0, (size_t)(p->n * p->c * p->h * p->w) * sizeof *dx);
    for (int64_t pl = 0; pl < p->n * p->c; pl++)
        for (int64_t i = 0; i < p->oh; i++)
            for (int64_t j = 0; j < p->ow; j++) {
                const float *plane = x + pl * p->h * p->w;
                dx[pl * p->h * p->w + median_at(p, plane, i, j)] +=
                    dy[(pl * p->oh + i) * p->ow + j];
            }
    return D5_OK;
}

static void mp_destroy(void *state)
{
    free(state);
}

/* clang-format off */
static const d5_op_desc median_pool = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "MedianPool",
    .backend = "custom", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = mp_create, .forward = mp_forward, .backward = mp_backward, .destroy = mp_destroy};
/* clang-format on */

D5_OPERATOR_EXPORT(&median_pool)
