/* Helpers of the tests of the dnnl backend in lower precisions. */
#include "lowp_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

TestSuite(dnnl_lowp, .timeout = D5_TIMEOUT(120));

void need_bf16(d5_precision_class *cls, char *text, size_t size)
{
    cr_assert_eq(d5_dnnl_precision_support("bf16", cls, text, size), D5_OK);
    if (*cls == D5_PRECISION_UNSUPPORTED) cr_skip_test("%s", text);
}

void need_bf16_tensors(void)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    need_bf16(&cls, text, sizeof text);
}

uint16_t bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even (finite values) */
    return (uint16_t)(u >> 16);
}

float f32_of_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Deterministic values in [-1, 1]. */
float uniform(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32767.5f - 1.0f;
}

/* A tensor of `dtype` (F32 or BF16) with random values; `vals` gets them as
 * float32 (bfloat16-rounded for BF16, and also when `round` is set). */
d5_tensor random_tensor(int32_t dtype, int32_t nd, const int64_t *shape, uint32_t seed, int round,
                        float **vals)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make((d5_dtype)dtype, nd, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    int64_t n = d5_tensor_desc_numel(&d);
    *vals = malloc((size_t)n * sizeof **vals);
    for (int64_t i = 0; i < n; i++) {
        float v = uniform(&seed);
        if (dtype == D5_BF16 || round) v = f32_of_bf16(bf16_of(v));
        (*vals)[i] = v;
        if (dtype == D5_BF16)
            ((uint16_t *)t.data)[i] = bf16_of(v);
        else
            ((float *)t.data)[i] = v;
    }
    return t;
}

float value_at(const d5_tensor *t, int64_t i)
{
    return t->desc.dtype == D5_BF16 ? f32_of_bf16(((const uint16_t *)t->data)[i])
                                    : ((const float *)t->data)[i];
}

ref_out ref_alloc(int64_t n)
{
    ref_out r = {n, calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
    return r;
}

void ref_free(ref_out *r)
{
    free(r->y);
    free(r->tol);
}

/* tol_i = out_rel |y_i| + sum_rel S_i, where tol holds S_i on entry. */
void ref_bound(ref_out *r, double out_rel, double sum_rel)
{
    for (int64_t i = 0; i < r->n; i++) r->tol[i] = out_rel * fabs(r->y[i]) + sum_rel * r->tol[i];
}

/* Every element within its bound; returns the largest |got - want|. */
double expect_close(const d5_tensor *got, const ref_out *r, const char *what)
{
    cr_assert_eq(d5_tensor_desc_numel(&got->desc), r->n, "%s: size", what);
    double worst = 0;
    for (int64_t i = 0; i < r->n; i++) {
        double e = fabs((double)value_at(got, i) - r->y[i]);
        cr_assert(e <= r->tol[i] + 1e-30, "%s[%lld]: got %.8g want %.8g (bound %.3g)", what,
                  (long long)i, (double)value_at(got, i), r->y[i], r->tol[i]);
        if (e > worst) worst = e;
    }
    return worst;
}

void ref_transpose(ref_out *r, int64_t rows, int64_t cols)
{
    ref_out t = ref_alloc(rows * cols);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            t.y[j * rows + i] = r->y[i * cols + j];
            t.tol[j * rows + i] = r->tol[i * cols + j];
        }
    ref_free(r);
    *r = t;
}

d5_op *lowp_create(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs)
{
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find(name, "dnnl", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, nin, attrs, 1, &op), D5_OK, "%s: %s", name,
                 d5_last_error());
    return op;
}

void lowp_forward(d5_op *op, const d5_tensor *in, d5_dtype dtype, d5_tensor *y)
{
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), y), D5_OK);
    cr_assert_eq(y->desc.dtype, dtype);
    cr_assert_eq(d5_op_forward(op, in, y), D5_OK, "%s", d5_last_error());
}

void lowp_backward(d5_op *op, const d5_tensor *dy, const d5_tensor *in, int32_t nin,
                   const d5_tensor *y, d5_tensor *gin)
{
    for (int32_t i = 0; i < nin; i++) cr_assert_eq(d5_tensor_alloc(&in[i].desc, &gin[i]), D5_OK);
    cr_assert_eq(d5_op_backward(op, dy, in, y, gin), D5_OK, "%s", d5_last_error());
}

void lowp_free_run(d5_op *op, d5_tensor *in, d5_tensor *gin, int32_t nin, d5_tensor *y,
                   d5_tensor *dy)
{
    d5_op_free(op);
    for (int32_t i = 0; i < nin; i++) {
        d5_tensor_free(&in[i]);
        d5_tensor_free(&gin[i]);
    }
    d5_tensor_free(y);
    d5_tensor_free(dy);
}
