/* Helpers of the tests of ref/ops_more.def and of the graph operators. */
#include "more_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* A tensor of any data type holding `values` (NULL: zeros), converted with C casts. */
d5_tensor tmake(d5_dtype dt, int32_t ndim, const int64_t *shape, const double *values)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; values && i < d5_tensor_desc_numel(&d); i++) {
        double v = values[i];
        switch (dt) {
        case D5_F32: ((float *)t.data)[i] = (float)v; break;
        case D5_F64: ((double *)t.data)[i] = v; break;
        case D5_I64: ((int64_t *)t.data)[i] = (int64_t)v; break;
        case D5_I32: ((int32_t *)t.data)[i] = (int32_t)v; break;
        case D5_I16: ((int16_t *)t.data)[i] = (int16_t)v; break;
        case D5_I8: ((int8_t *)t.data)[i] = (int8_t)v; break;
        case D5_U8: ((uint8_t *)t.data)[i] = (uint8_t)v; break;
        case D5_BOOL: ((uint8_t *)t.data)[i] = v != 0; break;
        default: /* the others, the narrow types included: d5's conversion */
            cr_assert_eq(
                d5_convert(&v, D5_F64, (char *)t.data + (size_t)i * d5_dtype_size(dt), dt, 1),
                D5_OK, "tmake: data type %s", d5_dtype_name(dt));
        }
    }
    return t;
}
d5_tensor f64(int32_t ndim, const int64_t *shape, const double *values)
{
    return tmake(D5_F64, ndim, shape, values);
}

double element(const d5_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->desc.dtype) {
    case D5_F32: return ((const float *)p)[i];
    case D5_F64: return ((const double *)p)[i];
    case D5_I64: return (double)((const int64_t *)p)[i];
    case D5_I32: return ((const int32_t *)p)[i];
    case D5_I16: return ((const int16_t *)p)[i];
    case D5_I8: return ((const int8_t *)p)[i];
    case D5_U8:
    case D5_BOOL: return ((const uint8_t *)p)[i];
    default: { /* the others, the narrow types included: d5's conversion */
        double v = 0;
        size_t size = d5_dtype_size((d5_dtype)t->desc.dtype);
        cr_assert_eq(
            d5_convert((const char *)p + (size_t)i * size, (d5_dtype)t->desc.dtype, &v, D5_F64, 1),
            D5_OK);
        return v;
    }
    }
}

/* Asserts the data type, shape and values of a tensor: |got - want| <= abs_tol +
 * rel_tol * |want|, equal infinities, or both NaN. */
void expect_tensor_within(const d5_tensor *y, d5_dtype dt, int32_t ndim, const int64_t *shape,
                          const double *want, double abs_tol, double rel_tol, const char *what)
{
    cr_assert_eq(y->desc.dtype, dt, "%s: data type %s, want %s", what, d5_dtype_name(y->desc.dtype),
                 d5_dtype_name(dt));
    cr_assert_eq(y->desc.ndim, ndim, "%s: rank %d, want %d", what, (int)y->desc.ndim, (int)ndim);
    for (int32_t i = 0; i < ndim; i++)
        cr_assert_eq(y->desc.shape[i], shape[i], "%s: dim %d is %lld, want %lld", what, (int)i,
                     (long long)y->desc.shape[i], (long long)shape[i]);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&y->desc); i++) {
        double g = element(y, i);
        cr_assert(g == want[i] || fabs(g - want[i]) <= abs_tol + rel_tol * fabs(want[i]) ||
                      (isnan(g) && isnan(want[i])),
                  "%s: element %lld: got %.17g, want %.17g", what, (long long)i, g, want[i]);
    }
}

void expect_tensor(const d5_tensor *y, d5_dtype dt, int32_t ndim, const int64_t *shape,
                   const double *want, double tol, const char *what)
{
    expect_tensor_within(y, dt, ndim, shape, want, tol, tol, what);
}

/* Runs a one-output operator, checks its output, frees the inputs and output. */
void check_within(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
                  int32_t ndim, const int64_t *shape, const double *want, double abs_tol,
                  double rel_tol)
{
    d5_tensor y;
    run_op(op, "ref", in, nin, attrs, &y, 1);
    expect_tensor_within(&y, dt, ndim, shape, want, abs_tol, rel_tol, op);
    d5_tensor_free(&y);
    op_free_all(in, nin);
}

void check(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
           int32_t ndim, const int64_t *shape, const double *want)
{
    double tol = dt == D5_F32 ? 1e-6 : 1e-12;
    check_within(op, in, nin, attrs, dt, ndim, shape, want, tol, tol);
}

void check_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                 d5_status status, const char *text)
{
    op_check_fails(op, in, nin, attrs, 1, status, text);
}

/* Creates `op` with every input given (data and all, float ones too: known at
 * create), runs forward, and when gout is not NULL backward into gin (one
 * tensor per input, allocated here; freed by the caller). Returns the status
 * of the first step that failed. */
d5_status run_known(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                    d5_tensor *y, const d5_tensor *gout, d5_tensor *gin)
{
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find(name, "ref", &desc), D5_OK);
    d5_status s = d5_op_create(desc, in, nin, attrs, 1, &op);
    if (s != D5_OK) return s;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), y), D5_OK);
    s = d5_op_forward(op, in, y);
    for (int32_t i = 0; s == D5_OK && gout && i < nin; i++)
        cr_assert_eq(d5_tensor_alloc(&in[i].desc, &gin[i]), D5_OK);
    if (s == D5_OK && gout) s = d5_op_backward(op, gout, in, y, gin);
    d5_op_free(op);
    return s;
}

/* Creates `op` with no input known at create and returns the status. */
d5_status create_unknown(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(op, "ref", &desc), D5_OK);
    d5_tensor_desc d[8];
    for (int32_t i = 0; i < nin; i++) d[i] = in[i].desc;
    d5_op *o = NULL;
    d5_status s = d5_op_create_desc(desc, d, nin, attrs, 1, &o);
    d5_op_free(o);
    return s;
}
